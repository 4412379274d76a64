/**
 * Fault drivers. Each runs until `signal` aborts, one bounded step at a time, and leaves every
 * master running and reachable when it returns (also when it throws).
 */
import type { Master } from '../harness/index.js';
import type { Holding } from './checker.js';
import type { TcpProxy } from './proxy.js';

export interface FaultContext {
  masters: readonly Master[];
  /** One per master when the scenario routes clients through proxies, else empty. */
  proxies: readonly TcpProxy[];
  /** Holdings not yet released. */
  active: ReadonlySet<Holding>;
  /** The master index behind a vote's member id (host:port/db as the clients address it). */
  memberIndex(member: string): number;
  ttl: number;
  signal: AbortSignal;
}

export interface FaultReport {
  /** What was injected, for the report and for tests to check that faults really happened. */
  counts: Record<string, number>;
  /** majority-pause: when no acquisition may complete. */
  windows?: { start: number; end: number }[];
}

export type Fault = (context: FaultContext) => Promise<FaultReport>;

/** Resolves after ms, or early (without throwing) when the signal aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

/** Polls every 5 ms; undefined on timeout or abort. */
async function waitFor<T>(find: () => T | undefined, timeoutMs: number, signal: AbortSignal): Promise<T | undefined> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined || signal.aborted || performance.now() > end) return found;
    await sleep(5, signal);
  }
}

const between = (min: number, max: number) => min + Math.random() * (max - min);

/** `count` distinct indexes out of 0..n-1, at random. */
function pick(n: number, count: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order.slice(0, count);
}

/**
 * The restart hazard, made to happen every cycle: cut 2 of 5 members off (proxy blackhole) so the
 * next holder A locks exactly the other 3; restart one of A's 3 empty (SIGKILL, start at once);
 * heal the cut. A now holds on 2 members, and the restarted one plus the 2 healed ones are free:
 * without quarantine another client locks those 3 while A still holds.
 *
 * Why a blackhole and not SIGSTOP for the 2: a paused member runs A's queued SET when it resumes,
 * and then holds A's key itself, which hides the hazard. Bytes the blackhole ate are gone for good
 * (the clients must not re-send them either: see `clientOptions`).
 */
export const killRestart: Fault = async ({ masters, proxies, active, memberIndex, ttl, signal }) => {
  const counts = { cycles: 0, restarts: 0, holderStillHolding: 0 };
  let victim: number | undefined;
  let holder: Holding | undefined;
  while (!signal.aborted) {
    // The window for a second client: everything healed while the last holder still holds.
    if (holder) await waitFor(() => (active.has(holder!) ? undefined : true), ttl, signal);
    // The last restarted member is cut again: with quarantine it may not count yet, and cutting
    // 2 others would leave only 2 of 5 that count, so nobody could lock at all.
    const others = pick(masters.length, masters.length).filter((i) => i !== victim);
    const cut = victim === undefined ? others.slice(0, 2) : [victim, others[0]!];
    for (const i of cut) proxies[i]!.setBlackhole(true);
    const cutAt = performance.now();
    try {
      // Keys that reached the cut members before the cut (a holder's, or an attempt whose rollback
      // the blackhole then ate) expire within ttl. Until then they would block the second client.
      await sleep(ttl, signal);
      // A fresh holding, acquired after the cut: it locked exactly the 3 members outside it.
      const since = performance.now();
      holder = await waitFor(() => [...active].find((h) => h.calledAt > cutAt && h.acquiredAt >= since), 4 * ttl, signal);
      if (!holder || signal.aborted) continue;
      const locked = holder.lockedMembers.map(memberIndex).filter((i) => !cut.includes(i));
      victim = locked[Math.floor(Math.random() * locked.length)];
      if (victim === undefined) continue;
      await masters[victim]!.restart();
      counts.restarts++;
      if (active.has(holder)) counts.holderStillHolding++;
    } finally {
      for (const i of cut) proxies[i]!.setBlackhole(false);
      counts.cycles++;
    }
  }
  return { counts };
};

/** SIGSTOP 2 of 5 for 0.3–1 s, SIGCONT, 0.2–0.6 s of health, again. */
export const minorityPause: Fault = async ({ masters, signal }) => {
  const counts = { pauses: 0 };
  while (!signal.aborted) {
    const paused = pick(masters.length, 2).map((i) => masters[i]!);
    try {
      await Promise.all(paused.map((master) => master.pause()));
      counts.pauses++;
      await sleep(between(300, 1000), signal);
    } finally {
      await Promise.all(paused.map((master) => master.resume()));
    }
    await sleep(between(200, 600), signal);
  }
  return { counts };
};

/**
 * SIGSTOP 3 of 5 for 1.5 s, then 1.5 s of health, again. A window runs from when all three are
 * stopped to just before the first is resumed: no acquire that starts and ends inside it may win.
 */
export const majorityPause: Fault = async ({ masters, signal }) => {
  const windows: { start: number; end: number }[] = [];
  await sleep(1000, signal); // let contention settle first
  while (!signal.aborted) {
    const paused = pick(masters.length, 3).map((i) => masters[i]!);
    let start = NaN;
    try {
      await Promise.all(paused.map((master) => master.pause()));
      start = performance.now();
      await sleep(1500, signal);
    } finally {
      if (!Number.isNaN(start)) windows.push({ start, end: performance.now() });
      await Promise.all(paused.map((master) => master.resume()));
    }
    await sleep(1500, signal);
  }
  return { counts: { windows: windows.length }, windows };
};

/** 2 of 5 members 200 ms slower each way (nodeTimeout is 50), a new pair every 2 s. */
export const minorityLatency: Fault = async ({ proxies, signal }) => {
  const counts = { windows: 0 };
  while (!signal.aborted) {
    const slow = pick(proxies.length, 2).map((i) => proxies[i]!);
    for (const proxy of slow) proxy.latencyMs = 200;
    counts.windows++;
    await sleep(2000, signal);
    for (const proxy of slow) proxy.latencyMs = 0;
  }
  return { counts };
};

/** clock-drift injects nothing while it runs: 2 members were started with fast clocks. */
export const none: Fault = async ({ signal }) => {
  if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  return { counts: {} };
};
