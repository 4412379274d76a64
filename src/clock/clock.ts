/**
 * Time for everything in quorumlock. Lock validity is measured on a monotonic clock, never the
 * wall clock: an NTP step or an operator changing the date must not stretch or shrink a lock.
 * Tests and the simulator inject a ManualClock to drive time by hand.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences between two readings mean anything. */
  now(): number;
  /** Resolves after `ms` on this clock; rejects with `signal.reason` if the signal aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Milliseconds since the Unix epoch, comparable across processes. Used only to order waiters
   * (their tickets), never for validity: a wrong wall clock makes waiting less fair, not unsafe.
   */
  epochMs(): number;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Negative and NaN sleeps are no sleep, on every clock alike. */
function sleepMs(ms: number): number {
  return ms > 0 ? ms : 0;
}

/** performance.now(): monotonic, sub-millisecond, unaffected by wall-clock changes. */
export const systemClock: Clock = {
  now: () => performance.now(),
  epochMs: () => performance.timeOrigin + performance.now(),
  sleep(ms, signal) {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(abortReason(signal!));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, sleepMs(ms));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  },
};

interface Sleeper {
  wakeAt: number;
  resolve(): void;
}

/** A clock that moves only when told to. Sleepers wake in order as advance() passes their time. */
export class ManualClock implements Clock {
  #now: number;
  #sleepers: Sleeper[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** The manual time, read as ms since the epoch. */
  epochMs(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const sleeper: Sleeper = {
        wakeAt: this.#now + sleepMs(ms),
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        this.#sleepers = this.#sleepers.filter((other) => other !== sleeper);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#sleepers.push(sleeper);
    });
  }

  /** Moves time forward by `ms` and wakes every sleeper whose time has come. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance(ms): ms must be >= 0, got ${ms}`);
    this.#now += ms;
    const due = this.#sleepers.filter((sleeper) => sleeper.wakeAt <= this.#now).sort((a, b) => a.wakeAt - b.wakeAt);
    this.#sleepers = this.#sleepers.filter((sleeper) => sleeper.wakeAt > this.#now);
    for (const sleeper of due) sleeper.resolve();
  }

  /** How many sleep() calls are waiting; lets a test know the code under test reached a sleep. */
  get sleepers(): number {
    return this.#sleepers.length;
  }
}
