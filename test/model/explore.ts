/**
 * The interleaving exploration (issue 10): the real Redlock (acquire with fencing, the fence
 * rounds, release, the quarantine, waiting in line) on a ManualClock, against fake members that
 * run the real Lua scripts (fake-redis.ts), over ioredis-shaped connections that re-send
 * unanswered commands after a reconnect (fake-client.ts). fast-check generates a Plan (members,
 * clients and their lock cycles, link speeds, the delay of every message, and faults: restarts
 * of one member at a time with commands in flight, held link directions, paused members, reset
 * connections, failover-and-failback, a lock key evicted; each armed at a time, or right after
 * the k-th lock handout), runs it deterministically, checks the properties, and shrinks a failing
 * plan.
 *
 * Properties, over the whole run:
 * - fencing: every token handed out (Lock.fence) is strictly greater than every token handed
 *   out before it for the resource: never reused, never lower. Also for probes: once the run is
 *   over and every quarantine, TTL and lease has run out, a new client locks once per quorum S
 *   of members (from the same state each time), its commands to the others held on the wire,
 *   i.e. a client that S answered first. Each probe is a legal continuation of the run; they
 *   quantify the property over "which members answer first", which a run draws only once.
 * - exclusion: no two clients hold the lock at once on the (shared) monotonic clock: a lock is
 *   held from the moment acquire() resolves until release() is called or its validity ends;
 * - the run completes (every acquire and release settles), an acquire fails only with a
 *   LockAcquireError (an outcome), and the fake saw no command it does not implement.
 * The members are declared brand new at the start (trustMembers(), as README tells operators);
 * every other setting is the default but maxLockTtl (1 s, so runs wait out a quarantine in
 * simulated seconds), and acquire()'s retryCount (3).
 *
 * Why not fc.scheduler(): it picks the next promise to resolve at random but cannot shrink its
 * choices (its shrink is empty), so a failure would come back as a long, unreadable schedule.
 * Here the interleaving is data (link speeds, per-message delays and faults on the ManualClock):
 * it shrinks like any array, toward "every message 0.1 ms, no fault", and the same data also
 * drives the real timeouts (nodeTimeout, TTLs, the quarantine), which a promise scheduler does
 * not. Messages that fall due at the same instant are delivered in the order they were sent.
 */
import fc from 'fast-check';
import { ManualClock, Redlock, type Lock } from '../../src/index.js';
import { FakeRedis, Network, type Direction, type NetEvent } from './fake-client.js';
import { FakeRedisServer } from './fake-redis.js';
import { mulberry32 } from '../harness/prng.js';

export interface Cycle {
  /** Wait before asking for the lock. */
  thinkMs: number;
  ttl: number;
  /** How long the lock is kept before release() (when won). */
  holdMs: number;
  /**
   * Which resource: 0 'r' (default), 1 's'. Members keep one fence counter for all resources,
   * so holders of different resources raise it concurrently (a review found a bug only there).
   */
  resource?: number;
}

const RESOURCES = ['r', 's'] as const;
const resourceOf = (cycle: Cycle): string => RESOURCES[cycle.resource ?? 0]!;
/** Mostly 'r', so that contention stays the common case. */
const resourceIndex = fc.constantFrom(0, 0, 1);

/**
 * A fault, armed `at` ms after its trigger: the start of the run (`after` 0), or the moment the
 * `after`-th lock is handed out (so that faults land between the steps of the protocol, not only
 * at random times).
 */
export type Fault = { after: number; at: number } &
  /**
   * Kill member `member` (its connections close with commands in flight, which ioredis re-sends
   * to the next process) and start a new process `downMs` later, its data wiped or kept. Skipped
   * while another member is down: one member at a time. `inFlight`: from `inFlight.from` ms after
   * the start of the run until the kill, client `inFlight.client`'s link to the member is held in
   * `inFlight.direction` (its commands wait on the wire, or their replies do), so that whatever
   * that client sent in that window is unanswered when the member dies.
   */
  (
    | { kind: 'restart'; member: number; downMs: number; keepData: boolean; inFlight?: { client: number; direction: Direction; from: number } }
    /**
     * Hold one direction of client `client`'s link to `member` for `ms` (a delayed link, not a cut
     * one). Client -1: the client that got the lock whose handout armed the fault (its holder).
     */
    | { kind: 'hold'; client: number; member: number; direction: Direction; ms: number }
    /** SIGSTOP member `member` for `ms`. */
    | { kind: 'pause'; member: number; ms: number }
    /** Reset client `client`'s connection to `member` (it reconnects to the same process and re-sends). */
    | { kind: 'reset'; client: number; member: number }
    /**
     * A failover and a failback, without a restart: the member's replica copies its data now, the
     * member is demoted `lagMs` later (writes made in between never reached the replica), and
     * `downMs` after that it full-resyncs from the promoted replica and is promoted back: the
     * replica's data, a new master_replid, the same run_id (issue 10, defect 2).
     */
    | { kind: 'failback'; member: number; lagMs: number; downMs: number }
    /**
     * Member `member` evicts the lock key of resource `resource` (0 'r', 1 's') if it holds one: an
     * eviction policy switched on at runtime (CONFIG SET maxmemory-policy, every connection kept),
     * which the client's INFO poll sees only later (issue 21, defect 4).
     */
    | { kind: 'evict'; member: number; resource: number }
  );

export interface Plan {
  members: number;
  clients: Cycle[][];
  /** Base latency of each link, client-major (client × members + member), each way; then 0.1 ms. */
  links: number[];
  /** Extra ms for each message, in the order messages are sent (then 0). */
  delays: number[];
  faults: Fault[];
  /** Seeds Math.random (the retry jitter) for the run. */
  seed: number;
}

export interface Handout {
  client: number;
  resource: string;
  token: number | undefined;
  at: number;
  /** When the lock stopped being held: release() called, or its validity ended. */
  end: number;
}

export interface Outcome {
  handouts: Handout[];
  violations: string[];
  /** Acquires that failed, by outcome. */
  failures: Record<string, number>;
  endedAt: number;
  trace?: NetEvent[];
}

export const SETTINGS = {
  /** Short enough that a run waits out a quarantine in a few simulated seconds. */
  maxLockTtl: 1_000,
  nodeTimeout: 50,
  retryCount: 3,
};

const direction = fc.constantFrom<Direction>('request', 'reply');
const ttl = fc.constantFrom(200, 400, 1_000);
/** Base latency of a link, each way: mostly fast, some slow (a round trip beyond nodeTimeout only with the per-message delays). */
const linkLatency = fc.oneof({ weight: 2, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 1, arbitrary: fc.integer({ min: 5, max: 20 }) });
const messageDelays = fc.array(fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 4 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 120 }) }), {
  maxLength: 300,
});

/** When a fault is armed: at a time in the run, or shortly after the k-th handout. */
const trigger = fc.oneof(
  fc.record({ after: fc.constant(0), at: fc.integer({ min: 0, max: 3_000 }) }),
  fc.record({ after: fc.integer({ min: 1, max: 4 }), at: fc.integer({ min: 0, max: 150 }) }),
);

function faultArbitrary(members: number, clients: number): fc.Arbitrary<Fault> {
  const client = fc.integer({ min: 0, max: clients - 1 });
  const member = fc.integer({ min: 0, max: members - 1 });
  const restart = fc.record(
    {
      kind: fc.constant('restart' as const),
      member,
      downMs: fc.integer({ min: 1, max: 400 }),
      keepData: fc.boolean(),
      inFlight: fc.record({ client, direction, from: fc.integer({ min: 0, max: 300 }) }),
    },
    { requiredKeys: ['kind', 'member', 'downMs', 'keepData'] },
  );
  const hold = fc.record({
    kind: fc.constant('hold' as const),
    client: fc.oneof(client, fc.constant(-1)),
    member,
    direction,
    ms: fc.integer({ min: 1, max: 600 }),
  });
  const pause = fc.record({ kind: fc.constant('pause' as const), member, ms: fc.integer({ min: 1, max: 500 }) });
  const reset = fc.record({ kind: fc.constant('reset' as const), client: fc.oneof(client, fc.constant(-1)), member });
  const failback = fc.record({
    kind: fc.constant('failback' as const),
    member,
    lagMs: fc.integer({ min: 0, max: 300 }),
    downMs: fc.integer({ min: 1, max: 400 }),
  });
  const evict = fc.record({ kind: fc.constant('evict' as const), member, resource: resourceIndex });
  return fc
    .tuple(
      trigger,
      fc.oneof(
        { weight: 4, arbitrary: restart },
        { weight: 4, arbitrary: hold },
        { weight: 1, arbitrary: pause },
        { weight: 1, arbitrary: reset },
        { weight: 2, arbitrary: failback },
        { weight: 1, arbitrary: evict },
      ),
    )
    .map(([when, what]) => ({ ...when, ...what }) as Fault);
}

/**
 * Any plan: 3 or 5 members, 2 or 3 clients with 1 to 4 lock cycles each (think, lock, hold,
 * release), links of different speeds (so that contending clients win on different members), the
 * delay of every message, and up to 5 faults of every kind.
 */
export function planArbitrary(options: { members?: number[] } = {}): fc.Arbitrary<Plan> {
  const memberCounts = options.members ?? [3, 3, 5];
  return fc.constantFrom(...memberCounts).chain((members) =>
    fc.integer({ min: 2, max: 3 }).chain((clientCount) => {
      const cycle = fc.record({
        thinkMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 60 }) }, { weight: 2, arbitrary: fc.integer({ min: 0, max: 2_500 }) }),
        ttl,
        holdMs: fc.integer({ min: 0, max: 150 }),
        resource: resourceIndex,
      });
      return fc.record({
        members: fc.constant(members),
        clients: fc.array(fc.array(cycle, { minLength: 1, maxLength: 4 }), { minLength: clientCount, maxLength: clientCount }),
        links: fc.array(linkLatency, { maxLength: clientCount * members }),
        delays: messageDelays,
        faults: fc.array(faultArbitrary(members, clientCount), { maxLength: 5 }),
        seed: fc.integer(),
      });
    }),
  );
}

/**
 * Defect 1's family of runs (issue 10), explored: a member is killed and restarted while one
 * client's link to it holds that client's commands (or their replies), so that ioredis re-sends
 * them into the new process; three clients contend before it and lock again after the member's
 * quarantine; other links are held now and then. Which member and client, which direction, after
 * which handout the kill comes, every link's speed and every message's delay are fast-check's.
 */
export function restartInFlightArbitrary(options: { members?: number[] } = {}): fc.Arbitrary<Plan> {
  const memberCounts = options.members ?? [3, 3, 5];
  return fc.constantFrom(...memberCounts).chain((members) => {
    const cycleOf = (think: [number, number]) =>
      fc.record({ thinkMs: fc.integer({ min: think[0], max: think[1] }), ttl, holdMs: fc.integer({ min: 0, max: 80 }), resource: resourceIndex });
    // Client 0 locks first, with its link to the doomed member held; the others contend after
    // it; everyone may lock again once the restarted member's quarantine is over.
    const withLate = (early: fc.Arbitrary<Cycle[]>) => early;
    const client = fc.integer({ min: 0, max: 2 });
    const member = fc.integer({ min: 0, max: members - 1 });
    const restart = fc.record({
      kind: fc.constant('restart' as const),
      after: fc.oneof({ weight: 3, arbitrary: fc.constant(2) }, { weight: 1, arbitrary: fc.constant(3) }),
      at: fc.integer({ min: 0, max: 100 }),
      member,
      downMs: fc.integer({ min: 1, max: 300 }),
      keepData: fc.boolean(),
      inFlight: fc.record({ client: fc.constant(0), direction, from: fc.constant(0) }),
    });
    const hold = fc.record({
      kind: fc.constant('hold' as const),
      after: fc.oneof({ weight: 3, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 }) }),
      at: fc.integer({ min: 0, max: 60 }),
      client: fc.oneof(client, fc.constant(-1)),
      member,
      direction,
      ms: fc.integer({ min: 5, max: 300 }),
    });
    return fc.record({
      members: fc.constant(members),
      clients: fc
        .tuple(
          withLate(fc.array(cycleOf([0, 30]), { minLength: 1, maxLength: 1 })),
          withLate(fc.array(cycleOf([0, 150]), { minLength: 1, maxLength: 1 })),
          withLate(fc.array(cycleOf([0, 150]), { minLength: 0, maxLength: 1 })),
        )
        .map((all) => [...all]),
      links: fc.array(linkLatency, { minLength: 3 * members, maxLength: 3 * members }),
      delays: messageDelays,
      faults: fc.tuple(restart, fc.array(hold, { minLength: 1, maxLength: 3 })).map(([kill, holds]): Fault[] => [kill, ...holds]),
      seed: fc.integer(),
    });
  });
}

/** Math.random for a run: mulberry32 (test/harness/prng.ts). */
const seeded = mulberry32;

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Runs `plan` to the end and checks the properties. Deterministic for a plan (lock values aside, which only compare equal or not). */
/** Every `size`-element subset of 0..n-1, in order. */
function subsets(n: number, size: number): number[][] {
  if (size === 0) return [[]];
  if (n < size) return [];
  return [...subsets(n - 1, size), ...subsets(n - 1, size - 1).map((subset) => [...subset, n - 1])];
}

export async function runPlan(plan: Plan, options: { trace?: boolean; horizonMs?: number; probe?: boolean } = {}): Promise<Outcome> {
  const clock = new ManualClock(0);
  let sent = 0;
  // Each message: 0.1 ms, plus its link's latency (plan clients' links; probes' are fast), plus its own delay.
  const linkOf = (client: string, port: number) =>
    /^c\d/.test(client) ? (plan.links?.[Number(/^c(\d+)/.exec(client)![1]) * plan.members + (port - 7001)] ?? 0) : 0;
  const network = new Network(clock, (client, port) => 0.1 + linkOf(client, port) + (plan.delays?.[sent++] ?? 0));
  if (options.trace) network.trace = [];
  const servers = Array.from({ length: plan.members }, (_, index) => new FakeRedisServer({ clock, port: 7001 + index }));
  const clientsOf = plan.clients.map((_, c) => servers.map((server) => new FakeRedis(server, network, { name: `c${c}`, connected: true })));
  const redlocks = clientsOf.map((clients) => new Redlock(clients as never, { clock, maxLockTtl: SETTINGS.maxLockTtl, nodeTimeout: SETTINGS.nodeTimeout }));
  const handouts: (Handout & { lock?: Lock })[] = [];
  const failures: Record<string, number> = {};
  const violations: string[] = [];
  const random = Math.random;
  Math.random = seeded(plan.seed);

  /** Runs the simulation until `done()` or nothing is left to happen. */
  const drive = async (done: () => boolean, horizon: number): Promise<'done' | 'stuck' | 'horizon'> => {
    for (let steps = 0; ; steps++) {
      await settle();
      await settle();
      if (done()) return 'done';
      const next = clock.nextTimerAt();
      if (next === undefined) return 'stuck';
      if (next > horizon || steps > 200_000) return 'horizon';
      clock.advance(Math.max(0, next - clock.now()));
    }
  };

  /** Lets `ms` pass on the clock, running whatever happens meanwhile. */
  const passTime = async (ms: number): Promise<void> => {
    const end = clock.now() + ms;
    for (;;) {
      await settle();
      await settle();
      const next = clock.nextTimerAt();
      if (next === undefined || next > end) break;
      clock.advance(Math.max(0, next - clock.now()));
    }
    clock.advance(Math.max(0, end - clock.now()));
    await settle();
  };

  try {
    // A new deployment: its members declared brand new, as README tells operators to.
    let trusted = false;
    void redlocks[0]!.trustMembers().then((results) => {
      trusted = true;
      const refused = results.filter((result) => !result.trusted);
      if (refused.length > 0) violations.push(`trustMembers failed: ${refused.map((result) => result.error?.message).join('; ')}`);
    });
    if ((await drive(() => trusted, 10_000)) !== 'done') violations.push('trustMembers did not settle');
    const start = clock.now();

    // A fault's client -1 is the client that got the lock whose handout armed it (its holder).
    const clientOf = (fault: Fault) => {
      if (fault.kind === 'pause' || fault.kind === 'restart' || fault.kind === 'failback' || fault.kind === 'evict') return 0;
      if (fault.client < 0) return fault.after >= 1 ? (handouts[fault.after - 1]?.client ?? 0) : 0;
      return fault.client % plan.clients.length;
    };
    const arm = (fault: Fault) => {
      const client = `c${clientOf(fault)}`;
      const server = servers[fault.member % plan.members]!;
      const later = (ms: number, run: () => void) => clock.setTimer(run, ms);
      if (fault.kind === 'restart') {
        const { inFlight } = fault;
        const holder = inFlight && `c${inFlight.client % plan.clients.length}`;
        later(fault.at, () => {
          // One member at a time: not while another is down.
          if (servers.some((other) => !other.up)) {
            if (inFlight && holder) network.hold(holder, server.port, inFlight.direction, -Infinity);
            return;
          }
          server.kill();
          // The link is fine again: what it held died with the old process's sockets, and the
          // re-sent commands go out on a new one.
          if (inFlight && holder) network.hold(holder, server.port, inFlight.direction, -Infinity);
          later(fault.downMs, () => server.start({ keepData: fault.keepData }));
        });
      } else if (fault.kind === 'hold') {
        later(fault.at, () =>
          network.hold(client, server.port, fault.direction, Math.max(network.heldUntil(client, server.port, fault.direction), clock.now() + fault.ms)),
        );
      } else if (fault.kind === 'failback') {
        later(fault.at, () => {
          if (!server.up || server.role !== 'master') return;
          const replica = server.snapshot();
          later(fault.lagMs, () => {
            if (!server.up) return;
            server.role = 'slave';
            later(fault.downMs, () => {
              if (!server.up) return;
              server.restore(replica);
              server.failover();
              server.role = 'master';
            });
          });
        });
      } else if (fault.kind === 'evict') {
        later(fault.at, () => {
          if (!server.up) return;
          server.maxmemoryPolicy = 'volatile-lru';
          server.evict(RESOURCES[fault.resource % RESOURCES.length]!);
        });
      } else if (fault.kind === 'pause') {
        later(fault.at, () => {
          if (!server.up || server.paused) return;
          server.pause();
          later(fault.ms, () => server.resume());
        });
      } else {
        later(fault.at, () => clientsOf[clientOf(fault)]![fault.member % plan.members]!.dropConnection());
      }
    };
    // In-flight holds start at their own time, whatever arms their restart.
    for (const fault of plan.faults) {
      if (fault.kind !== 'restart' || !fault.inFlight) continue;
      const { inFlight } = fault;
      const port = servers[fault.member % plan.members]!.port;
      clock.setTimer(() => network.hold(`c${inFlight.client % plan.clients.length}`, port, inFlight.direction, Infinity), inFlight.from);
    }
    for (const fault of plan.faults) if (fault.after <= 0) arm(fault);
    const onHandout = (count: number) => {
      for (const fault of plan.faults) if (fault.after === count) arm(fault);
    };

    let running = plan.clients.length;
    plan.clients.forEach((cycles, c) => {
      const redlock = redlocks[c]!;
      void (async () => {
        for (const cycle of cycles) {
          await clock.sleep(cycle.thinkMs);
          let lock: Lock;
          try {
            lock = await redlock.acquire(resourceOf(cycle), cycle.ttl, { fencing: true, retryCount: SETTINGS.retryCount });
          } catch (error) {
            const outcome = (error as { outcome?: string }).outcome;
            // A refusal is a LockAcquireError, with its outcome; anything else is a bug of the
            // library (or of the model), never an answer: a run where every acquire threw would
            // otherwise pass every property for nothing.
            if (outcome === undefined) violations.push(`client ${c}'s acquire threw: ${(error as Error).stack ?? String(error)}`);
            const key = outcome ?? (error as Error).message;
            failures[key] = (failures[key] ?? 0) + 1;
            continue;
          }
          const at = clock.now();
          const handout: Handout & { lock?: Lock } = { client: c, resource: resourceOf(cycle), token: lock.fence, at, end: at + lock.remainingMs(), lock };
          // Checked at the moment of the handout, against every lock of the resource handed out before.
          for (const earlier of handouts) {
            if (earlier.resource !== handout.resource) continue;
            if (earlier.token !== undefined && handout.token !== undefined && handout.token <= earlier.token) {
              violations.push(
                `fence token ${handout.token} for ${handout.resource} handed to client ${c} at ${at.toFixed(1)} ms, after token ${earlier.token} (client ${earlier.client}, at ${earlier.at.toFixed(1)} ms)`,
              );
            }
            if (earlier.lock && !earlier.lock.released && earlier.lock.remainingMs() > 0) {
              violations.push(
                `client ${c} got the lock at ${at.toFixed(1)} ms while client ${earlier.client} held it (${earlier.lock.remainingMs().toFixed(1)} ms left)`,
              );
            }
          }
          handouts.push(handout);
          onHandout(handouts.length);
          await clock.sleep(cycle.holdMs);
          handout.end = Math.min(handout.end, clock.now());
          await lock.release();
        }
      })()
        .catch((error: Error) => violations.push(`client ${c} threw: ${error.stack ?? error.message}`))
        .finally(() => running--);
    });

    const ended = await drive(() => running === 0, start + (options.horizonMs ?? 120_000));
    if (ended === 'stuck') violations.push(`stuck at ${clock.now().toFixed(1)} ms: ${running} client(s) still waiting on a promise that nothing will settle`);
    if (ended === 'horizon') violations.push(`not finished by ${clock.now().toFixed(1)} ms`);

    // Probes: what would the next lock get, if a quorum S of members answered it first? Once
    // every quarantine, key and place in line has run out, a new client locks once per quorum S,
    // each from the same state (restored between probes), its commands to the other members held
    // on the wire. The fencing property quantified over which members answer first: each probe
    // is a legal continuation of the run, and its token too must be above every token before.
    if (options.probe !== false && ended === 'done') {
      const quiet = Math.max(SETTINGS.maxLockTtl, 2_100) + 50;
      await passTime(quiet);
      const snapshots = servers.map((server) => server.snapshot());
      let probe = 0;
      const used = RESOURCES.filter((resource) => handouts.some((handout) => handout.resource === resource));
      for (const resource of used.length > 0 ? used : ['r'])
        for (const quorum of subsets(plan.members, Math.floor(plan.members / 2) + 1)) {
          // The run's own handouts: probes start from the same state each, so they are not compared with each other.
          const highest = Math.max(
            0,
            ...handouts.filter((handout) => handout.resource === resource && handout.client >= 0).map((handout) => handout.token ?? 0),
          );
          if (servers.some((server) => !server.up)) break;
          servers.forEach((server, index) => server.restore(snapshots[index]!));
          const name = `p${++probe}`;
          const clients = servers.map((server) => new FakeRedis(server, network, { name, connected: true }));
          servers.forEach((server, index) => {
            if (!quorum.includes(index)) network.hold(name, server.port, 'request', Infinity);
          });
          const redlock = new Redlock(clients as never, { clock, maxLockTtl: SETTINGS.maxLockTtl, nodeTimeout: SETTINGS.nodeTimeout });
          // Let the new connections read what they read at connect.
          await passTime(5);
          let lock: Lock | undefined;
          let settled = false;
          redlock.acquire(resource, 400, { fencing: true, retryCount: 0 }).then(
            (won) => {
              lock = won;
              settled = true;
            },
            () => {
              settled = true;
            },
          );
          await drive(() => settled, clock.now() + 1_000);
          const members = quorum.map((index) => servers[index]!.port).join(',');
          if (lock?.fence !== undefined && lock.fence <= highest) {
            violations.push(
              `fence token ${lock.fence} for ${resource} handed to a client answered first by members ${members} at ${clock.now().toFixed(1)} ms, after token ${highest}`,
            );
          }
          if (lock) handouts.push({ client: -probe, resource, token: lock.fence, at: clock.now(), end: clock.now() });
          if (lock) {
            let released = false;
            void lock.release().finally(() => (released = true));
            await drive(() => released, clock.now() + 1_000);
          }
          void redlock.quit();
          for (const client of clients) client.disconnect();
        }
    }
    for (const server of servers) for (const problem of server.problems) violations.push(`fake-redis ${server.port}: ${problem}`);
    return {
      handouts: handouts.map(({ lock: _lock, ...rest }) => rest),
      violations,
      failures,
      endedAt: clock.now(),
      ...(network.trace ? { trace: network.trace } : {}),
    };
  } finally {
    Math.random = random;
    for (const redlock of redlocks) void redlock.quit();
    for (const clients of clientsOf) for (const client of clients) client.disconnect();
    await settle();
  }
}

/** A trace as lines, for a counterexample report (`all`: also INFO, ROLE, (UN)SUBSCRIBE, connects). */
export function describeTrace(outcome: Outcome, all = false): string {
  const lines: string[] = [];
  for (const event of outcome.trace ?? []) {
    if (!all && (/^(INFO|ROLE|SUBSCRIBE|UNSUBSCRIBE|quorumlockLeave)$/.test(event.command ?? '') || event.what === 'ready' || event.what === 'close')) continue;
    const who = `${event.at.toFixed(1).padStart(8)} ms  ${event.client.padEnd(5)} ${event.port}#${event.incarnation}`;
    const reply =
      typeof event.reply === 'string' && event.reply.startsWith('# ')
        ? `(INFO, run_id ${/run_id:(\w{8})/.exec(event.reply)?.[1]}…)`
        : JSON.stringify(event.reply);
    if (event.what === 'run') lines.push(`${who}  ${event.command} ${summarize(event.command, event.args)} -> ${reply}`);
    else if (event.what === 'resend') lines.push(`${who}  RE-SENT ${event.command} ${summarize(event.command, event.args)}`);
    else lines.push(`${who}  ${event.what}`);
  }
  for (const handout of outcome.handouts)
    lines.push(
      `handout: ${handout.client >= 0 ? `client ${handout.client}` : `probe ${-handout.client}`} token ${handout.token} at ${handout.at.toFixed(1)} ms`,
    );
  return lines.join('\n');
}

/** What a failing plan did: the plan, the violations, and the trace (member#process, per command). */
export async function counterexampleReport(plan: Plan): Promise<string> {
  const outcome = await runPlan(plan, { trace: true });
  return [
    `plan: ${JSON.stringify(plan)}`,
    `violations:\n  ${outcome.violations.join('\n  ') || '(none on this replay)'}`,
    'trace (time, client, member port#process, command [ARGV] -> reply):',
    describeTrace(outcome),
  ].join('\n');
}

function summarize(command: string | undefined, args: string[] | undefined): string {
  if (!args) return '';
  if (command === 'INFO') return args.join(' ');
  const keyCount = Number(args[0]);
  if (command?.startsWith('quorumlock') && Number.isInteger(keyCount)) {
    const argv = args.slice(1 + keyCount).map((word) => (word.length > 12 ? `${word.slice(0, 6)}…` : word));
    return `[${argv.join(' ')}]`;
  }
  return args.join(' ').slice(0, 60);
}
