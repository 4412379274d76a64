/**
 * A chaos scenario: 5 masters, 4 independent clients contending for one resource through the
 * checker, and one fault driver, for a given number of seconds. runScenario() returns the
 * analysed result; run.ts prints many of them as a table, chaos.test.ts asserts on short runs.
 */
import Redis from 'ioredis';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock, type RedlockOptions } from '../../src/index.js';
import { startMasters, type Master, type MasterSet } from '../harness/index.js';
import { processBackend } from '../harness/process.js';
import { acquiredWithin, contend, fenceViolations, intervalOf, overlaps, quantile } from './checker.js';
import { killRestart, majorityPause, minorityLatency, minorityPause, none, type Fault } from './faults.js';
import { TcpProxy } from './proxy.js';
import { chaosLibrary, openMembers, type Address, type ChaosLibrary, type Members } from './clients.js';

export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
// libfaketime alone deadlocks redis-server at start-up (with jemalloc); glibc preloaded after it does not.
export const LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
// Inside the model: a member 1.2x fast drops a key after ttl / 1.2, i.e. 16.7 % early, and the
// clock-drift scenario runs with driftFactor 0.25, which allows for that. (A faster clock than
// driftFactor covers is outside Redlock's model, on a minority too: see README, Safety model.)
const FAST_CLOCK_RATE = 1.2;
const DRIFT_FACTOR = 0.25;

interface ScenarioSpec {
  ttl: number;
  /** Redlock's driftFactor; 0.01 (the default) unless the scenario's clocks need more. */
  driftFactor?: number;
  maxLockTtl: number;
  /** Fraction of the validity each holding lasts. */
  hold: [number, number];
  /** Route every client through a TcpProxy per master (latency, blackhole). */
  proxied: boolean;
  startMasters(): Promise<MasterSet>;
  fault: Fault;
}

const five = () => startMasters(5);

export const scenarios = {
  // Long holds: the second client must get in while the first still holds (see faults.ts).
  'kill-restart': { ttl: 1000, maxLockTtl: 2000, hold: [0.5, 0.8], proxied: true, startMasters: five, fault: killRestart },
  'minority-pause': { ttl: 1000, maxLockTtl: 2000, hold: [0.02, 0.2], proxied: false, startMasters: five, fault: minorityPause },
  'majority-pause': { ttl: 1000, maxLockTtl: 2000, hold: [0.02, 0.2], proxied: false, startMasters: five, fault: majorityPause },
  'minority-latency': { ttl: 1000, maxLockTtl: 2000, hold: [0.02, 0.2], proxied: true, startMasters: five, fault: minorityLatency },
  // Holds up to 90 % of the validity, so the fast members drop their keys (at ~ttl / 1.2) around
  // the end of holdings: driftFactor must account for it, and does.
  'clock-drift': { ttl: 1000, maxLockTtl: 2000, driftFactor: DRIFT_FACTOR, hold: [0.3, 0.9], proxied: false, startMasters: startDriftingMasters, fault: none },
} satisfies Record<string, ScenarioSpec>;

export type ScenarioName = keyof typeof scenarios;
export const scenarioNames = Object.keys(scenarios) as ScenarioName[];

export interface RunOptions {
  seconds: number;
  quarantine: boolean;
  fencing: boolean;
  /**
   * The clients as one process: their Redlocks share one set of connections, beside a Redlock
   * that keeps BACKGROUND locks of its own going on them. The contended calls then go out in the
   * same batches as others (src/members/batching.ts), through the faults.
   */
  oneProcess?: boolean;
}

export interface ScenarioResult {
  scenario: ScenarioName;
  backend: string;
  /** The member clients' library (QUORUMLOCK_CHAOS_CLIENT: clients.ts). */
  client: ChaosLibrary;
  quarantine: boolean;
  fencing: boolean;
  seconds: number;
  ttl: number;
  maxLockTtl: number;
  acquisitions: number;
  /** overlaps + fence + window violations */
  violations: number;
  overlapViolations: number;
  fenceViolations: number;
  /** majority-pause: acquisitions that started and ended while a majority was paused. */
  windowViolations: number;
  maxOverlapMs: number;
  failedAcquires: number;
  /** By the last attempt's outcome: 'taken' here means waiting in line ran out of budget. */
  failedBy: Record<string, number>;
  p50AcquireMs: number;
  p99AcquireMs: number;
  /** Holdings that came with a fencing token. */
  fenced: number;
  faults: Record<string, number>;
}

const CLIENTS = 4;
/** oneProcess: the locks taken and released at once beside the contenders, each on a resource of its own. */
const BACKGROUND = 16;
const RESOURCE = 'chaos:resource';
/** How long one acquire may wait in line before it counts as failed. */
const WAIT_TIMEOUT_MS = 5000;

/**
 * Member clients to `addresses`, connected, of the library the run chose (clients.ts), in its
 * 'fail-fast' profile: a member that is down or cut off simply does not vote. Every library's
 * default would queue commands while disconnected (and ioredis re-sends unanswered ones after a
 * reconnect): a holder's SET would then land late on a healed or restarted member, which happens
 * to hide the restart hazard, and nothing guarantees it does.
 */
export function connectAll(addresses: readonly Address[]): Promise<Members> {
  return openMembers(addresses, 'fail-fast');
}

/** 3 normal masters and 2 whose clocks run 1.2× fast (libfaketime). Always processes: env needs them. */
async function startDriftingMasters(): Promise<MasterSet> {
  for (const path of [LIBFAKETIME, LIBC]) {
    if (!existsSync(path)) throw new Error(`clock-drift needs ${path}: apt-get install -y faketime (Debian/Ubuntu, x86_64)`);
  }
  const env = { LD_PRELOAD: `${LIBFAKETIME}:${LIBC}`, FAKETIME: `+0 x${FAST_CLOCK_RATE}` };
  const normal = await processBackend.start(3);
  const fast = await processBackend.start(2, { env }).catch(async (error: unknown) => {
    await normal.stop();
    throw error;
  });
  const masters: Master[] = [...normal.masters, ...fast.masters];
  return { masters, stop: () => Promise.all([normal.stop(), fast.stop()]).then(() => undefined) };
}

/** How fast a member's clock runs against ours, from two TIME readings 500 ms apart. */
async function clockRate(client: Redis): Promise<number> {
  const read = async () => {
    const [seconds, micros] = await client.time();
    return { server: Number(seconds) * 1000 + Number(micros) / 1000, local: performance.now() };
  };
  const first = await read();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const second = await read();
  return (second.server - first.server) / (second.local - first.local);
}

export async function runScenario(name: ScenarioName, options: RunOptions): Promise<ScenarioResult> {
  const spec: ScenarioSpec = scenarios[name];
  const { ttl, maxLockTtl } = spec;
  const set = await spec.startMasters();
  const proxies: TcpProxy[] = [];
  const connections: Members[] = [];
  const redlocks: Redlock[] = [];
  let background: Redlock | undefined;
  try {
    if (spec.proxied) proxies.push(...(await Promise.all(set.masters.map((master) => TcpProxy.start(master)))));
    const addresses = set.masters.map((master, i) => ({ host: '127.0.0.1', port: proxies[i]?.port ?? master.port }));
    const redlockOptions: RedlockOptions = { nodeTimeout: 50, maxLockTtl, quarantine: options.quarantine, driftFactor: spec.driftFactor ?? 0.01 };
    const shared = options.oneProcess ? await connectAll(addresses) : undefined;
    if (shared) connections.push(shared);
    for (let i = 0; i < CLIENTS; i++) {
      const members = shared ?? (await connectAll(addresses));
      if (!shared) connections.push(members);
      redlocks.push(new Redlock(members.clients, redlockOptions));
    }
    if (shared) background = new Redlock(shared.clients, { ...redlockOptions, retryCount: 0 });
    // The masters are brand new: the operator's one-time declaration, or none would count for maxLockTtl.
    await redlocks[0]!.trustMembers();
    const faults: Record<string, number> = {};
    if (name === 'clock-drift') {
      // Proof that the fast clocks are in effect (they are not on a backend that ignores env).
      // On admin connections of our own: the members' clients may be of another library.
      const admins = set.masters.slice(3).map(({ host, port }) => new Redis({ host, port }));
      const rates = await Promise.all(admins.map(clockRate)).finally(() => admins.forEach((admin) => admin.disconnect()));
      if (rates.some((rate) => rate < FAST_CLOCK_RATE - 0.05))
        throw new Error(`clock-drift: fast members run at ${rates.map((r) => r.toFixed(2)).join(', ')}× instead of ${FAST_CLOCK_RATE}×`);
      faults.fastMembers = rates.length;
      faults.fastClockRate = Number(Math.min(...rates).toFixed(2));
    }

    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), options.seconds * 1000);
    const contenders = contend({
      redlocks,
      resource: RESOURCE,
      ttl,
      hold: spec.hold,
      acquire: { retryCount: Infinity, waitTimeout: WAIT_TIMEOUT_MS, fencing: options.fencing },
      signal: stop.signal,
    });
    const fault = spec.fault({
      masters: set.masters,
      proxies,
      active: contenders.active,
      memberIndex: (member) => addresses.findIndex(({ host, port }) => member === `${host}:${port}/0`),
      ttl,
      signal: stop.signal,
    });
    // Either side failing stops both; the failure is rethrown once both have wound down.
    const failed = (error: unknown): never => {
      stop.abort();
      throw error;
    };
    let backgroundLocks = 0;
    const backgroundLoops = Array.from({ length: background ? BACKGROUND : 0 }, async (_, loop) => {
      for (let n = 0; !stop.signal.aborted; n++) {
        const lock = await background!.acquire(`chaos:background:${loop}:${n}`, ttl).catch(() => undefined);
        if (lock) backgroundLocks++;
        // A failed attempt (a member down or paused) is tried again after a short pause, not in a tight loop.
        await (lock ? lock.release().catch(() => undefined) : sleep(20));
      }
    });
    const [recorded, injected] = await Promise.allSettled([contenders.done.catch(failed), fault.catch(failed)]);
    await Promise.all(backgroundLoops);
    if (background) faults.backgroundLocks = backgroundLocks;
    clearTimeout(timer);
    if (recorded.status === 'rejected') throw recorded.reason;
    if (injected.status === 'rejected') throw injected.reason;
    const recording = recorded.value;
    const report = injected.value;

    const { holdings } = recording;
    const overlap = overlaps(holdings.map(intervalOf));
    const fence = fenceViolations(holdings);
    const windowViolations = acquiredWithin(holdings, report.windows ?? []);
    return {
      scenario: name,
      client: chaosLibrary,
      backend: name === 'clock-drift' ? 'process' : (process.env.QUORUMLOCK_TEST_BACKEND ?? 'process'),
      quarantine: options.quarantine,
      fencing: options.fencing,
      seconds: options.seconds,
      ttl,
      maxLockTtl,
      acquisitions: holdings.length,
      violations: overlap.count + fence + windowViolations,
      overlapViolations: overlap.count,
      fenceViolations: fence,
      windowViolations,
      maxOverlapMs: overlap.maxOverlapMs,
      failedAcquires: recording.failed,
      failedBy: recording.failedBy,
      p50AcquireMs: quantile(recording.latenciesMs, 0.5),
      p99AcquireMs: quantile(recording.latenciesMs, 0.99),
      fenced: holdings.filter((h) => h.fence !== undefined).length,
      faults: { ...faults, ...report.counts },
    };
  } finally {
    await Promise.all(redlocks.map((redlock) => redlock.quit()));
    await background?.quit();
    for (const members of connections) members.close();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await set.stop();
  }
}
