/**
 * Auto-extension: keeps a lock extended while work runs under it. One timer, set to fire when the
 * remaining validity drops to `thresholdMs`; each successful extension sets it again. A failed
 * extension aborts lock.signal at once (Lock.extend does that), and the watchdog stops: the Redis
 * docs ask for a bounded number of reacquisition attempts, and a lock that failed to extend is
 * one the work should no longer count on.
 */
import { type Clock, setBackgroundTimer } from './clock/index.js';
import type { Lock } from './lock.js';

export function keepExtended(lock: Lock, ttl: number, thresholdMs: number, clock: Clock, maxExtensions = Infinity): () => void {
  let timer: unknown;
  let stopped = false;
  let extensions = 0;

  const schedule = () => {
    // Past maxExtensions, let the lock run out: its signal then aborts with reason 'expired'.
    if (stopped || extensions >= maxExtensions) return;
    // In the background: the work keeps the process alive, not the watchdog.
    timer = setBackgroundTimer(clock, extendNow, Math.max(0, lock.remainingMs() - thresholdMs));
  };
  const extendNow = () => {
    if (stopped || lock.signal.aborted || lock.released) return;
    extensions++;
    lock.extend(ttl).then(schedule, () => {
      // Already reported: lock.signal is aborted with a LockLostError, and the failure is logged.
    });
  };

  schedule();
  return () => {
    stopped = true;
    clock.clearTimer(timer);
  };
}
