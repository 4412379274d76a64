/**
 * npm run bench:handoff [-- --seconds 5 --rounds 2]
 *
 * Contended handoff on five local masters: 8 workers, each with its own Redlock and its own 5
 * ioredis clients (as if they were separate processes), loop acquire (ttl 1000 ms) → hold 1 ms →
 * release on ONE resource. Does a released lock reach a *different* waiting worker, and how long
 * had that worker been waiting? (Handoff latency = from the previous holder calling release() to
 * another worker holding the lock; "waited" = that worker's time in its successful acquire() call.)
 * quorumlock and node-redlock v4 (npm `redlock@4`), both with their default retry settings, run
 * in interleaved rounds (A B A B) so machine noise hits both alike. Prints a Markdown table of the
 * medians across rounds; writes every round to bench/results/handoff.json.
 */
import Redis from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { LockAcquireError, Redlock } from '../src/index.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, rounds: { type: 'string', default: '2' } } });
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const WORKERS = 8;
const TTL = 1000;

/** The slice of node-redlock v4's (untyped, CommonJS, bluebird) API this bench uses. */
interface NodeRedlockLock {
  unlock(): PromiseLike<void>;
}
interface NodeRedlock {
  lock(resource: string, ttl: number): PromiseLike<NodeRedlockLock>;
}
interface NodeRedlockClass {
  new (clients: Redis[], options?: { driftFactor?: number; retryCount?: number; retryDelay?: number; retryJitter?: number }): NodeRedlock;
  LockError: new (...args: never[]) => Error;
}
const NodeRedlock = createRequire(import.meta.url)('redlock') as NodeRedlockClass;

/** What a worker needs from a client under test: acquire → release, and "was that a normal failure?". */
interface Locker {
  acquire(resource: string): Promise<{ release(): Promise<unknown> }>;
  isAcquireFailure(error: unknown): boolean;
}

const clients = {
  quorumlock: (members: Redis[]): Locker => {
    const redlock = new Redlock(members); // defaults: retryCount 10, retryDelay 200, retryJitter 100
    return { acquire: (resource) => redlock.acquire(resource, TTL), isAcquireFailure: (e) => e instanceof LockAcquireError };
  },
  'node-redlock': (members: Redis[]): Locker => {
    const redlock = new NodeRedlock(members); // its defaults: retryCount 10, retryDelay 200, retryJitter 100
    return {
      acquire: async (resource) => {
        const lock = await redlock.lock(resource, TTL);
        return { release: async () => lock.unlock() };
      },
      isAcquireFailure: (e) => e instanceof NodeRedlock.LockError,
    };
  },
};
type ClientName = keyof typeof clients;

const quantile = (samples: number[], q: number) => {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const set = await processBackend.start(5);
{
  // Brand-new masters: declared trusted, so quorumlock has no restart quarantine to sit out.
  const setup = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
  await new Redlock(setup).trustMembers();
  for (const client of setup) client.disconnect();
}

async function round(name: ClientName, index: number) {
  // Fresh connections per round, so no round inherits another's connection state.
  const connections = Array.from({ length: WORKERS }, () =>
    set.masters.map((m) => {
      const client = new Redis({ host: m.host, port: m.port });
      client.on('error', () => {}); // no masters fail here; keep a stray socket error from crashing the bench
      return client;
    }),
  );
  await Promise.all(connections.flat().map((c) => c.ping()));
  const lockers = connections.map((members) => clients[name](members));
  const resource = `handoff:${name}:${index}`;

  // Warm-up on another key: loads the Lua scripts on every master (node-redlock's first EVALSHA
  // misses and falls back to EVAL), so the timed window sees steady state only.
  for (const locker of lockers) await (await locker.acquire(`${resource}:warm-up`)).release();

  // Only one worker holds the lock at a time, so the latest release() call is always the previous
  // holder's: an acquisition's handoff latency is measured from it.
  let lastRelease: { worker: number; at: number } | undefined;
  // When the current holder first let go in its streak (it may take the lock straight back many
  // times): a waiter's handoff is measured from there, since that is when the lock was offered.
  let streakStart: { worker: number; at: number } | undefined;
  const idleGaps: number[] = []; // ms from any release() call to the next acquisition by anyone
  const handoffs: number[] = []; // ms from the holder's first release in its streak to another worker holding it
  let selfHandoffs = 0; // the worker that just released got it again
  // The releasing worker is back in acquire() within ~1 ms, so another worker only wins when its
  // retry happens to land in that gap: handoffs[] then stays short whatever the retry delay. The
  // delay shows in how long the new holder had been waiting in its acquire() call.
  const waited: number[] = [];
  const perWorker = new Array<number>(WORKERS).fill(0);
  const releaseMs: number[] = [];
  let failed = 0;
  // A 1 ms hold is far inside the validity, so more than one holder at once means the lock is broken.
  let holding = 0;
  let mostHolders = 0;

  const start = performance.now();
  const end = start + seconds * 1000;
  // Only what happens inside [start, end) counts; a worker still retrying at `end` finishes its
  // acquire (node-redlock cannot be cancelled) and stops without being counted.
  async function worker(id: number) {
    while (performance.now() < end) {
      let lock;
      const calledAt = performance.now();
      try {
        lock = await lockers[id]!.acquire(resource);
      } catch (error) {
        if (!lockers[id]!.isAcquireFailure(error)) throw error;
        if (performance.now() < end) failed++;
        continue;
      }
      const acquiredAt = performance.now();
      mostHolders = Math.max(mostHolders, ++holding);
      if (acquiredAt < end) {
        perWorker[id]!++;
        if (lastRelease) idleGaps.push(acquiredAt - lastRelease.at);
        if (lastRelease?.worker === id) selfHandoffs++;
        else if (lastRelease && streakStart) {
          handoffs.push(acquiredAt - streakStart.at);
          waited.push(acquiredAt - calledAt);
        }
      }
      await sleep(1);
      const releaseAt = performance.now();
      if (streakStart?.worker !== id || lastRelease?.worker !== id) streakStart = { worker: id, at: releaseAt };
      lastRelease = { worker: id, at: releaseAt };
      holding--;
      await lock.release();
      if (releaseAt < end) releaseMs.push(performance.now() - releaseAt);
    }
  }
  await Promise.all(lockers.map((_, id) => worker(id)));
  const drainedMs = performance.now() - end;
  for (const client of connections.flat()) client.disconnect();

  const acquisitions = perWorker.reduce((a, b) => a + b, 0);
  const row = {
    client: name,
    round: index,
    acquisitions,
    perSecond: acquisitions / seconds,
    toAnotherPct: (100 * handoffs.length) / (handoffs.length + selfHandoffs),
    handoffs: handoffs.length,
    selfHandoffs,
    handoffMs: { p50: quantile(handoffs, 0.5), p90: quantile(handoffs, 0.9), p99: quantile(handoffs, 0.99), max: Math.max(...handoffs) },
    idleGapMs: { p50: quantile(idleGaps, 0.5), p99: quantile(idleGaps, 0.99) },
    waitedMs: { p50: quantile(waited, 0.5), p99: quantile(waited, 0.99) },
    releaseMs: { p50: quantile(releaseMs, 0.5), p99: quantile(releaseMs, 0.99) },
    topWorkerPct: (100 * Math.max(...perWorker)) / acquisitions,
    minWorkerPct: (100 * Math.min(...perWorker)) / acquisitions,
    perWorker,
    failed,
    mostHolders,
    drainedMs,
  };
  console.error(`round ${index} ${name}: ${acquisitions} acquisitions, ${handoffs.length} to another worker, p50 ${row.handoffMs.p50.toFixed(1)} ms, waited p50 ${row.waitedMs.p50.toFixed(0)} ms, ${failed} failed, most holders at once ${mostHolders} (drained in ${drainedMs.toFixed(0)} ms)`);
  return row;
}

const names = Object.keys(clients) as ClientName[];
const perRound: Awaited<ReturnType<typeof round>>[] = [];
for (let i = 1; i <= rounds; i++) for (const name of names) perRound.push(await round(name, i)); // A B A B

const summary = names.map((name) => {
  const rows = perRound.filter((r) => r.client === name);
  const m = (pick: (r: (typeof rows)[number]) => number) => median(rows.map(pick));
  return {
    client: name,
    perSecond: m((r) => r.perSecond),
    toAnotherPct: m((r) => r.toAnotherPct),
    handoffMs: { p50: m((r) => r.handoffMs.p50), p90: m((r) => r.handoffMs.p90), p99: m((r) => r.handoffMs.p99) },
    idleGapMs: { p50: m((r) => r.idleGapMs.p50), p99: m((r) => r.idleGapMs.p99) },
    waitedMs: { p50: m((r) => r.waitedMs.p50), p99: m((r) => r.waitedMs.p99) },
    topWorkerPct: m((r) => r.topWorkerPct),
    minWorkerPct: m((r) => r.minWorkerPct),
    failed: m((r) => r.failed),
    mostHolders: Math.max(...rows.map((r) => r.mostHolders)),
  };
});

const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(1)} ms` : '–');
console.log(`\n5 local masters, ${WORKERS} workers on one resource (ttl ${TTL} ms, hold 1 ms), ${seconds} s per round, ${rounds} rounds each, interleaved; medians across rounds\n`);
console.log('| client | acquisitions/s | to another worker | handoff to a waiter p50 | p90 | p99 | new holder waited p50 | p99 | release → next acquire (anyone) p50 | p99 | top worker share | min worker share | failed acquires | most holders at once |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const s of summary) {
  console.log(
    `| ${s.client} | ${s.perSecond.toFixed(1)} | ${s.toAnotherPct.toFixed(1)} % | ${ms(s.handoffMs.p50)} | ${ms(s.handoffMs.p90)} | ${ms(s.handoffMs.p99)} | ${ms(s.waitedMs.p50)} | ${ms(s.waitedMs.p99)} | ${ms(s.idleGapMs.p50)} | ${ms(s.idleGapMs.p99)} | ${s.topWorkerPct.toFixed(1)} % | ${s.minWorkerPct.toFixed(1)} % | ${s.failed} | ${s.mostHolders} |`,
  );
}
const [ours, theirs] = summary;
for (const s of summary) if (s.mostHolders > 1) console.log(`\nWARNING: ${s.client} let ${s.mostHolders} workers hold the lock at once: its numbers are not a valid handoff measurement.`);
console.log(`\nHandoff to a waiter p50, node-redlock / quorumlock: ${(theirs!.handoffMs.p50 / ours!.handoffMs.p50).toFixed(1)}×; new holder's wait p50: ${(theirs!.waitedMs.p50 / ours!.waitedMs.p50).toFixed(1)}×`);

mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/handoff.json',
  JSON.stringify({ date: new Date().toISOString(), node: process.version, workers: WORKERS, ttl: TTL, holdMs: 1, seconds, rounds, summary, perRound }, null, 2),
);
await set.stop();
