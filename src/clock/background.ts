/**
 * Background timers: lock expiries and keep-extended's wake-ups, which must never keep the
 * process alive by themselves. All of one clock's share ONE of its timers, set for the earliest
 * of them: a process holding 10,000 locks under using() has one timer for them, not 20,000 (each
 * Node timer is an object on the heap and an entry in its lists; each re-arm after an extension
 * moves it). The entries wait in a binary heap by due time; a cleared entry is only marked, and
 * dropped when it comes up (by then its lock's deadline has passed or moved: at most one stale
 * entry per re-arm, each gone within the validity it was set for).
 */
import type { Clock } from './clock.js';

/** A background timer's handle: pass it to clearBackgroundTimer. */
export interface BackgroundTimer {
  readonly at: number;
  readonly seq: number;
  callback: (() => void) | undefined;
}

class TimerSet {
  readonly #clock: Clock;
  readonly #heap: BackgroundTimer[] = [];
  #seq = 0;
  #live = 0;
  #timer: unknown;
  /** When the clock's timer is set to fire; undefined when none is set. */
  #armedAt: number | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  add(callback: () => void, ms: number): BackgroundTimer {
    const entry: BackgroundTimer = { at: this.#clock.now() + Math.max(0, ms), seq: this.#seq++, callback };
    this.#push(entry);
    this.#live++;
    if (this.#armedAt === undefined || entry.at < this.#armedAt) this.#arm(entry.at);
    return entry;
  }

  clear(entry: BackgroundTimer): void {
    if (entry.callback === undefined) return;
    entry.callback = undefined;
    if (--this.#live === 0) {
      // Nothing left to wait for: the marked entries go now rather than when they come up.
      this.#heap.length = 0;
      this.#disarm();
    }
  }

  #arm(at: number): void {
    this.#disarm();
    this.#armedAt = at;
    this.#timer = this.#clock.setTimer(() => this.#fire(), Math.max(0, at - this.#clock.now()));
    (this.#timer as { unref?: () => void } | undefined)?.unref?.();
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#armedAt = undefined;
  }

  /** Runs what is due now, in order of due time (then of setting), and sets the timer for the rest. */
  #fire(): void {
    this.#timer = undefined;
    this.#armedAt = undefined;
    const now = this.#clock.now();
    // Only what was due when this fire began: a callback that sets a timer due at once gets the
    // next turn of the loop, not this one.
    const due: (() => void)[] = [];
    while (this.#heap.length > 0 && this.#heap[0]!.at <= now) {
      const entry = this.#pop();
      if (entry.callback === undefined) continue;
      due.push(entry.callback);
      entry.callback = undefined;
      this.#live--;
    }
    for (const callback of due) callback();
    this.#rearm();
  }

  #rearm(): void {
    while (this.#heap.length > 0 && this.#heap[0]!.callback === undefined) this.#pop();
    if (this.#heap.length === 0) return this.#disarm();
    const next = this.#heap[0]!.at;
    if (this.#armedAt === undefined || next < this.#armedAt) this.#arm(next);
  }

  #push(entry: BackgroundTimer): void {
    const heap = this.#heap;
    heap.push(entry);
    for (let i = heap.length - 1; i > 0;) {
      const parent = (i - 1) >> 1;
      if (!earlier(heap[i]!, heap[parent]!)) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): BackgroundTimer {
    const heap = this.#heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      for (let i = 0; ;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let least = i;
        if (left < heap.length && earlier(heap[left]!, heap[least]!)) least = left;
        if (right < heap.length && earlier(heap[right]!, heap[least]!)) least = right;
        if (least === i) break;
        [heap[i], heap[least]] = [heap[least]!, heap[i]!];
        i = least;
      }
    }
    return top;
  }
}

const earlier = (a: BackgroundTimer, b: BackgroundTimer) => a.at < b.at || (a.at === b.at && a.seq < b.seq);

const sets = new WeakMap<Clock, TimerSet>();

function setOf(clock: Clock): TimerSet {
  let set = sets.get(clock);
  if (!set) sets.set(clock, (set = new TimerSet(clock)));
  return set;
}

/** Calls `callback` after `ms` on `clock`, without keeping the process alive for it. */
export function setBackgroundTimer(clock: Clock, callback: () => void, ms: number): BackgroundTimer {
  return setOf(clock).add(callback, ms);
}

/** Cancels a background timer (again, or after it fired: nothing happens). */
export function clearBackgroundTimer(clock: Clock, timer: BackgroundTimer | undefined): void {
  if (timer !== undefined) setOf(clock).clear(timer);
}
