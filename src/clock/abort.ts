/**
 * One 'abort' listener per AbortSignal, however many of our waits listen to it: a signal passed
 * to many concurrent acquires (a shutdown signal) made Node warn of a possible memory leak past
 * 10 listeners. Removed when the last wait stops (Node keeps a timeout or `any()` signal alive
 * while it has one). Callers check `signal.aborted` first.
 */
interface Listening {
  waits: Set<() => void>;
  dispatch: () => void;
}

const listening = new WeakMap<AbortSignal, Listening>();

/** Calls `listener` once when `signal` aborts; returns what stops listening. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let entry = listening.get(signal);
  if (entry === undefined) {
    const waits = new Set<() => void>();
    const dispatch = () => {
      listening.delete(signal);
      for (const wait of waits) {
        // One that throws (a caller's clock) must not keep the others waiting.
        try {
          wait();
        } catch (error) {
          queueMicrotask(() => {
            throw error;
          });
        }
      }
      waits.clear();
    };
    listening.set(signal, (entry = { waits, dispatch }));
    signal.addEventListener('abort', dispatch, { once: true });
  }
  const { waits, dispatch } = entry;
  // Wrapped: the same function may listen for two waits, and each stops on its own.
  const wait = () => listener();
  waits.add(wait);
  return () => {
    if (!waits.delete(wait) || waits.size > 0 || listening.get(signal)?.waits !== waits) return;
    listening.delete(signal);
    signal.removeEventListener('abort', dispatch);
  };
}
