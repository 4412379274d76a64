/**
 * Auto-extension: keeps a lock extended while work runs under it. One timer, set to fire when the
 * remaining validity drops to `thresholdMs`; each successful extension sets it again.
 *
 * An extension that fails only for lack of answers (members stalled, a GC pause, a slow link) is
 * no loss: the lock stays guaranteed until its deadline, so the watchdog tries again after a
 * fraction of what is left, as long as anything is left. It stops when the lock is lost (an
 * extension found the keys gone or taken, or its quorum came too late: Lock.extend aborts the
 * signal then) or when the validity runs out (the lock's own timer aborts the signal with
 * 'expired'). Retrying is safe: each try is judged on its own against the deadline in force
 * (src/quorum/extend.ts), and a try whose quorum comes after that deadline loses the lock
 * rather than bridging a gap.
 *
 * maxExtensions counts successful extensions: the Redis docs ask for a bounded number of
 * reacquisitions, so that a stuck holder cannot keep a resource forever; retries of one due
 * extension are not more reacquisitions.
 */
import { type BackgroundTimer, type Clock, clearBackgroundTimer, setBackgroundTimer } from '../clock/index.js';
import type { Lock } from './lock.js';

/** A retry comes after this share of the remaining validity: a few tries fit, each in time. */
export const RETRY_SHARE = 0.25;

export function keepExtended(lock: Lock, ttl: number, thresholdMs: number, clock: Clock, maxExtensions = Infinity): () => void {
  let timer: BackgroundTimer | undefined;
  let stopped = false;
  let extensions = 0;

  const over = () => stopped || lock.released || lock.signal.aborted;
  // In the background: the work keeps the process alive, not the watchdog.
  const after = (ms: number) => {
    clearBackgroundTimer(clock, timer);
    timer = setBackgroundTimer(clock, extendNow, ms);
  };
  const schedule = () => {
    // Past maxExtensions, let the lock run out: its signal then aborts with reason 'expired'.
    if (over() || extensions >= maxExtensions) return;
    after(Math.max(0, lock.remainingMs() - thresholdMs));
  };
  const retry = () => {
    if (over()) return;
    const remaining = lock.remainingMs();
    // Nothing left: the lock's expiry timer aborts the signal; no try can count any more.
    if (remaining <= 0) return;
    after(remaining * RETRY_SHARE);
  };
  const extendNow = () => {
    if (over()) return;
    lock.extend(ttl).then(
      () => {
        extensions++;
        schedule();
      },
      // Lost: already reported (lock.signal is aborted with a LockLostError, and logged), and
      // retry() sees it. Otherwise the lock still holds: try again while it does.
      retry,
    );
  };

  schedule();
  return () => {
    stopped = true;
    clearBackgroundTimer(clock, timer);
  };
}
