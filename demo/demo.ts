/**
 * npm run demo [-- --seconds 6 --workers 5]
 *
 * Starts five local redis-server masters, lets several independent workers (each its own Redlock
 * and its own connections, as separate services would have) contend for one resource, SIGKILLs
 * one master a third of the way in, and shows that every acquisition was held exclusively.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { LockAcquireError, Redlock, systemClock } from '../src/index.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '6' },
    workers: { type: 'string', default: '5' },
  },
});
const seconds = Number(values.seconds);
const workerCount = Number(values.workers);
const RESOURCE = 'demo:nightly-report';
const TTL = 1_000;

interface Holding {
  worker: number;
  acquiredAt: number;
  /** The end of what the lock guaranteed: acquiredAt + remaining validity at that moment. */
  guaranteedUntil: number;
  releasedAt: number;
}

interface WorkerStats {
  acquisitions: number;
  failures: number;
  latencies: number[];
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const stamp = (start: number) => `${((systemClock.now() - start) / 1000).toFixed(2).padStart(5)} s`;

async function main(): Promise<number> {
  console.log(`Starting 5 redis-server masters on 127.0.0.1 (no persistence)...`);
  const set = await processBackend.start(5);
  console.log(`  ports ${set.masters.map((m) => m.port).join(', ')}`);
  // Brand-new masters would sit out a restart quarantine of maxLockTtl: an operator declares them.
  const setup = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
  await new Redlock(setup).trustMembers();
  for (const client of setup) client.disconnect();
  console.log('  declared brand new and trusted (redlock.trustMembers())\n');

  const holdings: Holding[] = [];
  const stats: WorkerStats[] = [];
  let inside = 0; // how many workers believe they hold the lock right now
  let maxInside = 0;
  let connectionErrors = 0;
  const start = systemClock.now();
  const stopAt = start + seconds * 1000;
  const allClients: Redis[] = [];

  const worker = async (id: number) => {
    const clients = set.masters.map((m) => {
      const client = new Redis({ host: m.host, port: m.port });
      // A service logs these; the demo counts them (a killed master refuses every reconnect).
      client.on('error', () => connectionErrors++);
      return client;
    });
    allClients.push(...clients);
    const redlock = new Redlock(clients, { retryDelay: 30, retryJitter: 20 });
    const mine: WorkerStats = { acquisitions: 0, failures: 0, latencies: [] };
    stats[id] = mine;
    while (systemClock.now() < stopAt) {
      const asked = systemClock.now();
      let lock;
      try {
        lock = await redlock.acquire(RESOURCE, TTL, { waitTimeout: 2_000 });
      } catch (error) {
        if (!(error instanceof LockAcquireError)) throw error;
        mine.failures++;
        continue;
      }
      const acquiredAt = systemClock.now();
      const guaranteedUntil = acquiredAt + lock.remainingMs();
      mine.latencies.push(acquiredAt - asked);
      mine.acquisitions++;
      maxInside = Math.max(maxInside, ++inside);
      await sleep(5 + Math.random() * 15); // the "work"
      inside--;
      const releasedAt = systemClock.now();
      await lock.release();
      holdings.push({ worker: id, acquiredAt, guaranteedUntil, releasedAt });
      await sleep(Math.random() * 10);
    }
  };

  const killer = (async () => {
    await sleep((seconds * 1000) / 3);
    const victim = set.masters[2]!;
    await victim.kill();
    console.log(`${stamp(start)}  SIGKILL master 127.0.0.1:${victim.port}: 4 of 5 left, quorum is 3`);
  })();

  console.log(`${stamp(start)}  ${workerCount} workers contend for "${RESOURCE}" (ttl ${TTL} ms) for ${seconds} s`);
  await Promise.all([killer, ...Array.from({ length: workerCount }, (_, id) => worker(id))]);
  console.log(`${stamp(start)}  done\n`);

  // Exclusivity: sort by acquisition; each holding must end (release, or guarantee end if earlier)
  // before the next one starts.
  holdings.sort((a, b) => a.acquiredAt - b.acquiredAt);
  let overlaps = 0;
  for (let i = 1; i < holdings.length; i++) {
    const previous = holdings[i - 1]!;
    const current = holdings[i]!;
    if (current.worker !== previous.worker && current.acquiredAt < Math.min(previous.releasedAt, previous.guaranteedUntil)) overlaps++;
  }

  const killAt = start + (seconds * 1000) / 3;
  console.log('worker  acquisitions  failed  p50 acquire  p99 acquire');
  for (const [id, s] of stats.entries()) {
    const sorted = [...s.latencies].sort((a, b) => a - b);
    console.log(
      `${String(id).padStart(6)}  ${String(s.acquisitions).padStart(12)}  ${String(s.failures).padStart(6)}  ${percentile(sorted, 50).toFixed(1).padStart(8)} ms  ${percentile(sorted, 99).toFixed(1).padStart(8)} ms`,
    );
  }
  const before = holdings.filter((h) => h.acquiredAt < killAt).length;
  console.log(`\n${holdings.length} acquisitions: ${before} before the kill, ${holdings.length - before} after it (with 4 of 5 masters).`);
  console.log(`Connection errors seen by the clients of the killed master (reported by ioredis, handled): ${connectionErrors}.`);
  console.log(`Most workers inside the critical section at once: ${maxInside}.`);
  console.log(overlaps === 0 && maxInside <= 1 ? 'Every acquisition was held exclusively.' : `VIOLATION: ${overlaps} overlapping holdings.`);

  for (const c of allClients) c.disconnect();
  await set.stop();
  return overlaps === 0 && maxInside <= 1 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
