/**
 * npx tsx bench/drift/real.ts [--seconds 30]
 *
 * The simulation's boundary point on real masters: 5 redis-server processes, of which 3 (then 2)
 * run their clocks 1.5× fast under libfaketime, real ioredis clients, Redlock({ quarantine: false })
 * and the same client loop as the simulation (tryAcquire → hold up to the full validity → release
 * → think), at ttl 1000 with driftFactor 0.01 (the fast members drop keys at ~667 ms, inside the
 * validity of ~988 ms: violations expected with 3 fast) and 0.4 (validity 598 ms: none expected).
 * With 2 fast members, also through a proxy per connection that delays each message by 0 or 1 ms
 * at random. Then the simulation at the same points, for comparison. Writes bench/results/drift-real.json.
 * Needs redis-server and libfaketime (Debian/Ubuntu: apt-get install -y redis-server faketime).
 */
import Redis from 'ioredis';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import { processBackend } from '../../test/harness/process.js';
import type { MasterSet } from '../../test/harness/types.js';
import { holdFor, overlappingPairs } from './exclusion.js';
import { startJitterProxy, type JitterProxy } from './jitter-proxy.js';
import { mulberry32, seedOf } from '../../test/harness/prng.js';
import { runCell } from './scenario.js';

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
// libfaketime alone deadlocks redis-server at start-up (with jemalloc); glibc preloaded after it does not.
const LIBC = '/lib/x86_64-linux-gnu/libc.so.6';
const RATE = 1.5;
const TTL = 1000;
const CLIENTS = 3;
const THINK_MAX_MS = 0.05 * TTL;
const NODE_TIMEOUT = 50;
const RESOURCE = 'drift:real';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '30' } } });
const seconds = Number(values.seconds);
for (const path of [LIBFAKETIME, LIBC]) if (!existsSync(path)) throw new Error(`needs ${path}: apt-get install -y faketime (Debian/Ubuntu, x86_64)`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function startMasters(fast: number): Promise<MasterSet> {
  const normal = await processBackend.start(5 - fast);
  const env = { LD_PRELOAD: `${LIBFAKETIME}:${LIBC}`, FAKETIME: `+0 x${RATE}` };
  const fastSet = await processBackend.start(fast, { env }).catch(async (error: unknown) => {
    await normal.stop();
    throw error;
  });
  return { masters: [...normal.masters, ...fastSet.masters], stop: () => Promise.all([normal.stop(), fastSet.stop()]).then(() => undefined) };
}

/** How fast a member's clock runs against ours, from two TIME readings 500 ms apart. */
async function clockRate(client: Redis): Promise<number> {
  const read = async () => {
    const [s, us] = await client.time();
    return { server: Number(s) * 1000 + Number(us) / 1000, local: performance.now() };
  };
  const first = await read();
  await sleep(500);
  const second = await read();
  return (second.server - first.server) / (second.local - first.local);
}

interface RealHolding {
  client: number;
  start: number;
  end: number;
  votes: string[];
}

async function contend(redlocks: Redlock[], seed: string) {
  const rng = mulberry32(seedOf(seed));
  const holdings: RealHolding[] = [];
  const counts = { attempts: 0, acquired: 0, refused: 0, failed: 0 };
  const stopAt = performance.now() + seconds * 1000;
  const client = async (id: number, redlock: Redlock) => {
    await sleep(rng() * THINK_MAX_MS);
    while (performance.now() < stopAt) {
      counts.attempts++;
      let lock: Lock | null = null;
      try {
        lock = await redlock.tryAcquire(RESOURCE, TTL);
        if (!lock) counts.refused++;
      } catch (error) {
        if (!(error instanceof LockAcquireError)) throw error;
        counts.failed++;
      }
      if (lock) {
        const start = performance.now();
        const validFor = lock.remainingMs();
        counts.acquired++;
        await sleep(holdFor(validFor, rng));
        // A late timer would hold past the guarantee: that is the client's fault, not Redlock's.
        holdings.push({ client: id, start, end: Math.min(performance.now(), start + validFor), votes: lock.votes.map((v) => v.vote) });
        await lock.release();
      }
      await sleep(rng() * THINK_MAX_MS);
    }
  };
  await Promise.all(redlocks.map((redlock, id) => client(id, redlock)));
  const pairs = overlappingPairs(holdings);
  return {
    ...counts,
    holdings: holdings.length,
    violations: pairs.length,
    maxOverlapMs: Math.max(0, ...pairs.map((p) => p.overlapMs)),
    /** The first holder's votes in each violating pair (members in order: normal ones, then fast ones). */
    firstHolderVotes: pairs.map((p) => p.first.votes.join(',')),
  };
}

/** Each client's connections: straight to the masters, or through a jitter proxy per connection. */
async function connect(set: MasterSet, jitter: boolean, proxies: JitterProxy[]): Promise<Redis[][]> {
  const random = mulberry32(seedOf('jitter'));
  const connections: Redis[][] = [];
  for (let i = 0; i < CLIENTS; i++) {
    const addresses = [];
    for (const m of set.masters) {
      if (!jitter) addresses.push({ host: m.host, port: m.port });
      else {
        const proxy = await startJitterProxy(m, random);
        proxies.push(proxy);
        addresses.push({ host: '127.0.0.1', port: proxy.port });
      }
    }
    const clients = addresses.map((address) => new Redis(address));
    for (const c of clients) c.on('error', () => {});
    await Promise.all(clients.map((c) => c.ping()));
    connections.push(clients);
  }
  return connections;
}

const CONFIGS = [
  { fast: 3, networks: [false] },
  { fast: 2, networks: [false, true] },
];
const real: Record<string, unknown>[] = [];
for (const { fast, networks } of CONFIGS) {
  const set = await startMasters(fast);
  try {
    for (const jitter of networks) {
      const proxies: JitterProxy[] = [];
      const connections = await connect(set, jitter, proxies);
      try {
        const rates = await Promise.all(connections[0]!.map(clockRate));
        console.log(
          `${fast} of 5 fast${jitter ? ', 0–1 ms jitter per message' : ''}: measured member clock rates ${rates.map((r) => r.toFixed(3)).join(', ')}`,
        );
        if (rates.slice(5 - fast).some((r) => r < 1.3)) throw new Error('libfaketime is not in effect on the fast members');
        for (const driftFactor of [0.01, 0.4]) {
          await Promise.all(connections[0]!.map((c) => c.del(RESOURCE)));
          const redlocks = connections.map((clients) => new Redlock(clients, { driftFactor, nodeTimeout: NODE_TIMEOUT, retryCount: 0, quarantine: false }));
          const result = await contend(redlocks, `real fast${fast} df${driftFactor} jitter${jitter}`);
          real.push({ fastMembers: fast, jitter, rate: RATE, driftFactor, ttl: TTL, seconds, measuredRates: rates, ...result });
          console.log(
            `  driftFactor ${driftFactor}: ${result.violations} violating pairs in ${result.holdings} holdings (${result.attempts} attempts, ${result.failed} failed), max overlap ${result.maxOverlapMs.toFixed(1)} ms`,
          );
        }
      } finally {
        for (const clients of connections) for (const c of clients) c.disconnect();
        await Promise.all(proxies.map((p) => p.close()));
      }
    }
  } finally {
    await set.stop();
  }
}

// The simulation at the same points: mean one-way delay 0.2 ms (loopback) or 0.5 ms (jitter), the
// real run's nodeTimeout, 200 × ttl.
const simulated: Record<string, unknown>[] = [];
for (const row of real) {
  const { fastMembers, driftFactor, jitter } = row as { fastMembers: number; driftFactor: number; jitter: boolean };
  const spec = {
    fastMembers,
    driftPct: (RATE - 1) * 100,
    driftFactor,
    ttl: TTL,
    delayMs: jitter ? 0.5 : 0.2,
    nodeTimeout: NODE_TIMEOUT,
    clients: CLIENTS,
    durationTtls: 200,
    thinkTtl: THINK_MAX_MS / TTL,
    pauses: false,
  };
  const { holdings: _h, violationList: _v, ...cell } = await runCell(spec);
  simulated.push({
    fastMembers,
    driftFactor,
    delayMs: spec.delayMs,
    holdings: cell.acquired,
    violations: cell.violations,
    maxOverlapMs: cell.maxOverlapMs,
    diagnosis: cell.diagnosis,
    simulatedSeconds: (spec.durationTtls * TTL) / 1000,
  });
}

console.log('\n| fast members (1.5×) | network | driftFactor | real: violating pairs / holdings | sim: violating pairs / holdings |');
console.log('|---|---|---:|---:|---:|');
real.forEach((r, i) => {
  const s = simulated[i]!;
  console.log(
    `| ${r.fastMembers} of 5 | ${r.jitter ? 'loopback + 0–1 ms jitter (sim: 0.5 ms)' : 'loopback (sim: 0.2 ms)'} | ${r.driftFactor} | ${r.violations} / ${r.holdings} (${seconds} s) | ${s.violations} / ${s.holdings} (${s.simulatedSeconds} s simulated) |`,
  );
});
mkdirSync('bench/results', { recursive: true });
writeFileSync(
  'bench/results/drift-real.json',
  JSON.stringify({ rate: RATE, ttl: TTL, clients: CLIENTS, nodeTimeout: NODE_TIMEOUT, real, simulated }, null, 1) + '\n',
);
console.log('wrote bench/results/drift-real.json');
