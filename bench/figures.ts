/**
 * The six measurements of bench/run.ts. Each figure opens fresh connections for every client (and
 * every handoff worker), so nothing one figure left behind (a hung operation, commands queued
 * behind a paused member) can touch the next; each resumes what it paused and closes what it opened.
 */
import type Redis from 'ioredis';
import { defaults } from '../src/index.js';
import type { MasterSet } from '../test/harness/types.js';
import { bounded, connect, describeError, drainAndClose, forceGc, max, now, quantile, ready, rotation, sleep, type Bounded } from './lib.js';
import { ALL, CLIENTS, type Held, type Locker, type Mode, type Peer, type PeerName } from './peers.js';

export interface Limits {
  /** Outer bound on every single acquire or release: past it the operation counts as hung. */
  opTimeoutMs: number;
  /** In the paused figures, a client is retired after this many troubled operations (hung, failed, or > SLOW_MS). */
  maxTroubled: number;
}
/** In the paused figures, an operation slower than this counts as troubled. */
export const SLOW_MS = 1000;
const TTL = 10_000;

/** What went wrong for one client in one figure, beside its timings. */
export interface Incidents {
  errors: number;
  firstError?: string;
  hung: number;
  /** Acquisitions the client handed out with a claimed validity ≤ 0 (already expired). */
  expiredAtHandout: number;
  minValidityMs: number;
  /** release() resolved with "not confirmed by a quorum" (quorumlock freed=false, redlock-universal false). */
  releaseUnconfirmed: number;
  releaseErrors: number;
  /** Operations that settled after their outer timeout (locks acquired late are released at once). */
  lateCompletions: number;
  /** Of those, acquires that resolved with a lock, and how much validity each claimed then. */
  lateLocks: number;
  lateValidityMs: number[];
}
const incidents = (): Incidents => ({
  errors: 0,
  hung: 0,
  expiredAtHandout: 0,
  minValidityMs: Infinity,
  releaseUnconfirmed: 0,
  releaseErrors: 0,
  lateCompletions: 0,
  lateLocks: 0,
  lateValidityMs: [],
});

/** Bounds one acquire; a lock that arrives after the bound is recorded (with its claimed validity) and released. */
function boundedAcquire(locker: Locker, resource: string, ttl: number, limits: Limits, inc: Incidents): Promise<Bounded<Held>> {
  return bounded(
    () => locker.acquire(resource, ttl),
    limits.opTimeoutMs,
    (late) => {
      inc.lateCompletions++;
      inc.lateLocks++;
      inc.lateValidityMs.push(late.validityMs);
      late.release().catch(() => undefined);
    },
    () => void inc.lateCompletions++,
  );
}
const boundedRelease = (held: Held, limits: Limits, inc: Incidents): Promise<Bounded<boolean>> =>
  bounded(
    () => held.release(),
    limits.opTimeoutMs,
    () => void inc.lateCompletions++,
    () => void inc.lateCompletions++,
  );

function noteError(inc: Incidents, error: unknown) {
  inc.errors++;
  inc.firstError ??= describeError(error);
}

/** acquire → release, each bounded; the timings and whatever went wrong go into `inc`. */
async function cycle(locker: Locker, resource: string, ttl: number, limits: Limits, inc: Incidents) {
  const started = now();
  const acquired = await boundedAcquire(locker, resource, ttl, limits, inc);
  if (acquired.status === 'hung') {
    inc.hung++;
    return { acquired, cycleMs: NaN };
  }
  if (acquired.status === 'error') {
    noteError(inc, acquired.error);
    return { acquired, cycleMs: NaN };
  }
  inc.minValidityMs = Math.min(inc.minValidityMs, acquired.value.validityMs);
  if (acquired.value.validityMs <= 0) inc.expiredAtHandout++;
  const released = await boundedRelease(acquired.value, limits, inc);
  if (released.status === 'hung') inc.hung++;
  else if (released.status === 'error') {
    inc.releaseErrors++;
    inc.firstError ??= `release: ${describeError(released.error)}`;
  } else if (!released.value) inc.releaseUnconfirmed++;
  return { acquired, released, cycleMs: released.status === 'ok' ? now() - started : NaN };
}

interface Opened {
  peer: Peer;
  connections: Redis[];
  locker: Locker;
}
async function open(set: MasterSet, peers: readonly Peer[], mode: Mode = 'defaults'): Promise<Opened[]> {
  const opened = peers.map((peer) => {
    const connections = connect(set);
    return { peer, connections, locker: peer.create(connections, mode) };
  });
  await ready(opened.flatMap((o) => o.connections));
  return opened;
}
async function close(opened: readonly Opened[]) {
  await Promise.all(opened.map((o) => o.locker.close().catch(() => undefined)));
  return drainAndClose(opened.flatMap((o) => o.connections));
}

// ---------------------------------------------------------------------------------------------
// 1. Uncontended acquire + release, one at a time, distinct keys, interleaved per cycle

export interface UncontendedRow {
  client: PeerName;
  samples: number;
  acquireMs: { p50: number; p99: number };
  cycleMs: { p50: number; p99: number };
  incidents: Incidents;
}

export async function uncontended(set: MasterSet, o: { cycles: number; warmup: number; limits: Limits }): Promise<UncontendedRow[]> {
  const opened = await open(set, ALL);
  const acquireMs = opened.map(() => [] as number[]);
  const cycleMs = opened.map(() => [] as number[]);
  const inc = opened.map(incidents);
  const order = opened.map((_, i) => i);
  let key = 0;
  for (let i = 0; i < o.warmup + o.cycles; i++) {
    for (const c of rotation(order, i)) {
      const { acquired, cycleMs: ms } = await cycle(opened[c]!.locker, `fig1:${c}:${++key}`, TTL, o.limits, inc[c]!);
      if (i < o.warmup) continue;
      if (acquired.status === 'ok') acquireMs[c]!.push(acquired.ms);
      if (Number.isFinite(ms)) cycleMs[c]!.push(ms);
    }
  }
  await close(opened);
  return opened.map(({ peer }, c) => ({
    client: peer.name,
    samples: cycleMs[c]!.length,
    acquireMs: { p50: quantile(acquireMs[c]!, 0.5), p99: quantile(acquireMs[c]!, 0.99) },
    cycleMs: { p50: quantile(cycleMs[c]!, 0.5), p99: quantile(cycleMs[c]!, 0.99) },
    incidents: inc[c]!,
  }));
}

// ---------------------------------------------------------------------------------------------
// 2. Cycles/s on distinct keys at concurrency 1, 16, 128: N loops for a time slice, interleaved slices

export interface ThroughputSlice {
  client: PeerName;
  round: number;
  concurrency: number;
  cycles: number;
  perSecond: number;
  drainMs: number;
}
export interface ThroughputResult {
  slices: ThroughputSlice[];
  incidents: Record<string, Incidents>;
}

export async function throughput(
  set: MasterSet,
  o: { concurrency: number[]; sliceMs: number; rounds: number; limits: Limits; log: (line: string) => void },
): Promise<ThroughputResult> {
  const opened = await open(set, ALL);
  const inc = opened.map(incidents);
  const slices: ThroughputSlice[] = [];
  let key = 0;
  let sliceIndex = 0;
  // Warm-up: every client runs briefly at the highest concurrency (scripts loaded, JIT warm).
  for (const [c, { locker }] of opened.entries()) {
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = 0; i < 20; i++) await cycle(locker, `fig2:warm:${c}:${++key}`, TTL, o.limits, inc[c]!);
      }),
    );
  }
  for (let round = 1; round <= o.rounds; round++) {
    for (const concurrency of o.concurrency) {
      for (const c of rotation(
        opened.map((_, i) => i),
        sliceIndex++,
      )) {
        const { peer, locker } = opened[c]!;
        let done = 0;
        const end = now() + o.sliceMs;
        const loop = async () => {
          while (now() < end) {
            const { cycleMs } = await cycle(locker, `fig2:${c}:${++key}`, TTL, o.limits, inc[c]!);
            if (Number.isFinite(cycleMs) && now() <= end) done++;
          }
        };
        await Promise.all(Array.from({ length: concurrency }, loop));
        const drainMs = now() - end;
        slices.push({ client: peer.name, round, concurrency, cycles: done, perSecond: done / (o.sliceMs / 1000), drainMs });
      }
      o.log(
        `  round ${round}, concurrency ${concurrency}: ${slices
          .slice(-opened.length)
          .map((s) => `${s.client} ${s.perSecond.toFixed(0)}/s`)
          .join(', ')}`,
      );
    }
  }
  await close(opened);
  return { slices, incidents: Object.fromEntries(opened.map(({ peer }, c) => [peer.name, inc[c]!])) };
}

// ---------------------------------------------------------------------------------------------
// 3. Contended handoff: 8 workers (each its own client and connections) on one key, 1 ms holds.
// Contended handoff, for every client: 8 workers, one key, 1 ms holds.

export const WORKERS = 8;
const HANDOFF_TTL = 1000;

export interface HandoffRound {
  client: PeerName;
  round: number;
  acquisitions: number;
  perSecond: number;
  toAnotherPct: number;
  handoffs: number;
  selfHandoffs: number;
  handoffMs: { p50: number; p90: number; p99: number; max: number };
  waitedMs: { p50: number; p99: number };
  topWorkerPct: number;
  minWorkerPct: number;
  perWorker: number[];
  failed: number;
  mostHolders: number;
  drainedMs: number;
  incidents: Incidents;
}

export async function handoffRound(set: MasterSet, peer: Peer, index: number, o: { seconds: number; limits: Limits }): Promise<HandoffRound> {
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => open(set, [peer]).then(([w]) => w!)));
  const inc = incidents();
  const resource = `fig3:${peer.name}:${index}`;
  // Warm-up on another key: loads scripts on every master, so the timed window sees steady state.
  for (const { locker } of workers) await cycle(locker, `${resource}:warm-up`, HANDOFF_TTL, o.limits, inc);

  // Only one worker holds the lock at a time, so the latest release is always the previous holder's.
  let lastRelease: { worker: number; at: number } | undefined;
  // When the current holder first let go in its streak (it may take the lock straight back many
  // times): a waiter's handoff is measured from there, since that is when the lock was offered.
  let streakStart: { worker: number; at: number } | undefined;
  const handoffs: number[] = [];
  const waited: number[] = [];
  let selfHandoffs = 0;
  const perWorker = new Array<number>(WORKERS).fill(0);
  let failed = 0;
  let holding = 0;
  let mostHolders = 0;

  const start = now();
  const end = start + o.seconds * 1000;
  async function worker(id: number) {
    const { locker } = workers[id]!;
    while (now() < end) {
      const calledAt = now();
      const acquired = await boundedAcquire(locker, resource, HANDOFF_TTL, o.limits, inc);
      if (acquired.status === 'hung') {
        inc.hung++;
        continue;
      }
      if (acquired.status === 'error') {
        if (!locker.isAcquireFailure(acquired.error)) noteError(inc, acquired.error);
        else if (now() < end) failed++;
        continue;
      }
      const acquiredAt = now();
      if (acquired.value.validityMs <= 0) inc.expiredAtHandout++;
      inc.minValidityMs = Math.min(inc.minValidityMs, acquired.value.validityMs);
      mostHolders = Math.max(mostHolders, ++holding);
      if (acquiredAt < end) {
        perWorker[id]!++;
        if (lastRelease?.worker === id) selfHandoffs++;
        else if (lastRelease && streakStart) {
          handoffs.push(acquiredAt - streakStart.at);
          waited.push(acquiredAt - calledAt);
        }
      }
      await sleep(1);
      const releaseAt = now();
      if (streakStart?.worker !== id || lastRelease?.worker !== id) streakStart = { worker: id, at: releaseAt };
      lastRelease = { worker: id, at: releaseAt };
      holding--;
      const released = await boundedRelease(acquired.value, o.limits, inc);
      if (released.status === 'hung') inc.hung++;
      else if (released.status === 'error') {
        inc.releaseErrors++;
        inc.firstError ??= `release: ${describeError(released.error)}`;
      } else if (!released.value) inc.releaseUnconfirmed++;
    }
  }
  await Promise.all(workers.map((_, id) => worker(id)));
  const drainedMs = now() - end;
  await close(workers);

  const acquisitions = perWorker.reduce((a, b) => a + b, 0);
  return {
    client: peer.name,
    round: index,
    acquisitions,
    perSecond: acquisitions / o.seconds,
    toAnotherPct: (100 * handoffs.length) / (handoffs.length + selfHandoffs),
    handoffs: handoffs.length,
    selfHandoffs,
    handoffMs: { p50: quantile(handoffs, 0.5), p90: quantile(handoffs, 0.9), p99: quantile(handoffs, 0.99), max: max(handoffs) },
    waitedMs: { p50: quantile(waited, 0.5), p99: quantile(waited, 0.99) },
    topWorkerPct: (100 * Math.max(...perWorker)) / acquisitions,
    minWorkerPct: (100 * Math.min(...perWorker)) / acquisitions,
    perWorker,
    failed,
    mostHolders,
    drainedMs,
    incidents: inc,
  };
}

// ---------------------------------------------------------------------------------------------
// 4. Acquire latency with 2 of 5 members paused (SIGSTOP), against the same clients healthy

export interface PausedRow {
  client: PeerName;
  healthy: { samples: number; p50: number; p99: number };
  paused: { samples: number; p50: number; p99: number; max: number };
  /** Cycles attempted with members paused, and whether the client was retired for trouble. */
  attempted: number;
  retired: boolean;
  /** Live objects: operations given up on may still settle (and be counted) after the figure returned. */
  healthyIncidents: Incidents;
  incidents: Incidents;
  drain?: { drainedMs: number; undrained: number };
}

export async function twoPaused(set: MasterSet, o: { cycles: number; warmup: number; limits: Limits; log: (line: string) => void }): Promise<PausedRow[]> {
  const opened = await open(set, ALL);
  const healthyInc = opened.map(incidents);
  const inc = opened.map(incidents);
  const healthy = opened.map(() => [] as number[]);
  const paused = opened.map(() => [] as number[]);
  const attempted = opened.map(() => 0);
  const troubled = opened.map(() => 0);
  const order = opened.map((_, i) => i);
  let key = 0;
  for (let i = 0; i < o.warmup + o.cycles; i++) {
    for (const c of rotation(order, i)) {
      const { acquired } = await cycle(opened[c]!.locker, `fig4:h:${c}:${++key}`, TTL, o.limits, healthyInc[c]!);
      if (i >= o.warmup && acquired.status === 'ok') healthy[c]!.push(acquired.ms);
    }
  }
  const stopped = [set.masters[0]!, set.masters[3]!];
  for (const master of stopped) await master.pause();
  try {
    for (let i = 0; i < o.cycles; i++) {
      const active = order.filter((c) => troubled[c]! < o.limits.maxTroubled);
      if (active.length === 0) break;
      for (const c of rotation(active, i)) {
        attempted[c]!++;
        const before = { ...inc[c]! };
        const result = await cycle(opened[c]!.locker, `fig4:p:${c}:${++key}`, TTL, o.limits, inc[c]!);
        if (result.acquired.status === 'ok') paused[c]!.push(result.acquired.ms);
        else if (result.acquired.status === 'hung') paused[c]!.push(Infinity); // > the outer timeout: ∞ in its percentiles
        const releaseMs = result.released?.ms ?? 0;
        const bad =
          result.acquired.status !== 'ok' ||
          result.released?.status !== 'ok' ||
          result.acquired.ms > SLOW_MS ||
          releaseMs > SLOW_MS ||
          inc[c]!.releaseUnconfirmed > before.releaseUnconfirmed;
        if (bad && ++troubled[c]! === o.limits.maxTroubled) {
          o.log(`  ${opened[c]!.peer.name}: retired after ${troubled[c]} troubled cycles (${describe(result)})`);
        }
      }
    }
  } finally {
    for (const master of stopped) await master.resume();
  }
  await Promise.all(opened.map((x) => x.locker.close().catch(() => undefined)));
  const drain = await drainAndClose(opened.flatMap((x) => x.connections));
  return opened.map(({ peer }, c) => ({
    client: peer.name,
    healthy: { samples: healthy[c]!.length, p50: quantile(healthy[c]!, 0.5), p99: quantile(healthy[c]!, 0.99) },
    paused: { samples: paused[c]!.filter(Number.isFinite).length, p50: quantile(paused[c]!, 0.5), p99: quantile(paused[c]!, 0.99), max: max(paused[c]!) },
    attempted: attempted[c]!,
    retired: troubled[c]! >= o.limits.maxTroubled,
    healthyIncidents: healthyInc[c]!,
    incidents: inc[c]!,
    drain,
  }));
}

function describe(result: { acquired: Bounded<Held>; released?: Bounded<boolean> }): string {
  const part = (name: string, r: Bounded<unknown> | undefined) =>
    !r
      ? ''
      : r.status === 'hung'
        ? `${name} hung`
        : r.status === 'error'
          ? `${name} failed in ${r.ms.toFixed(0)} ms: ${describeError(r.error)}`
          : `${name} ${r.ms.toFixed(0)} ms`;
  return [part('acquire', result.acquired), part('release', result.released)].filter(Boolean).join(', ');
}

// ---------------------------------------------------------------------------------------------
// 5. Time to fail with 3 of 5 paused: one attempt per client (retry count 0)

export interface FailRow {
  client: PeerName;
  settings: string;
  /** Times from acquire() to its rejection as a normal failure to lock. */
  failMs: number[];
  p50: number;
  max: number;
  attempted: number;
  hung: number;
  /** Acquires that succeeded although a majority was paused: a safety violation. */
  acquired: number;
  /** Rejections that were not the client's "could not lock" error. */
  otherErrors: number;
  firstOtherError?: string;
  retired: boolean;
  /** Live: hung acquires that settled once the masters were resumed (also after the figure returned), the locks among them and their claimed validity. */
  late: Incidents;
}

export async function threePaused(
  set: MasterSet,
  o: { samples: number; limits: Limits; log: (line: string) => void },
): Promise<{ rows: FailRow[]; nodeTimeout: number; drain: { drainedMs: number; undrained: number } }> {
  const opened = await open(set, CLIENTS, 'one-attempt');
  const warm = opened.map(incidents);
  for (let i = 0; i < 20; i++) for (const [c, { locker }] of opened.entries()) await cycle(locker, `fig5:warm:${c}:${i}`, TTL, o.limits, warm[c]!);
  const rows: FailRow[] = opened.map(({ peer }) => ({
    client: peer.name,
    settings: peer.settings['one-attempt'],
    failMs: [],
    p50: NaN,
    max: NaN,
    attempted: 0,
    hung: 0,
    acquired: 0,
    otherErrors: 0,
    retired: false,
    late: incidents(),
  }));
  const troubled = opened.map(() => 0);
  const stopped = [set.masters[0]!, set.masters[1]!, set.masters[3]!];
  for (const master of stopped) await master.pause();
  let key = 0;
  try {
    for (let i = 0; i < o.samples; i++) {
      const active = opened.map((_, c) => c).filter((c) => troubled[c]! < o.limits.maxTroubled);
      if (active.length === 0) break;
      for (const c of rotation(active, i)) {
        const row = rows[c]!;
        const { locker } = opened[c]!;
        row.attempted++;
        const r = await boundedAcquire(locker, `fig5:${c}:${++key}`, TTL, o.limits, row.late);
        if (r.status === 'hung') row.hung++;
        else if (r.status === 'ok') {
          row.acquired++;
          void bounded(() => r.value.release(), o.limits.opTimeoutMs);
        } else if (locker.isAcquireFailure(r.error)) row.failMs.push(r.ms);
        else {
          row.otherErrors++;
          row.firstOtherError ??= describeError(r.error);
        }
        if ((r.status !== 'error' || r.ms > SLOW_MS) && ++troubled[c]! === o.limits.maxTroubled) {
          row.retired = true;
          o.log(
            `  ${row.client}: retired after ${troubled[c]} troubled attempts (last: ${r.status === 'hung' ? 'hung' : `${r.status} in ${r.ms.toFixed(0)} ms`})`,
          );
        }
      }
    }
  } finally {
    for (const master of stopped) await master.resume();
  }
  await Promise.all(opened.map((x) => x.locker.close().catch(() => undefined)));
  const drain = await drainAndClose(opened.flatMap((x) => x.connections));
  for (const row of rows) {
    // A hang never failed: ∞ in p50 / max.
    const times = [...row.failMs, ...new Array<number>(row.hung).fill(Infinity)];
    row.p50 = quantile(times, 0.5);
    row.max = max(times);
  }
  // quorumlock's one-attempt client runs with the default nodeTimeout.
  return { rows, nodeTimeout: defaults.nodeTimeout, drain };
}

// ---------------------------------------------------------------------------------------------
// 6. quorumlock's memory over a long run: concurrency 128, distinct keys

export interface MemorySample {
  cycles: number;
  rssMB: number;
  heapUsedMB: number;
  elapsedS: number;
}
export interface MemoryResult {
  cycles: number;
  warmupCycles: number;
  concurrency: number;
  sampleEvery: number;
  gcForced: boolean;
  samples: MemorySample[];
  rssGrowthMB: number;
  heapGrowthMB: number;
  perSecond: number;
  incidents: Incidents;
}

export async function memory(set: MasterSet, o: { cycles: number; concurrency: number; limits: Limits; log: (line: string) => void }): Promise<MemoryResult> {
  const [{ locker, connections }] = (await open(
    set,
    CLIENTS.filter((p) => p.name === 'quorumlock'),
  )) as [Opened];
  const inc = incidents();
  const sampleEvery = Math.min(100_000, Math.max(1000, Math.floor(o.cycles / 10)));
  const warmupCycles = Math.min(50_000, sampleEvery);
  const total = warmupCycles + o.cycles;
  const samples: MemorySample[] = [];
  let started = 0;
  let done = 0;
  let measuredFrom = now();
  const sample = () => {
    forceGc?.();
    const { rss, heapUsed } = process.memoryUsage();
    const s = { cycles: done - warmupCycles, rssMB: rss / 2 ** 20, heapUsedMB: heapUsed / 2 ** 20, elapsedS: (now() - measuredFrom) / 1000 };
    samples.push(s);
    o.log(`  ${s.cycles} cycles: rss ${s.rssMB.toFixed(1)} MB, heapUsed ${s.heapUsedMB.toFixed(1)} MB (${s.elapsedS.toFixed(0)} s)`);
  };
  const loop = async () => {
    while (started < total) {
      started++;
      await cycle(locker, `fig6:${started}`, TTL, o.limits, inc);
      done++;
      if (done === warmupCycles) {
        measuredFrom = now();
        sample();
      } else if (done > warmupCycles && (done - warmupCycles) % sampleEvery === 0) sample();
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, loop));
  const elapsed = (now() - measuredFrom) / 1000;
  await locker.close();
  await drainAndClose(connections);
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  return {
    cycles: o.cycles,
    warmupCycles,
    concurrency: o.concurrency,
    sampleEvery,
    gcForced: forceGc !== undefined,
    samples,
    rssGrowthMB: last.rssMB - first.rssMB,
    heapGrowthMB: last.heapUsedMB - first.heapUsedMB,
    perSecond: o.cycles / elapsed,
    incidents: inc,
  };
}
