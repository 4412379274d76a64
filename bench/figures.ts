/**
 * The six measurements of bench/run.ts. Each figure opens fresh connections for every client (and
 * every handoff worker), so nothing one figure left behind (a hung operation, commands queued
 * behind a paused member) can touch the next; each resumes what it paused and closes what it opened.
 */
import type Redis from 'ioredis';
import { defaults } from '../src/index.js';
import type { MasterSet } from '../test/harness/types.js';
import {
  bounded,
  commandstats,
  connect,
  describeError,
  drainAndClose,
  forceGc,
  max,
  monitorCalls,
  now,
  quantile,
  ready,
  rotation,
  serverCpuUs,
  sleep,
  type Bounded,
  type CommandTotals,
  type MonitoredCalls,
} from './lib.js';
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
  const opened = await Promise.all(
    peers.map(async (peer) => {
      if (peer.open) return { peer, connections: [], locker: await peer.open(set) };
      const connections = connect(set);
      return { peer, connections, locker: peer.create(connections, mode) };
    }),
  );
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

export async function uncontended(set: MasterSet, o: { cycles: number; warmup: number; limits: Limits; peers?: readonly Peer[] }): Promise<UncontendedRow[]> {
  const opened = await open(set, o.peers ?? ALL);
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
// 2. Cycles/s on distinct keys at concurrency 1, 16, 128, 512: N loops for a time slice, interleaved
// slices (one client at a time), with the slice's failed acquires and the bench process's CPU per cycle

/** The longest a slice waits for every loop's first cycle before opening its window anyway. */
const RAMP_LIMIT_MS = 2000;

export interface ThroughputSlice {
  client: PeerName;
  round: number;
  concurrency: number;
  /** Cycles completed inside the measured window (what cycles/s counts). */
  cycles: number;
  perSecond: number;
  /** From the slice's start until every loop had finished its first cycle: the window opened then. */
  rampMs: number;
  /** The measured window: sliceMs, up to the first completion after it. */
  windowMs: number;
  /** From the window's close until the last loop returned. */
  drainMs: number;
  /** Acquires of the whole slice (ramp, window, drain) that rejected (any error, "could not lock" included) or hung. */
  failed: number;
  /** process.cpuUsage() (user + system) over the window, in µs, and per cycle completed in it. */
  cpuUs: number;
  cpuPerCycleUs: number;
}
export interface ThroughputResult {
  slices: ThroughputSlice[];
  incidents: Record<string, Incidents>;
}

export async function throughput(
  set: MasterSet,
  o: { concurrency: number[]; sliceMs: number; rounds: number; limits: Limits; log: (line: string) => void; peers?: readonly Peer[] },
): Promise<ThroughputResult> {
  const opened = await open(set, o.peers ?? ALL);
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
        // The garbage the slice before left (another client's) is not this slice's to collect: its
        // window's CPU would include it. As bench:cpu's turns do (lib.ts, turn).
        forceGc?.();
        // The N loops start together, so their first cycles go out as one burst and come back
        // together (at c = 512 that burst alone is longer than a quick slice). The measured window
        // opens once every loop has finished (or failed) its first cycle, when they have spread out,
        // and closes at the first completion ≥ sliceMs later; the cycles completed inside it count,
        // and the CPU over exactly that span is theirs.
        const sliceStart = now();
        let windowStart = Infinity;
        let end = Infinity;
        let closedAt: number | undefined;
        let cpuAtStart = process.cpuUsage();
        let cpuInWindow: NodeJS.CpuUsage | undefined;
        let rampedLoops = 0;
        let done = 0;
        let failed = 0;
        const openWindow = () => {
          if (windowStart !== Infinity) return;
          windowStart = now();
          end = windowStart + o.sliceMs;
          cpuAtStart = process.cpuUsage();
        };
        const rampLimit = setTimeout(openWindow, RAMP_LIMIT_MS); // a loop whose first cycle hangs does not hold the window shut
        const loop = async () => {
          let first = true;
          while (now() < end) {
            const { acquired, cycleMs } = await cycle(locker, `fig2:${c}:${++key}`, TTL, o.limits, inc[c]!);
            if (acquired.status !== 'ok') failed++;
            const at = now();
            if (closedAt === undefined && at >= windowStart) {
              if (Number.isFinite(cycleMs)) done++;
              if (at >= end) {
                closedAt = at;
                cpuInWindow = process.cpuUsage(cpuAtStart);
              }
            }
            if (first) {
              first = false;
              if (++rampedLoops === concurrency) openWindow();
            }
          }
        };
        await Promise.all(Array.from({ length: concurrency }, loop));
        clearTimeout(rampLimit);
        if (closedAt === undefined) {
          closedAt = now();
          cpuInWindow = process.cpuUsage(cpuAtStart);
        }
        const windowMs = closedAt - windowStart;
        const cpuUs = cpuInWindow!.user + cpuInWindow!.system;
        slices.push({
          client: peer.name,
          round,
          concurrency,
          cycles: done,
          perSecond: done / (windowMs / 1000),
          rampMs: windowStart - sliceStart,
          windowMs,
          drainMs: now() - closedAt,
          failed,
          cpuUs,
          cpuPerCycleUs: done > 0 ? cpuUs / done : NaN,
        });
      }
      o.log(
        `  round ${round}, concurrency ${concurrency}: ${slices
          .slice(-opened.length)
          .map((s) => `${s.client} ${s.perSecond.toFixed(0)}/s ${s.cpuPerCycleUs.toFixed(0)} µs CPU${s.failed ? ` ${s.failed} failed` : ''}`)
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

export async function handoffRound(set: MasterSet, peer: Peer, index: number, o: { seconds: number; ttl: number; limits: Limits }): Promise<HandoffRound> {
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => open(set, [peer]).then(([w]) => w!)));
  const inc = incidents();
  const resource = `fig3:${peer.name}:${index}`;
  // Warm-up on another key: loads scripts on every master, so the timed window sees steady state.
  for (const { locker } of workers) await cycle(locker, `${resource}:warm-up`, o.ttl, o.limits, inc);

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
      const acquired = await boundedAcquire(locker, resource, o.ttl, o.limits, inc);
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
  // raw, not the checked floor: one reference is enough for latency with members paused.
  const opened = await open(
    set,
    ALL.filter((peer) => peer.name !== 'checked floor'),
  );
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

// ---------------------------------------------------------------------------------------------
// 7. Server time per call: each client alone (raw included) on the 5 masters, INFO commandstats

/** Script commands: their time includes every command the script calls. */
export const SCRIPT_COMMANDS: ReadonlySet<string> = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);
/** The bench's own commands inside a window (INFO commandstats is not in its own answer). */
const ADMIN_COMMANDS: ReadonlySet<string> = new Set(['config|resetstat']);
/** Locks held through the acquire-only window and released in the release-only window. */
export const HOLD_TTL = 60_000;
/** Lock pairs run under MONITOR to find which calls come from inside scripts. */
const CALIBRATION_OPS = 20;

export interface CommandStat extends CommandTotals {
  /** Of its calls, the share MONITOR saw made from inside a script (0 when not calibrated). */
  innerShare: number;
}

export interface ServerWindow {
  /** Operations completed in the window: cycles, acquires or releases. */
  ops: number;
  /** Per command, summed over the 5 members (the bench's CONFIG RESETSTAT left out). */
  commands: Record<string, CommandStat>;
  /** Σ usec of the commands the client sent (a script's inner commands are inside its time, counted once). */
  topLevelUs: number;
  /** Σ usec of every command as commandstats lists them (a script's inner commands counted a second time). */
  allUs: number;
  /** redis-server main-thread CPU (INFO cpu, user + system) over the window, summed over the members, less an empty window's. */
  cpuUs: number;
}

export interface ServerTimeRow {
  client: PeerName;
  /** N acquire + release cycles, one at a time. */
  cycles: ServerWindow;
  /** N acquires, one at a time, the locks held (ttl 60 s) ... */
  acquire: ServerWindow;
  /** ... then released, one at a time. */
  release: ServerWindow;
  /** MONITOR saw every member's stream through (else every innerShare is 0: inner commands counted twice). */
  calibrated: boolean;
  incidents: Incidents;
}

export interface ServerTimeResult {
  rows: ServerTimeRow[];
  /** redis-server CPU of an empty window (the bench's own INFO / RESETSTAT and pauses), subtracted from every window. */
  emptyWindowCpuUs: number;
}

function innerShares(calibration: Map<string, MonitoredCalls> | undefined) {
  return (name: string): number => {
    const c = calibration?.get(name);
    return c && c.top + c.inner > 0 ? c.inner / (c.top + c.inner) : 0;
  };
}

/** RESETSTAT on every member, `run`, then every member's commandstats and the server CPU it took. */
async function serverWindow(admin: Redis[], emptyCpuUs: number, share: (name: string) => number, run: () => Promise<number>): Promise<ServerWindow> {
  await sleep(50); // a client decides at a quorum: commands to the other members may still be on their way
  const cpuBefore = await serverCpuUs(admin);
  await Promise.all(admin.map((c) => c.config('RESETSTAT')));
  const ops = await run();
  await sleep(50);
  const stats = await commandstats(admin);
  const cpuUs = (await serverCpuUs(admin)) - cpuBefore - emptyCpuUs;
  const commands: Record<string, CommandStat> = {};
  let topLevelUs = 0;
  let allUs = 0;
  for (const [name, totals] of stats) {
    if (ADMIN_COMMANDS.has(name)) continue;
    const innerShare = share(name);
    commands[name] = { ...totals, innerShare };
    allUs += totals.usec;
    topLevelUs += totals.usec * (1 - innerShare);
  }
  return { ops, commands, topLevelUs, allUs, cpuUs };
}

export async function serverTime(
  set: MasterSet,
  o: { cycles: number; warmup: number; limits: Limits; log: (line: string) => void },
): Promise<ServerTimeResult> {
  const admin = connect(set);
  await ready(admin);
  const empty: number[] = [];
  for (let i = 0; i < 3; i++)
    empty.push(
      (
        await serverWindow(
          admin,
          0,
          () => 0,
          async () => 0,
        )
      ).cpuUs,
    );
  const emptyWindowCpuUs = quantile(empty, 0.5);
  const rows: ServerTimeRow[] = [];
  let key = 0;
  try {
    for (const peer of ALL) {
      // Alone: nothing else is connected to the masters but this client and the bench's own connections.
      const [opened] = (await open(set, [peer])) as [Opened];
      const { locker } = opened;
      const inc = incidents();
      const c = ALL.indexOf(peer);
      for (let i = 0; i < o.warmup; i++) await cycle(locker, `fig7:warm:${c}:${++key}`, TTL, o.limits, inc); // scripts loaded, JIT warm

      const acquireAll = async (count: number, prefix: string, held: Held[]) => {
        for (let i = 0; i < count; i++) {
          const r = await boundedAcquire(locker, `${prefix}:${c}:${++key}`, HOLD_TTL, o.limits, inc);
          if (r.status === 'ok') held.push(r.value);
          else if (r.status === 'hung') inc.hung++;
          else noteError(inc, r.error);
        }
        return held.length;
      };
      const releaseAll = async (held: Held[]) => {
        let released = 0;
        for (const lock of held.splice(0)) {
          const r = await boundedRelease(lock, o.limits, inc);
          if (r.status === 'ok') {
            released++;
            if (!r.value) inc.releaseUnconfirmed++;
          } else if (r.status === 'hung') inc.hung++;
          else {
            inc.releaseErrors++;
            inc.firstError ??= `release: ${describeError(r.error)}`;
          }
        }
        return released;
      };

      // Which commands come from inside scripts, per phase (MONITOR, outside the measured windows).
      const held: Held[] = [];
      const acquireCalls = await monitorCalls(admin, async () => void (await acquireAll(CALIBRATION_OPS, 'fig7:cal', held)));
      const releaseCalls = await monitorCalls(admin, async () => void (await releaseAll(held)));
      const calibrated = acquireCalls !== undefined && releaseCalls !== undefined;
      const both = new Map<string, MonitoredCalls>();
      for (const calls of [acquireCalls, releaseCalls])
        for (const [name, { top, inner }] of calls ?? []) {
          const entry = both.get(name) ?? { top: 0, inner: 0 };
          both.set(name, { top: entry.top + top, inner: entry.inner + inner });
        }

      const cycles = await serverWindow(admin, emptyWindowCpuUs, innerShares(both), async () => {
        let done = 0;
        for (let i = 0; i < o.cycles; i++) if (Number.isFinite((await cycle(locker, `fig7:${c}:${++key}`, TTL, o.limits, inc)).cycleMs)) done++;
        return done;
      });
      const acquire = await serverWindow(admin, emptyWindowCpuUs, innerShares(acquireCalls), () => acquireAll(o.cycles, 'fig7:held', held));
      const release = await serverWindow(admin, emptyWindowCpuUs, innerShares(releaseCalls), () => releaseAll(held));
      await close([opened]);
      const row: ServerTimeRow = { client: peer.name, cycles, acquire, release, calibrated, incidents: inc };
      rows.push(row);
      const script = scriptTotals(cycles);
      o.log(
        `  ${peer.name}: ${(cycles.topLevelUs / cycles.ops).toFixed(1)} µs server per cycle (${(cycles.cpuUs / cycles.ops).toFixed(1)} µs CPU), ${(acquire.topLevelUs / acquire.ops).toFixed(1)} per acquire, ${(release.topLevelUs / release.ops).toFixed(1)} per release; scripts ${(script.calls / cycles.ops).toFixed(1)} calls per cycle, ${(script.usec / script.calls).toFixed(1)} µs per call${calibrated ? '' : ' (MONITOR calibration incomplete: inner commands counted twice)'}`,
      );
    }
  } finally {
    for (const client of admin) client.disconnect();
  }
  return { rows, emptyWindowCpuUs };
}

/** Calls and µs of the script commands (eval, evalsha, fcall, …) in a window. */
export function scriptTotals(w: ServerWindow): CommandTotals {
  let calls = 0;
  let usec = 0;
  for (const [name, stat] of Object.entries(w.commands))
    if (SCRIPT_COMMANDS.has(name)) {
      calls += stat.calls;
      usec += stat.usec;
    }
  return { calls, usec };
}
