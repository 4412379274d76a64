/**
 * Shared helpers for bench/run.ts: statistics, bounded operations (for clients that hang on a
 * paused member), connection sets with error listeners, and forced GC for memory samples.
 */
import Redis from 'ioredis';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { MasterSet } from '../test/harness/types.js';

export { sleep };
export const now = (): number => performance.now();

export const quantile = (samples: readonly number[], q: number): number => {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

export const median = (xs: readonly number[]): number => {
  const finite = xs.filter((x) => Number.isFinite(x));
  if (finite.length === 0) return NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

export const max = (xs: readonly number[]): number => (xs.length === 0 ? NaN : xs.reduce((a, b) => Math.max(a, b), -Infinity));

/** The order in which the clients take their turn in cycle `i`: rotated, so none always follows the same one. */
export function rotation<T>(items: readonly T[], i: number): T[] {
  const k = i % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export type Bounded<T> = { status: 'ok'; value: T; ms: number } | { status: 'error'; error: unknown; ms: number } | { status: 'hung'; ms: number };

/**
 * Runs `op` with an outer time limit. A client that waits forever for a paused member (node-redlock
 * v4, or a quorum that can never be decided) counts as 'hung' after `limitMs`; the operation itself
 * cannot be cancelled, so whatever it resolves with later goes to `onLate` (e.g. release a lock that
 * arrives after we gave up) and a late rejection to `onLateError`: nothing is left unhandled.
 */
export function bounded<T>(
  op: () => PromiseLike<T>,
  limitMs: number,
  onLate?: (value: T) => void,
  onLateError?: (error: unknown) => void,
): Promise<Bounded<T>> {
  return new Promise((resolve) => {
    let done = false;
    const started = now();
    let promise: PromiseLike<T>;
    try {
      promise = op();
    } catch (error) {
      resolve({ status: 'error', error, ms: now() - started });
      return;
    }
    // Armed after op() was called, so the timer's own cost is not in the measured time.
    const timer = setTimeout(() => {
      done = true;
      resolve({ status: 'hung', ms: now() - started });
    }, limitMs);
    Promise.resolve(promise).then(
      (value) => {
        const ms = now() - started;
        if (done) return onLate?.(value);
        done = true;
        clearTimeout(timer);
        resolve({ status: 'ok', value, ms });
      },
      (error: unknown) => {
        const ms = now() - started;
        if (done) return onLateError?.(error);
        done = true;
        clearTimeout(timer);
        resolve({ status: 'error', error, ms });
      },
    );
  });
}

/** One ioredis client per master, each with an 'error' listener. */
export function connect(set: MasterSet): Redis[] {
  return set.masters.map((m) => {
    const client = new Redis({ host: m.host, port: m.port });
    client.on('error', () => {}); // a stray socket error must not crash the bench; outcomes are measured, not logged
    return client;
  });
}

/** Every client, of every connection set, answers PING (or gives up after `limitMs`). */
export async function ready(clients: readonly Redis[], limitMs = 10_000): Promise<void> {
  await Promise.all(clients.map((c) => bounded(() => c.ping(), limitMs)));
}

/**
 * After masters were paused: every command queued behind them has been answered once a PING sent
 * now is (one connection answers in order). Then late completions of abandoned operations get a
 * moment to run their handlers, and everything is disconnected.
 */
export async function drainAndClose(clients: readonly Redis[], limitMs = 10_000): Promise<{ drainedMs: number; undrained: number }> {
  const started = now();
  const results = await Promise.all(clients.map((c) => bounded(() => c.ping(), limitMs)));
  await sleep(500); // > a peer's retry delay (200 ± 100 ms): a retry started on resume lands before the disconnect
  for (const client of clients) client.disconnect();
  return { drainedMs: now() - started, undrained: results.filter((r) => r.status !== 'ok').length };
}

/**
 * A full garbage collection before a memory sample, so heapUsed is live data rather than whatever
 * garbage the young generation held at that instant. `npm run bench` runs without --expose-gc; the
 * flag can still be set at run time and `gc` read from a fresh context. Undefined if that fails.
 */
export const forceGc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
})();

export const describeError = (error: unknown): string => {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? ` (cause: ${error.cause.message})` : '';
    return `${error.name}: ${error.message}${cause}`.slice(0, 300);
  }
  return String(error).slice(0, 300);
};
