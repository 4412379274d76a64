/**
 * The discrete-event loop. Everything that happens later (a message arriving, a holder letting
 * go, a client's think time, a round's deadline inside src/quorum/round.ts) is a timer on one
 * ManualClock: true time. The loop lets the real async code run until it is blocked on timers
 * only, then jumps the clock to the next due timer, which fires it (and any due at the same
 * instant, in the order they were set), and repeats until no timer is left.
 *
 * "Until it is blocked": one macrotask turn (setImmediate) is enough, because Node drains the
 * whole microtask queue, including promise jobs queued by promise jobs, before it runs the next
 * macrotask. That holds as long as the code under test uses no real timers or I/O, which is the
 * case for tryAcquire / release on a ManualClock (the real setTimeout in lock.signal and the
 * subscriber wait are never reached). Counting microtask rounds instead would be fragile: the
 * depth of a promise chain through p-timeout and async functions is not ours to know.
 */
import type { ManualClock } from '../../src/index.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs until no timer is pending; returns how many times the clock moved. */
export async function runUntilIdle(clock: ManualClock, check: () => void = () => {}): Promise<number> {
  let steps = 0;
  for (;;) {
    await turn();
    check();
    const next = clock.nextTimerAt();
    if (next === undefined) return steps;
    clock.advance(Math.max(0, next - clock.now()));
    steps++;
  }
}
