/**
 * Shared helpers for bench/run.ts: statistics, bounded operations (for clients that hang on a
 * paused member), connection sets with error listeners, and forced GC for memory samples.
 */
import Redis from 'ioredis';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Session } from 'node:inspector/promises';
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

/** Other checkouts of quorumlock (each with node_modules linked in), loaded from their sources, each named by its path. */
export function checkouts(paths: readonly string[]): Promise<{ name: string; lib: typeof import('../src/index.js') }[]> {
  return Promise.all(
    paths.map(async (path) => ({ name: path, lib: (await import(pathToFileURL(resolve(path, 'src/index.ts')).href)) as typeof import('../src/index.js') })),
  );
}

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

// ---------------------------------------------------------------------------------------------
// Server-side accounting (figure 7): INFO commandstats, INFO cpu, MONITOR

export interface CommandTotals {
  calls: number;
  usec: number;
}

/** INFO commandstats of every member, summed per command (named as Redis names them: evalsha, set, config|resetstat). */
export async function commandstats(clients: readonly Redis[]): Promise<Map<string, CommandTotals>> {
  const totals = new Map<string, CommandTotals>();
  for (const client of clients) {
    for (const line of (await client.info('commandstats')).split('\n')) {
      const match = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
      if (!match) continue;
      const entry = totals.get(match[1]!) ?? { calls: 0, usec: 0 };
      entry.calls += Number(match[2]);
      entry.usec += Number(match[3]);
      totals.set(match[1]!, entry);
    }
  }
  return totals;
}

/** redis-server CPU time (user + system; the main thread's where INFO cpu gives it), summed over the members, in µs. */
export async function serverCpuUs(clients: readonly Redis[]): Promise<number> {
  let total = 0;
  for (const client of clients) {
    const fields = new Map<string, number>();
    for (const line of (await client.info('cpu')).split('\n')) {
      const [name, value] = line.trim().split(':');
      if (name && value !== undefined) fields.set(name, Number(value));
    }
    const main = (fields.get('used_cpu_user_main_thread') ?? NaN) + (fields.get('used_cpu_sys_main_thread') ?? NaN);
    total += (Number.isFinite(main) ? main : (fields.get('used_cpu_user') ?? NaN) + (fields.get('used_cpu_sys') ?? NaN)) * 1e6;
  }
  return total;
}

export interface MonitoredCalls {
  /** Calls a client sent. */
  top: number;
  /** Calls made from inside a script (MONITOR's "lua" source). */
  inner: number;
}

/**
 * Runs `run` with MONITOR on every member and counts, per command, the calls clients sent and the
 * calls scripts made: INFO commandstats counts a script's inner commands both under their own names
 * and inside the script's time, and MONITOR is the only place a server tells them apart. Keyed by
 * the command name and by "name|first argument" (commandstats' name for subcommands). Undefined if
 * some member's stream did not reach the end marker within `limitMs`.
 */
export async function monitorCalls(clients: readonly Redis[], run: () => Promise<void>, limitMs = 5000): Promise<Map<string, MonitoredCalls> | undefined> {
  const marker = `bench-monitor-end-${Math.random().toString(36).slice(2)}`;
  const counts = new Map<string, MonitoredCalls>();
  const ended = new Set<number>();
  let allEnded!: () => void;
  const done = new Promise<void>((resolve) => (allEnded = resolve));
  const monitors = await Promise.all(clients.map((c) => c.monitor()));
  monitors.forEach((monitor, i) => {
    monitor.on('error', () => {});
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const name = (args[0] ?? '').toLowerCase();
      if (name === 'echo' && args[1] === marker) {
        ended.add(i);
        if (ended.size === monitors.length) allEnded();
        return;
      }
      const keys = args.length > 1 ? [name, `${name}|${args[1]!.toLowerCase()}`] : [name];
      for (const key of keys) {
        const entry = counts.get(key) ?? { top: 0, inner: 0 };
        if (source === 'lua') entry.inner++;
        else entry.top++;
        counts.set(key, entry);
      }
    });
  });
  try {
    await run();
    await sleep(50); // a client decides at a quorum: commands to the other members may still be on their way
    await Promise.all(clients.map((c) => c.echo(marker)));
    const complete = await bounded(() => done, limitMs);
    return complete.status === 'ok' ? counts : undefined;
  } finally {
    for (const monitor of monitors) monitor.disconnect();
  }
}

/** What `turn` measured: cycles per second, and the process's CPU per cycle in µs (user + system, and apart). */
export interface Turn {
  rate: number;
  cpuUs: number;
  userUs: number;
  systemUs: number;
}

/**
 * One turn of `concurrency` loops of acquire → release on fresh keys (each named by `name()`), `count` cycles in
 * all (rounded up to a multiple of the loops), after a 200-cycle warm-up: the whole run, ramp and
 * drain included, timed and its process CPU read (bench:batching, bench:cpu). With `limitMs`, each
 * acquire and release is bounded by it, as figure 2 runs them.
 */
export async function turn(
  locker: { acquire(resource: string, ttl: number): Promise<{ release(): Promise<unknown> }> },
  concurrency: number,
  count: number,
  name: () => string,
  limitMs?: number,
): Promise<Turn> {
  const loop = async (n: number) => {
    for (let i = 0; i < n; i++) {
      if (limitMs === undefined) await (await locker.acquire(name(), 10_000)).release();
      else {
        // As figure 2 runs each operation (figures.ts, cycle): with an outer limit, a timer and a promise each.
        const acquired = await bounded(() => locker.acquire(name(), 10_000), limitMs);
        if (acquired.status === 'ok') await bounded(() => acquired.value.release(), limitMs);
      }
    }
  };
  await loop(200); // warm up
  forceGc?.(); // the garbage of the turn before is not this one's to collect
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, () => loop(Math.ceil(count / concurrency))));
  const seconds = (performance.now() - started) / 1000;
  const { user, system } = process.cpuUsage(cpuBefore);
  const done = Math.ceil(count / concurrency) * concurrency;
  return { rate: done / seconds, cpuUs: (user + system) / done, userUs: user / done, systemUs: system / done };
}

/** A profiled function's place, short: its name and path from src/, dist/, bench/ or node_modules/ on. */
export function siteOf({ functionName, url, lineNumber }: { functionName: string; url: string; lineNumber: number }): string {
  return `${functionName || '(anonymous)'} ${url.replace(/^.*\/(src|dist|bench|node_modules)\//, '$1/')}:${lineNumber + 1}`;
}

interface Allocation {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: Allocation[];
}

/**
 * What `run` allocates, sampled every 256 bytes by V8's heap profiler (objects the collector freed
 * included), per cycle of its `cycles` and by site; prints the total and the sites above 1 %.
 */
export async function printAllocations(session: Session, run: () => Promise<unknown>, cycles: number, heading: string): Promise<void> {
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  await run();
  const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as { profile: { head: Allocation } };
  const bySite = new Map<string, number>();
  let total = 0;
  const walk = (node: Allocation) => {
    total += node.selfSize;
    if (node.selfSize > 0) {
      const site = siteOf(node.callFrame);
      bySite.set(site, (bySite.get(site) ?? 0) + node.selfSize);
    }
    node.children.forEach(walk);
  };
  walk(profile.head);
  console.log(`${heading}: ${(total / cycles).toFixed(0)} B a cycle (sampled); the sites above 1 %:`);
  for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]))
    if (bytes > total / 100) console.log(`  ${(bytes / cycles).toFixed(0).padStart(6)} B  ${site}`);
}
