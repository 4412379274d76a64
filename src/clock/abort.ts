/**
 * One 'abort' listener per AbortSignal, however many of our waits listen to it. A caller may pass
 * one signal (a shutdown signal, a job's) to many concurrent acquires: with a listener per round,
 * sleep and wait, more than 10 on one signal made Node print a "possible EventTarget memory leak"
 * warning into the caller's process for a signal used as intended (Node's default limit, which
 * only the signal's owner should raise). Callers check `signal.aborted` first: a signal that has
 * aborted fires nothing more.
 */
const listening = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `listener` once when `signal` aborts; returns what stops listening. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let listeners = listening.get(signal);
  if (listeners === undefined) {
    const made = new Set<() => void>();
    listening.set(signal, (listeners = made));
    // One listener on the signal for good: it holds only this set, emptied as waits end.
    signal.addEventListener(
      'abort',
      () => {
        listening.delete(signal);
        for (const each of made) each();
        made.clear();
      },
      { once: true },
    );
  }
  const set = listeners;
  // Wrapped: the same function may listen for two waits, and each stops on its own.
  const entry = () => listener();
  set.add(entry);
  return () => void set.delete(entry);
}
