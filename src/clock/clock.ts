/**
 * Time for everything in quorumlock. Lock validity is measured on a monotonic clock, never the
 * wall clock: an NTP step or an operator changing the date must not stretch or shrink a lock.
 * Tests and the simulator inject a ManualClock to drive time by hand. At the end, the timing
 * model on that clock: the drift allowance, the validity, the deadline.
 */
import { performance } from 'node:perf_hooks';
import { argumentError } from '../errors.js';
import { onAbort } from './abort.js';

/**
 * Where quorumlock reads time and sets timers: the `clock` option. `systemClock` by default;
 * a ManualClock (or your own) in tests and simulations, so that lock validity, retries and
 * timeouts can be driven by hand and a test never waits on real time to see an expiry.
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
  /** Calls `callback` after `ms` on this clock (the round deadlines use it); returns a handle for clearTimer. */
  setTimer(callback: () => void, ms: number): unknown;
  /** Cancels a timer of setTimer (its handle); nothing for one that fired or was cleared. */
  clearTimer(handle: unknown): void;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Negative and NaN sleeps are no sleep, on every clock alike. */
function sleepMs(ms: number): number {
  return ms > 0 ? ms : 0;
}

/** Clock.sleep on `clock`'s timers: both clocks sleep this way. */
function sleepOn(clock: Pick<Clock, 'setTimer' | 'clearTimer'>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise((resolve, reject) => {
    const timer = clock.setTimer(() => {
      stop?.();
      resolve();
    }, ms);
    const stop =
      signal &&
      onAbort(signal, () => {
        clock.clearTimer(timer);
        reject(abortReason(signal));
      });
  });
}

/**
 * performance.now(): monotonic, sub-millisecond, unaffected by wall-clock changes. Imported, not
 * the global: Node's global `performance` is a getter, run on every read (a hot path reads the
 * clock several times per call).
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  epochMs: () => performance.timeOrigin + performance.now(),
  setTimer: (callback, ms) => setTimeout(callback, sleepMs(ms)),
  clearTimer: (handle) => clearTimeout(handle as NodeJS.Timeout),
  sleep(ms, signal) {
    return sleepOn(systemClock, ms, signal);
  },
};

interface Timer {
  at: number;
  /** Order of creation: timers due at the same time fire in the order they were set. */
  seq: number;
  fire(): void;
}

/**
 * A clock that moves only when told to. Timers and sleepers fire in time order as advance()
 * passes their time, each seeing now() at its own due time: a deterministic event loop for tests
 * and simulations.
 */
export class ManualClock implements Clock {
  #now: number;
  #timers: Timer[] = [];
  #seq = 0;

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

  setTimer(callback: () => void, ms: number): unknown {
    const timer: Timer = { at: this.#now + sleepMs(ms), seq: this.#seq++, fire: callback };
    this.#timers.push(timer);
    return timer;
  }

  /** Cancels a timer of setTimer: it will not fire at any later advance(). */
  clearTimer(handle: unknown): void {
    this.#timers = this.#timers.filter((timer) => timer !== handle);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Moves time forward by `ms`, firing every timer due on the way, each at its own time. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw argumentError(RangeError, 'ms', `must be >= 0 (ManualClock.advance), got ${ms}`);
    const end = this.#now + ms;
    for (let next = this.#nextDue(end); next; next = this.#nextDue(end)) {
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.#now = Math.max(this.#now, next.at);
      next.fire();
    }
    this.#now = end;
  }

  /** When the next timer is due, or undefined when none is set: lets a simulation jump there. */
  nextTimerAt(): number | undefined {
    return this.#nextDue(Infinity)?.at;
  }

  /** How many timers and sleeps are pending; lets a test know the code under test reached a sleep. */
  get sleepers(): number {
    return this.#timers.length;
  }

  #nextDue(end: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.#timers) if (timer.at <= end && (!best || timer.at < best.at || (timer.at === best.at && timer.seq < best.seq))) best = timer;
    return best;
  }
}

// --- The Redlock timing model, as pure functions ------------------------------------------------

/**
 * The drift allowance. Every member expires our key `ttl` after *it* set the key, by its own clock. We only know the
 * moment we started sending (t0). The earliest any member can drop the key is therefore
 * t0 + ttl, minus whatever its clock runs fast relative to ours: that is the drift allowance.
 * The reference implementation's allowance is ttl × driftFactor plus 2 ms (Redis' 1 ms expiry
 * precision plus 1 ms of minimum drift for short TTLs). We round the product up so the allowance
 * never comes out smaller than the formula.
 */
export function driftMs(ttlMs: number, driftFactor: number): number {
  // The epsilon keeps float noise (700 × 0.07 = 49.00000000000001) from rounding up a whole ms.
  return Math.ceil(ttlMs * driftFactor - 1e-9) + 2;
}

/**
 * Time left in which the lock is guaranteed to be held on a quorum, measured from the start of
 * the round (not from when the last vote arrived): a member that answered late set its key late,
 * so it expires late, but one that answered early may expire as early as t0 + ttl - drift.
 */
export function validityMs(ttlMs: number, elapsedMs: number, drift: number): number {
  return ttlMs - elapsedMs - drift;
}

/** The instant (on the clock that measured `startedAt`) at which the guarantee runs out. */
export function deadlineOf(startedAt: number, ttlMs: number, drift: number): number {
  return startedAt + ttlMs - drift;
}

/**
 * Resolves once the event loop has polled for I/O (the check phase after it): replies that
 * reached the socket meanwhile are read first (docs/internals.md#timers-before-io), and a loop
 * that awaits it between tries never spins in microtasks.
 */
export function afterPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
