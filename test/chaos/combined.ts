/**
 * The combined chaos scenario (issue 10): faults of every kind interleaved at random (seeded) for
 * a minute, against 5 real redis-server members, while independent clients hold one of a few
 * resources under `using()` (auto-extension) with `{ fencing: true }` and write to a protected
 * store (a separate redis-server) through `fencedWrite` at the start and end of every holding.
 *
 * The member clients are of the library QUORUMLOCK_CHAOS_CLIENT names (clients.ts), with that
 * library's defaults: with ioredis' (autoResendUnfulfilledCommands, the offline queue) a command
 * written to a member that dies is re-sent to the new process, one written while a link is held
 * arrives late, one in flight at a failover reaches the promoted replica. That is what users run
 * with, and what the library must be safe under (docs/internals.md#re-send-after-reconnect).
 * Admin connections, MONITOR and the protected store stay on ioredis.
 *
 * Faults (never more than a minority of members impaired at once, counting a restarted or
 * failed-back member as impaired until its quarantine is over and a fenced holding has counted
 * it again, which syncs its fence counter; at most two faults at a time):
 * - kill: SIGSTOP a member (commands pile up unanswered), SIGKILL it and start it empty on the
 *   same port; ioredis re-sends the unanswered commands to the new process (node-redis and GLIDE
 *   reject them).
 * - hold: one member's proxy holds client→server for 100–800 ms, then delivers it all in order.
 * - failover: member PAIR is a master S1 with a replica S2 behind a fixed address (a proxy).
 *   S2 is promoted (REPLICAOF NO ONE) and the address moved to it; S1 is demoted under S2 (a
 *   resync replaces its data); S1 is promoted back and the address moved back; S2 replicates S1.
 * - pause: SIGSTOP up to two members (the holder's, first) for ~400 ms around a due extension.
 * Some holders overrun: they are allowed no extension and ignore the lost signal, so their last
 * write comes after a successor's, and the store must refuse it.
 *
 * Checks (analyse()): no two holdings of one resource overlap on the clients' monotonic clock;
 * fence tokens strictly increase in acquire order and in the order the store accepted writes
 * (read with MONITOR on the store, so it is the server's own order); no write is accepted once a
 * higher token was accepted, and none from a holder still holding is refused.
 */
import Redis from 'ioredis';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setMaxListeners } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { channels, fencedWrite, LockAcquireError, LockLostError, Redlock } from '../../src/index.js';
import type { Master, MasterSet } from '../harness/index.js';
import { processBackend } from '../harness/process.js';
import {
  analyse,
  FAULT_KINDS,
  type CombinedResult,
  type FaultCounts,
  type FaultEvent,
  type FaultKind,
  type Holding,
  type Recorded,
  type Write,
} from './combined-check.js';
import { sleep } from './faults.js';
import { TcpProxy } from './proxy.js';
import { openMembers, type Members } from './clients.js';
import { mulberry32 } from '../harness/prng.js';

const MEMBERS = 5;
/** The member that is a master + replica pair (failover and failback). */
const PAIR = 4;
/** At most this many members impaired at once: a minority of 5. */
const MINORITY = 2;
const TTL = 1000;
/** Also the quarantine: a restarted or promoted member counts again this long after. */
const MAX_LOCK_TTL = 2000;
const RESOURCES = ['chaos:combined:a', 'chaos:combined:b'] as const;
const CLIENTS = 5;
/** How long one acquire may wait in line before it counts as failed. */
const WAIT_TIMEOUT_MS = 6000;
/**
 * Every OVERRUN_EVERY-th holding of a client overruns its lock (no extension, the lost signal
 * ignored), staggered across clients so that even a short run has some from the start.
 */
const OVERRUN_EVERY = 5;
/** How long a run may go on past its `seconds` for its first overrunner's late write and for every fault kind to start. */
const COVERAGE_GRACE_MS = 15_000;
/** A holding lasts this many ttls, so most see one or more extensions. */
const HOLD_TTLS: [number, number] = [0.4, 2.5];
/** The watchdog's default: extend when a third of the ttl is left. */
const EXTEND_THRESHOLD = TTL / 3;

/** Relative frequency after the first round (which runs each kind once). */
const FAULT_WEIGHTS: Record<FaultKind, number> = { kill: 3, hold: 4, failover: 1.5, pause: 3 };

export interface CombinedOptions {
  seconds: number;
  /** Seeds the fault schedule, the holds and the resource picks (timing still varies). */
  seed?: number;
  /**
   * false: the restart quarantine off (unsafe), the control run that shows the checks catch a
   * second holder when a restarted or failed-over member forgets a lock. Default true.
   */
  quarantine?: boolean;
  /**
   * false: a restarted or failed-back member counts as impaired only until its quarantine is
   * over, not until its fence counter was synced again. More members can then have lost their
   * counters at once than a minority, and fenced acquires may fail 'unfenced' from then on (the
   * library's documented answer is restoreFencing()): for exploring that, not for the suite.
   * Default true.
   */
  waitForRepair?: boolean;
}

// ---------------------------------------------------------------------------------------------
// Seeded randomness

/** mulberry32 (test/harness/prng.ts): small, fast, good enough to make a schedule reproducible from its seed. */
const random = mulberry32;

type Rng = () => number;
const between = (rng: Rng, min: number, max: number) => min + rng() * (max - min);
function shuffle<T>(rng: Rng, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A plain wait, never cut short (unlike faults.ts' sleep, which the stop ends early). */
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Which members are impaired: a fault reserves its members before it touches them and frees
 * them only once they count again (after the quarantine that follows a restart or a promotion).
 * Reservations never exceed MINORITY members, so a quorum of healthy members always remains.
 */
class Impairments {
  readonly #busy = new Map<number, FaultKind>();
  /** [time, members impaired from then on], for the liveness figures. */
  readonly changes: [number, number][] = [];
  max = 0;

  get count(): number {
    return this.#busy.size;
  }

  isBusy(member: number): boolean {
    return this.#busy.has(member);
  }

  tryReserve(members: readonly number[], kind: FaultKind): boolean {
    if (members.length === 0 || members.some((m) => this.#busy.has(m)) || this.#busy.size + members.length > MINORITY) return false;
    for (const m of members) this.#busy.set(m, kind);
    this.#changed();
    return true;
  }

  free(members: readonly number[]): void {
    for (const m of members) this.#busy.delete(m);
    this.#changed();
  }

  #changed(): void {
    this.changes.push([performance.now(), this.#busy.size]);
    this.max = Math.max(this.max, this.#busy.size);
  }
}

// ---------------------------------------------------------------------------------------------
// Servers

interface Pair {
  s1: Master;
  s2: Master;
  /** Direct (not proxied) connections for REPLICAOF and INFO. */
  s1Admin: Redis;
  s2Admin: Redis;
  dirs: string[];
  /** Which of the two the fixed address reaches now. */
  current: 's1' | 's2';
  stop(): Promise<void>;
}

function admin(master: Master): Redis {
  const client = new Redis({ host: master.host, port: master.port });
  client.on('error', () => {}); // restarts are the point here
  return client;
}

/**
 * S1 a master, S2 its replica. Each in its own directory; diskless sync on the master side and
 * swapdb loading on the replica side write no RDB file, so a restart always comes back empty.
 */
async function startPair(): Promise<Pair> {
  const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'quorumlock-combined-'))));
  const common = (dir: string) => (port: number) => [
    '--dir',
    dir,
    '--dbfilename',
    `dump-${port}.rdb`,
    '--repl-diskless-sync',
    'yes',
    '--repl-diskless-sync-delay',
    '0',
    '--repl-diskless-load',
    'swapdb',
  ];
  const started: MasterSet[] = [];
  try {
    started.push(await processBackend.start(1, { args: common(dirs[0]!) }));
    const s1 = started[0]!.masters[0]!;
    started.push(await processBackend.start(1, { args: (port) => [...common(dirs[1]!)(port), '--replicaof', s1.host, String(s1.port)] }));
    const s2 = started[1]!.masters[0]!;
    const pair: Pair = {
      s1,
      s2,
      s1Admin: admin(s1),
      s2Admin: admin(s2),
      dirs,
      current: 's1',
      async stop() {
        pair.s1Admin.disconnect();
        pair.s2Admin.disconnect();
        await Promise.all(started.map((set) => set.stop()));
        for (const dir of dirs) await rm(dir, { recursive: true, force: true });
      },
    };
    await replicaInSync(pair.s2Admin, 10_000);
    return pair;
  } catch (error) {
    await Promise.all(started.map((set) => set.stop()));
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/** Resolves once `replica` has its link to its master up and no sync in progress. */
async function replicaInSync(replica: Redis, timeoutMs: number): Promise<void> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const info = await replica.info('replication').catch(() => '');
    if (info.includes('master_link_status:up') && info.includes('master_sync_in_progress:0')) return;
    if (performance.now() > end) throw new Error(`combined: replica not in sync after ${timeoutMs} ms:\n${info}`);
    await delay(20);
  }
}

async function syncCounts(server: Redis): Promise<{ full: number; partial: number }> {
  const info = await server.info('stats');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { full: field('sync_full'), partial: field('sync_partial_ok') };
}

// ---------------------------------------------------------------------------------------------
// The run

export async function runCombined(options: CombinedOptions): Promise<CombinedResult> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rng = random(seed);
  const t0 = performance.now();

  const plain = await processBackend.start(MEMBERS - 1);
  const started: { stop(): Promise<void> }[] = [plain];
  const proxies: TcpProxy[] = [];
  const connections: Members[] = [];
  const stores: Redis[] = [];
  const redlocks: Redlock[] = [];
  // The client MONITOR was asked on, and the connection monitor() opened for it: both to close.
  let monitorOwner: Redis | undefined;
  let monitor: Redis | undefined;
  const extendMessages: { extended: boolean; reason?: string }[] = [];
  const onExtend = (message: unknown) => {
    const m = message as { resources: string[]; extended: boolean; reason?: string };
    if (m.resources.some((r) => (RESOURCES as readonly string[]).includes(r)))
      extendMessages.push({ extended: m.extended, ...(m.reason ? { reason: m.reason } : {}) });
  };
  subscribe(channels.extend.name, onExtend);
  try {
    const pair = await startPair();
    started.push(pair);
    const storeSet = await processBackend.start(1);
    started.push(storeSet);
    const storeServer = storeSet.masters[0]!;

    const processOf = (member: number): Master => (member === PAIR ? pair[pair.current] : plain.masters[member]!);
    for (let i = 0; i < MEMBERS; i++) proxies.push(await TcpProxy.start(i === PAIR ? pair.s1 : plain.masters[i]!));
    const memberIndex = new Map(proxies.map((proxy, i) => [`127.0.0.1:${proxy.port}/0`, i]));

    // Every write the store accepts, in the store's own order: the guard's SET of the data key.
    monitorOwner = new Redis({ host: storeServer.host, port: storeServer.port });
    monitorOwner.on('error', () => {});
    monitor = await monitorOwner.monitor();
    monitor.on('error', () => {});
    const accepted: { resource: string; holding: number; fence: number }[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua' || String(args[0]).toUpperCase() !== 'SET') return;
      const resource = RESOURCES.find((r) => args[1] === dataKey(r));
      if (!resource) return;
      const [holding, , fence] = String(args[2]).split(':');
      accepted.push({ resource, holding: Number(holding), fence: Number(fence) });
    });

    for (let c = 0; c < CLIENTS; c++) {
      const members = await openMembers(
        proxies.map((proxy) => ({ host: '127.0.0.1', port: proxy.port })),
        'defaults',
      );
      connections.push(members);
      const store = new Redis({ host: storeServer.host, port: storeServer.port });
      store.on('error', () => {});
      stores.push(store);
      redlocks.push(new Redlock(members.clients, { maxLockTtl: MAX_LOCK_TTL, quarantine: options.quarantine ?? true }));
    }
    await Promise.all(stores.map((client) => client.ping()));
    // The members are brand new: the operator's one-time declaration (S2 shares S1's data).
    await redlocks[0]!.trustMembers();

    const stop = new AbortController();
    // Every acquire under way and every fault's sleep listens to it: more than the default 10.
    setMaxListeners(100, stop.signal);
    const stopped = new Promise<void>((resolve) => stop.signal.addEventListener('abort', () => resolve(), { once: true }));
    const impairments = new Impairments();
    const holdings: Holding[] = [];
    const active = new Set<Holding>();
    const writes: Write[] = [];
    const failedBy: Record<string, number> = {};
    const failures: Recorded['failures'] = [];
    const latencies: number[] = [];
    const faultEvents: FaultEvent[] = [];
    const counts: FaultCounts = {
      kills: 0,
      inFlightAtKill: 0,
      holds: 0,
      heldMs: 0,
      failovers: 0,
      failbacks: 0,
      fullResyncs: 0,
      partialResyncs: 0,
      pauses: 0,
      pausedExtensions: 0,
      pausedExtensionsSurvived: 0,
      skipped: 0,
      maxImpaired: 0,
      longestRepairMs: 0,
      repairMs: 0,
      unrepaired: 0,
    };

    /** Fault kinds started so far: the run does not end before each has (see `end` below). */
    const startedKinds = new Set<FaultKind>();

    // ---- holders --------------------------------------------------------------------------
    let nextHolding = 1;
    let overrunsWritten = 0;
    async function holder(client: number): Promise<void> {
      const own = random(seed + 1 + client);
      const redlock = redlocks[client]!;
      const store = stores[client]!;
      while (!stop.signal.aborted) {
        const resource = RESOURCES[Math.floor(own() * RESOURCES.length)]!;
        // Counted in holdings, not attempts: an acquire that fails does not skip an overrun.
        const n = holdings.filter((h) => h.client === client).length;
        const overrun = (n + client) % OVERRUN_EVERY === OVERRUN_EVERY - 1;
        // Overrunners hold past one ttl without extending: their lock runs out under them.
        const planMs = TTL * (overrun ? between(own, 1.3, 2.5) : between(own, ...HOLD_TTLS));
        const calledAt = performance.now();
        let holding: Holding | undefined;
        try {
          await redlock.using(
            resource,
            TTL,
            async (signal, lock) => {
              const acquiredAt = performance.now();
              holding = {
                id: nextHolding++,
                client,
                resource,
                fence: lock.fence,
                overrun,
                calledAt,
                acquiredAt,
                validUntil: acquiredAt + lock.remainingMs(),
                lockedMembers: lock.votes.filter((vote) => vote.vote === 'locked').map((vote) => memberIndex.get(vote.member) ?? -1),
                lock,
              };
              const h = holding;
              holdings.push(h);
              latencies.push(acquiredAt - calledAt);
              active.add(h);
              const held = () => h.lostAt === undefined && lock.remainingMs() > 0;
              // The latest deadline: read now + remainingMs, the clock first so it errs early.
              const sample = () => {
                const now = performance.now();
                const remaining = lock.remainingMs();
                if (remaining > 0 && h.lostAt === undefined) h.validUntil = now + remaining;
              };
              const onLost = () => {
                sample();
                h.lostAt = performance.now();
                const reason = signal.reason as unknown;
                h.lostBecause = reason instanceof LockLostError ? reason.lostBecause : String(reason);
              };
              if (signal.aborted) onLost();
              else signal.addEventListener('abort', onLost, { once: true });
              const write = async (phase: Write['phase']) => {
                if (h.fence === undefined) return; // counted as unfenced in the analysis
                const record: Write = { holding: h, phase, sentAt: performance.now(), doneAt: NaN, accepted: undefined, heldAtSend: held(), heldAtDone: false };
                writes.push(record);
                try {
                  record.accepted = await fencedWrite(store, dataKey(resource), `${h.id}:${phase}:${h.fence}`, h.fence);
                } catch {
                  record.accepted = undefined;
                }
                record.doneAt = performance.now();
                record.heldAtDone = held();
              };
              await write('start');
              const planEnd = acquiredAt + planMs;
              // Honest holders stop when the lock is lost; overrunners carry on to the end.
              while (performance.now() < planEnd && (overrun || !signal.aborted)) {
                sample();
                await delay(Math.min(10, Math.max(1, planEnd - performance.now())));
              }
              sample();
              await write('end'); // also after a loss: the guard must turn it away once superseded
              if (overrun) overrunsWritten++;
              h.releasedAt = performance.now();
              active.delete(h);
              delete h.lock;
            },
            { fencing: true, retryCount: Infinity, waitTimeout: WAIT_TIMEOUT_MS, signal: stop.signal, ...(overrun ? { maxExtensions: 0 } : {}) },
          );
        } catch (error) {
          if (error instanceof LockLostError) continue; // recorded through the signal
          if (!holding && stop.signal.aborted) return; // the stop cut an acquire short
          if (error instanceof LockAcquireError) {
            failedBy[error.outcome] = (failedBy[error.outcome] ?? 0) + 1;
            failures.push({ at: performance.now(), client, resource, outcome: error.outcome });
            continue;
          }
          throw error;
        }
      }
    }

    // ---- faults ---------------------------------------------------------------------------
    /** Members that active holdings locked, not impaired yet: where a fault hurts. */
    const heldMembers = () => [...new Set([...active].flatMap((h) => h.lockedMembers))].filter((m) => m >= 0 && !impairments.isBusy(m));
    const freeMembers = () => Array.from({ length: MEMBERS }, (_, i) => i).filter((m) => !impairments.isBusy(m));
    const choose = (preferHeld: boolean): number | undefined => {
      const pool = preferHeld && heldMembers().length > 0 ? heldMembers() : freeMembers();
      return pool.length === 0 ? undefined : pool[Math.floor(rng() * pool.length)];
    };
    const event = (kind: FaultKind, members: number[], start: number, detail: string) =>
      faultEvents.push({ kind, members, start, end: performance.now(), detail });

    /**
     * A member that lost its data (a restart) or changed lineage (a failback) has lost its fence
     * counter: it is trusted again only once a fenced acquire that counted the member synced it
     * (src/quorum/fence.ts). Until then it is still impaired: were a majority without a trusted
     * counter at once, fencing would fail safe ('unfenced') until an operator's restoreFencing().
     * Seen from outside: a fenced holding acquired from `since` on (its quarantine over) whose
     * 'locked' votes include it.
     */
    async function repaired(member: number, since: number): Promise<void> {
      if (!(options.waitForRepair ?? true)) return;
      const counted = () => holdings.some((h) => h.acquiredAt >= since && h.fence !== undefined && h.lockedMembers.includes(member));
      while (!counted() && !stop.signal.aborted) await sleep(20, stop.signal);
      if (!counted()) {
        counts.unrepaired++;
        return;
      }
      const took = Math.round(performance.now() - since);
      counts.repairMs += took;
      counts.longestRepairMs = Math.max(counts.longestRepairMs, took);
    }

    /** Reserves `members` synchronously; runs `body` and frees them after. undefined: not started. */
    function launch(kind: FaultKind, members: number[], body: () => Promise<void>): Promise<void> | undefined {
      if (!impairments.tryReserve(members, kind)) return undefined;
      return body().finally(() => impairments.free(members));
    }

    const faults: Record<FaultKind, () => Promise<void> | undefined> = {
      kill() {
        // Mostly a member some holder locked: its restart forgets a held key. (A failover dance
        // reserves the pair, so a victim there is always S1, its master then.)
        const victim = choose(rng() < 0.75);
        if (victim === undefined) return undefined;
        return launch('kill', [victim], async () => {
          const start = performance.now();
          const master = processOf(victim);
          await master.pause(); // commands pile up unanswered
          // Written and unanswered: what ioredis will re-send to the new process. Waiting in
          // line needs no command, so give the clients up to a second to send one.
          const inFlightNow = () => connections.reduce((sum, members) => sum + members.inFlight(victim), 0);
          await delay(between(rng, 100, 300));
          for (let waited = 0; inFlightNow() === 0 && waited < 1000; waited += 20) await delay(20);
          const inFlight = inFlightNow();
          if (victim === PAIR) await removeRdbFiles(pair.dirs); // the restart must come back empty
          await master.restart(); // SIGKILL (also stops a stopped process), then empty on the same port
          counts.kills++;
          counts.inFlightAtKill += inFlight;
          event('kill', [victim], start, `${inFlight} commands in flight`);
          await sleep(MAX_LOCK_TTL + 300, stop.signal); // quarantined until then: still impaired
          await repaired(victim, performance.now());
        });
      },
      hold() {
        const victim = choose(rng() < 0.6);
        if (victim === undefined) return undefined;
        const heldMs = between(rng, 100, 800);
        return launch('hold', [victim], async () => {
          const start = performance.now();
          proxies[victim]!.hold('toServer');
          await delay(heldMs); // not cut short by the stop: a hold always ends in a release
          proxies[victim]!.release('toServer');
          counts.holds++;
          counts.heldMs += Math.round(heldMs);
          event('hold', [victim], start, `client→server held ${Math.round(heldMs)} ms`);
        });
      },
      failover() {
        return launch('failover', [PAIR], async () => {
          const start = performance.now();
          const before = await syncCounts(pair.s2Admin);
          await replicaInSync(pair.s2Admin, 10_000);
          await pair.s2Admin.replicaof('NO', 'ONE');
          // A moment of traffic still reaching S1 makes it diverge from S2, as a real failover's
          // old master does: its demotion then needs a full resync, which replaces its data.
          await delay(between(rng, 10, 50));
          pair.current = 's2';
          proxies[PAIR]!.retarget(pair.s2);
          counts.failovers++;
          await sleep(between(rng, 800, 2500), stop.signal);
          await pair.s1Admin.replicaof(pair.s2.host, String(pair.s2.port));
          await replicaInSync(pair.s1Admin, 10_000);
          const after = await syncCounts(pair.s2Admin);
          counts.fullResyncs += after.full - before.full;
          counts.partialResyncs += after.partial - before.partial;
          // Failback: S1 promoted again (new replication id), the address moved back, S2 under it.
          await pair.s1Admin.replicaof('NO', 'ONE');
          pair.current = 's1';
          proxies[PAIR]!.retarget(pair.s1);
          const s1Before = await syncCounts(pair.s1Admin);
          await pair.s2Admin.replicaof(pair.s1.host, String(pair.s1.port));
          counts.failbacks++;
          await replicaInSync(pair.s2Admin, 10_000);
          const s1After = await syncCounts(pair.s1Admin);
          counts.fullResyncs += s1After.full - s1Before.full;
          counts.partialResyncs += s1After.partial - s1Before.partial;
          event('failover', [PAIR], start, `S2 promoted, S1 resynced under it (${after.full - before.full ? 'full' : 'partial'}) and promoted back`);
          await sleep(MAX_LOCK_TTL + 300, stop.signal); // S1's new epoch sits out its quarantine
          await repaired(PAIR, performance.now());
        });
      },
      pause() {
        // The holding whose extension comes next, 120–700 ms from now (overrunners never extend).
        let target: { holding: Holding; dueIn: number } | undefined;
        for (const h of active) {
          if (h.overrun || h.lostAt !== undefined || !h.lock) continue;
          const dueIn = h.lock.remainingMs() - EXTEND_THRESHOLD;
          if (dueIn >= 120 && dueIn <= 700 && (!target || dueIn < target.dueIn)) target = { holding: h, dueIn };
        }
        if (!target) return undefined;
        const budget = MINORITY - impairments.count;
        const own = shuffle(
          rng,
          target.holding.lockedMembers.filter((m) => m >= 0 && !impairments.isBusy(m)),
        );
        const others = shuffle(
          rng,
          freeMembers().filter((m) => !own.includes(m)),
        );
        const members = [...own, ...others].slice(0, Math.min(2, budget));
        const { holding, dueIn } = target;
        const pausedMs = between(rng, 350, 450);
        return launch('pause', members, async () => {
          await delay(Math.max(0, dueIn - 100)); // starts ~100 ms before the extension is due
          const start = performance.now();
          const paused = members.map(processOf);
          try {
            await Promise.all(paused.map((master) => master.pause()));
            counts.pauses++;
            await delay(pausedMs);
          } finally {
            await Promise.all(paused.map((master) => master.resume()));
          }
          counts.pausedExtensions++;
          // Still held once the members answer again: the extension rode through the stall.
          await delay(50);
          const survived = holding.lostAt === undefined;
          if (survived) counts.pausedExtensionsSurvived++;
          event(
            'pause',
            members,
            start,
            `SIGSTOP ${Math.round(pausedMs)} ms around holding #${holding.id}'s extension: ${survived ? 'still held' : `lost (${holding.lostBecause})`}`,
          );
        });
      },
    };

    async function schedule(): Promise<void> {
      const running = new Set<Promise<void>>();
      const failures: unknown[] = [];
      // Each kind once first, in a random order, so even a short run sees all four.
      const firstRound = shuffle(rng, FAULT_KINDS);
      const total = FAULT_KINDS.reduce((sum, kind) => sum + FAULT_WEIGHTS[kind], 0);
      const pick = (): FaultKind => {
        let r = rng() * total;
        for (const kind of FAULT_KINDS) if ((r -= FAULT_WEIGHTS[kind]) < 0) return kind;
        return 'hold';
      };
      await sleep(500, stop.signal); // let the clients settle in first
      while (!stop.signal.aborted) {
        if (running.size >= 2) {
          await Promise.race([...running, stopped]);
          continue;
        }
        const kind = firstRound.shift() ?? pick();
        const run = faults[kind]();
        if (run) {
          startedKinds.add(kind);
          // A fault that throws is a broken harness: it ends the run, and is rethrown below.
          const tracked: Promise<void> = run
            .catch((error: unknown) => {
              failures.push(error);
              stop.abort();
            })
            .finally(() => running.delete(tracked));
          running.add(tracked);
          await sleep(between(rng, 300, 1500), stop.signal);
        } else {
          // Not now (the minority is impaired, or no extension is due): a first-round kind is
          // tried again after the others, a picked one is simply dropped.
          if (!startedKinds.has(kind)) firstRound.push(kind);
          counts.skipped++;
          await sleep(100, stop.signal);
        }
      }
      await Promise.all(running);
      if (failures.length > 0) throw failures[0];
    }

    // The run ends after `seconds`, but not before an overrunner's late write has reached the
    // store (what the fence is there for) and every fault kind has started (a kind waits while
    // two faults run or the minority is impaired: a kill and a failover can fill a short run),
    // waiting at most COVERAGE_GRACE_MS more for them.
    const runStart = performance.now();
    let timer: NodeJS.Timeout;
    const end = () => {
      const covered = overrunsWritten > 0 && startedKinds.size === FAULT_KINDS.length;
      if (covered || performance.now() - runStart >= options.seconds * 1000 + COVERAGE_GRACE_MS) stop.abort();
      else timer = setTimeout(end, 50);
    };
    timer = setTimeout(end, options.seconds * 1000);
    // Either side failing stops both; the failure is rethrown once both have wound down.
    const failed = (error: unknown): never => {
      stop.abort();
      throw error;
    };
    const holders = Promise.all(Array.from({ length: CLIENTS }, (_, c) => holder(c).catch(failed)));
    const [held, injected] = await Promise.allSettled([holders, schedule().catch(failed)]);
    clearTimeout(timer);
    const stopAt = performance.now();
    if (held.status === 'rejected') throw held.reason;
    if (injected.status === 'rejected') throw injected.reason;
    counts.maxImpaired = impairments.max;

    // Every accepted write must have shown up on MONITOR before its order is judged.
    const acceptedCount = writes.filter((w) => w.accepted === true).length;
    for (let waited = 0; accepted.length < acceptedCount && waited < 2000; waited += 20) await delay(20);

    return analyse({
      seed,
      seconds: options.seconds,
      quarantine: options.quarantine ?? true,
      ttl: TTL,
      maxLockTtl: MAX_LOCK_TTL,
      clients: CLIENTS,
      resources: RESOURCES,
      t0,
      runStart,
      stopAt,
      holdings,
      writes,
      accepted,
      faultEvents,
      impaired: impairments.changes,
      counts,
      failedBy,
      failures,
      latencies,
      extendMessages,
    });
  } finally {
    unsubscribe(channels.extend.name, onExtend);
    await Promise.all(redlocks.map((redlock) => redlock.quit()));
    for (const members of connections) members.close();
    for (const client of stores) client.disconnect();
    monitor?.disconnect();
    monitorOwner?.disconnect();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await Promise.all(started.map((part) => part.stop()));
  }
}

const dataKey = (resource: string) => `store:${resource}`;

async function removeRdbFiles(dirs: readonly string[]): Promise<void> {
  for (const dir of dirs) {
    if (!existsSync(dir)) continue;
    for (const file of await readdir(dir)) if (file.endsWith('.rdb')) await rm(join(dir, file), { force: true });
  }
}
