/**
 * One 'abort' listener per AbortSignal, however many of our waits listen to it: a signal passed
 * to many concurrent acquires (a shutdown signal) made Node warn of a possible memory leak past
 * 10 listeners. Callers check `signal.aborted` first.
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
