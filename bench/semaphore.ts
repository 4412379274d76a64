/**
 * npm run bench:semaphore [-- --seconds 4] [--contenders 32] [--permits 4,16] [--hold 2]
 *
 * Counting semaphores on five local masters, quorumlock's redlock.semaphore() and redis-semaphore's
 * RedlockSemaphore side by side in one run: `contenders` loops (in 4 connection sets, as 4
 * processes would have) acquire a permit, hold it `hold` ms, release it, again, for `seconds` per
 * case. Reported per case: acquisitions/s, p50/p99 acquire latency (call → resolve), failed
 * acquires, and overlap violations: instants at which more than `permits` guaranteed holdings
 * overlapped (each holding from acquire's resolution to min(resolution + validity, release), on
 * one performance.now() clock; test/chaos/checker.ts permitViolations). redis-semaphore claims no
 * validity, so its holdings count as guaranteed for ttl less the acquire's own time, as in
 * bench/peers.ts. Both with their defaults, apart from the ttl and a wait long enough for every
 * acquire. A third row per case is a reference, not a semaphore: `permits` independent quorumlock
 * mutexes with the contenders split evenly over them, i.e. what the permits cost as plain locks.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { RedlockSemaphore } from 'redis-semaphore';
import { Redlock, type Semaphore } from '../src/index.js';
import { permitViolations } from '../test/chaos/checker.js';
import { processBackend } from '../test/harness/process.js';
import { connect, describeError, now, quantile, sleep } from './lib.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    contenders: { type: 'string', default: '32' },
    permits: { type: 'string', default: '4,16' },
    hold: { type: 'string', default: '2' },
  },
});
const seconds = Number(values.seconds);
const contenders = Number(values.contenders);
const permitCounts = values.permits.split(',').map(Number);
const holdMs = Number(values.hold);
const TTL = 10_000;
const WAIT = 60_000;
const SETS = 4;

interface Taken {
  validityMs: number;
  release(): Promise<unknown>;
}
type Take = (contender: number, key: string, permits: number) => Promise<Taken>;

interface CaseResult {
  client: string;
  permits: number;
  acquisitions: number;
  perSecond: number;
  p50: number;
  p99: number;
  failed: number;
  maxOverlap: number;
  violations: number;
}

async function runCase(client: string, take: Take, permits: number, key: string): Promise<CaseResult> {
  const latencies: number[] = [];
  const intervals: { start: number; end: number }[] = [];
  let failed = 0;
  let firstError: string | undefined;
  const stopAt = now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: contenders }, async (_, index) => {
      while (now() < stopAt) {
        const calledAt = now();
        let taken: Taken;
        try {
          taken = await take(index, key, permits);
        } catch (error) {
          failed++;
          firstError ??= describeError(error);
          continue;
        }
        const start = now();
        latencies.push(start - calledAt);
        const validUntil = start + taken.validityMs;
        if (holdMs > 0) await sleep(holdMs);
        intervals.push({ start, end: Math.min(validUntil, now()) });
        await taken.release();
      }
    }),
  );
  if (firstError) console.error(`${client} (${permits} permits): ${failed} acquires failed, the first with ${firstError}`);
  const { maxOverlap, violations } = permitViolations(intervals, permits);
  return {
    client,
    permits,
    acquisitions: latencies.length,
    perSecond: latencies.length / seconds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    failed,
    maxOverlap,
    violations: violations.length,
  };
}

const set = await processBackend.start(5);
const connectionSets: Redis[][] = Array.from({ length: SETS }, () => connect(set));
try {
  await Promise.all(connectionSets.flat().map((c) => c.ping()));
  const redlocks = connectionSets.map((clients) => new Redlock(clients));
  await redlocks[0]!.trustMembers();

  // One semaphore object per connection set and case, as a process makes it once and keeps it.
  const pools = new Map<string, Semaphore>();
  const quorumlock: Take = async (contender, key, permits) => {
    const set = contender % SETS;
    const pool = pools.get(`${set}:${key}`) ?? pools.set(`${set}:${key}`, redlocks[set]!.semaphore(key, { permits })).get(`${set}:${key}`)!;
    const permit = await pool.acquire(TTL, { waitTimeout: WAIT, retryCount: Infinity });
    return { validityMs: permit.remainingMs(), release: () => permit.release() };
  };
  // The reference: `permits` independent exclusive locks, each contender bound to one of them
  // (contenders split evenly): what the semaphore's permits cost at best, as plain mutexes.
  const mutexes: Take = async (contender, key, permits) => {
    const lock = await redlocks[contender % SETS]!.acquire(`${key}:${contender % permits}`, TTL, { waitTimeout: WAIT, retryCount: Infinity });
    return { validityMs: lock.remainingMs(), release: () => lock.release() };
  };
  let lost = 0;
  const redisSemaphore: Take = async (contender, key, permits) => {
    const started = now();
    const semaphore = new RedlockSemaphore(connectionSets[contender % SETS]!, key, permits, {
      lockTimeout: TTL,
      acquireTimeout: WAIT,
      onLockLost: () => void lost++,
    });
    await semaphore.acquire();
    return { validityMs: TTL - (now() - started), release: () => semaphore.release() };
  };

  const results: CaseResult[] = [];
  for (const permits of permitCounts) {
    for (const [client, take] of [
      ['quorumlock', quorumlock],
      ['redis-semaphore', redisSemaphore],
      ['quorumlock, one mutex per permit (reference)', mutexes],
    ] as const) {
      const result = await runCase(client, take, permits, `bench-${client}-${permits}-${Date.now()}`);
      results.push(result);
      console.error(`${client}, ${permits} permits: ${result.acquisitions} acquisitions`);
    }
  }
  const fixed = (value: number) => (Number.isFinite(value) ? value.toFixed(1) : '–');
  console.log(`\n${contenders} contenders, ${seconds} s per case, hold ${holdMs} ms, ttl ${TTL} ms, 5 local masters (${SETS} connection sets)\n`);
  console.log('| client | permits | acquisitions/s | p50 acquire ms | p99 acquire ms | failed | max overlap | overlap violations |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results)
    console.log(
      `| ${r.client} | ${r.permits} | ${r.perSecond.toFixed(0)} | ${fixed(r.p50)} | ${fixed(r.p99)} | ${r.failed} | ${r.maxOverlap} | ${r.violations} |`,
    );
  if (lost > 0) console.log(`\nredis-semaphore reported ${lost} permits lost.`);
} finally {
  await Promise.all(connectionSets.flat().map((c) => c.quit().catch(() => undefined)));
  await set.stop();
}
