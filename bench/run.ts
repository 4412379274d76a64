/**
 * npm run bench [-- --quick] [-- --rss] [-- --only 1,3,7] [-- --cycles 200000] [-- --op-timeout 6000] [-- --handoff-ttl 10000]
 *
 * quorumlock against node-redlock v4 (`redlock`), @sesamecare-oss/redlock (the maintained v5 fork),
 * redis-semaphore's RedlockMutex and redlock-universal, each with its default settings, on the same
 * 5 local masters, and a raw reference (bench/core.ts rawCycle) that no client can beat:
 *
 *   1. uncontended acquire + release latency (distinct keys, one at a time, interleaved per cycle)
 *   2. cycles/s at concurrency 1, 16, 128, 512 (interleaved time slices, one client at a time,
 *      counted once every loop has finished its first cycle), with each slice's failed acquires
 *      (rejected or hung) and the bench process's CPU per completed cycle (process.cpuUsage, user +
 *      system, over the same window; a full GC before each slice, so none collects the garbage of
 *      the client before it)
 *   3. contended handoff: 8 workers on one key, 1 ms holds, for every client, at ttl --handoff-ttl
 *      (default 10000 ms, README's examples)
 *   4. acquire latency with 2 of 5 members paused (SIGSTOP)
 *   5. time to fail one attempt with 3 of 5 paused
 *   6. quorumlock RSS / heap over 1,000,000 cycles at concurrency 128 (full run, or --rss)
 *   7. server time per call: each client alone, CONFIG RESETSTAT on all 5 masters, N uncontended
 *      cycles, then INFO commandstats (and INFO cpu) of every member; then N acquires held and their
 *      N releases, each phase on its own, for the server time per acquire (script) call. A short
 *      MONITOR run first tells a script's inner commands (inside the script's own time) from the
 *      commands the client sent, so nothing is counted twice.
 *   8. client libraries: quorumlock over ioredis, iovalkey, node-redis 6 and 5, Valkey GLIDE, and
 *      redlock-universal over its ioredis, node-redis and GLIDE adapters: uncontended cycles
 *      (interleaved) and cycles/s with client CPU at concurrency 1, 16, 128
 *
 * Every single operation is bounded by an outer timeout (--op-timeout, default 6000 ms: above
 * redlock-universal's own 5000 ms command timeout, so that one shows as "fails in 5 s" and only real
 * hangs as hung). Prints Markdown; writes bench/results/bench.md and bench/results/bench.json.
 *
 * --quick: short slices and few cycles, no figure 6 (unless --rss), about a minute and a half.
 * default: the full run, about 15 minutes on a 2-core machine (6 of them in figure 6).
 */
import Redis from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { from, quorumlock } from './quorumlock.js';

const { Redlock } = quorumlock;
import { handoffRound, memory, serverTime, threePaused, throughput, twoPaused, uncontended, type HandoffRound, type Limits } from './figures.js';
import { describeError, now } from './lib.js';
import { CLIENTS, HANDOFF_FLOOR, LINE_HANDOFF_FLOOR } from './peers.js';
import { CLIENT_LIBRARIES } from './client-peers.js';
import { report, type Results } from './report.js';

const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rss: { type: 'boolean', default: false },
    only: { type: 'string' },
    cycles: { type: 'string' },
    'op-timeout': { type: 'string', default: '6000' },
    'handoff-ttl': { type: 'string', default: '10000' },
  },
});
const quick = values.quick;
const only = values.only ? new Set(values.only.split(',').map((s) => Number(s.trim()))) : undefined;
const wants = (figure: number) => (only ? only.has(figure) : figure !== 6 || !quick || values.rss);

const limits: Limits = { opTimeoutMs: Number(values['op-timeout']), maxTroubled: quick ? 1 : 3 };
const plan = {
  uncontended: { cycles: quick ? 300 : 3000, warmup: quick ? 50 : 200 },
  throughput: { concurrency: [1, 16, 128, 512], sliceMs: quick ? 500 : 3000, rounds: quick ? 1 : 3 },
  handoff: { seconds: quick ? 2 : 5, rounds: quick ? 1 : 3, ttl: Number(values['handoff-ttl']) },
  twoPaused: { cycles: quick ? 100 : 1000, warmup: quick ? 20 : 100 },
  threePaused: { samples: quick ? 10 : 50 },
  memory: { cycles: values.cycles ? Number(values.cycles) : quick ? 100_000 : 1_000_000, concurrency: 128 },
  serverTime: { cycles: quick ? 300 : 3000, warmup: quick ? 50 : 200 },
  libraries: { cycles: quick ? 300 : 2000, warmup: quick ? 50 : 200 },
};
const log = (line: string) => console.error(line);

const startedAt = now();
const results: Results = {
  date: new Date().toISOString(),
  node: `${process.version}; quorumlock from ${from}`,
  machine: `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown'}), load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} at start`,
  mode: quick ? 'quick' : 'full',
  options: { ...plan, maxTroubled: limits.maxTroubled, only: values.only },
  opTimeoutMs: limits.opTimeoutMs,
  figures: {},
  failures: {},
  seconds: {},
};

const set = await processBackend.start(5);
{
  // Brand-new masters: declared trusted once, so quorumlock has no restart quarantine to sit out.
  const setup = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
  for (const client of setup) client.on('error', () => {});
  await new Redlock(setup).trustMembers();
  for (const client of setup) client.disconnect();
}

async function figure(n: number, name: string, run: () => Promise<void>) {
  if (!wants(n)) return;
  log(`figure ${n}: ${name}`);
  const started = now();
  try {
    await run();
  } catch (error) {
    results.failures[`${n} ${name}`] = describeError(error);
    log(`figure ${n} failed: ${describeError(error)}`);
  } finally {
    for (const master of set.masters) await master.resume(); // never leave a master paused for the next figure
  }
  results.seconds[String(n)] = (now() - started) / 1000;
}

await figure(1, 'uncontended latency', async () => {
  results.figures.uncontended = await uncontended(set, { ...plan.uncontended, limits });
});
await figure(2, 'throughput', async () => {
  results.figures.throughput = await throughput(set, { ...plan.throughput, limits, log });
});
await figure(3, 'contended handoff', async () => {
  const rounds: HandoffRound[] = [];
  for (let i = 1; i <= plan.handoff.rounds; i++) {
    for (const peer of [...CLIENTS, HANDOFF_FLOOR, LINE_HANDOFF_FLOOR]) {
      const row = await handoffRound(set, peer, i, { seconds: plan.handoff.seconds, ttl: plan.handoff.ttl, limits });
      log(
        `  round ${i} ${row.client}: ${row.acquisitions} acquisitions, ${row.toAnotherPct.toFixed(1)} % to another, handoff p50 ${row.handoffMs.p50.toFixed(1)} ms, ${row.failed} failed, drained in ${row.drainedMs.toFixed(0)} ms`,
      );
      rounds.push(row);
    }
  }
  results.figures.handoff = rounds;
});
await figure(4, '2 of 5 paused', async () => {
  results.figures.twoPaused = await twoPaused(set, { ...plan.twoPaused, limits, log });
});
await figure(5, '3 of 5 paused', async () => {
  results.figures.threePaused = await threePaused(set, { ...plan.threePaused, limits, log });
});
await figure(6, 'memory', async () => {
  results.figures.memory = await memory(set, { ...plan.memory, limits, log });
});
// After every other figure has closed its connections: each client runs alone on the masters.
await figure(7, 'server time per call', async () => {
  results.figures.serverTime = await serverTime(set, { ...plan.serverTime, limits, log });
});
await figure(8, 'client libraries', async () => {
  const peers = CLIENT_LIBRARIES;
  results.figures.libraries = {
    uncontended: await uncontended(set, { ...plan.libraries, limits, peers }),
    throughput: await throughput(set, { ...plan.throughput, concurrency: [1, 16, 128], limits, log, peers }),
  };
});

results.seconds.total = (now() - startedAt) / 1000;
const markdown = report(results);
console.log(`\n${markdown}`);
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/bench.md', `${markdown}\n`);
writeFileSync(
  'bench/results/bench.json',
  JSON.stringify(results, (_, v: unknown) => (v === Infinity ? 'Infinity' : v), 2),
);
log(`wrote bench/results/bench.md and bench/results/bench.json (${results.seconds.total.toFixed(0)} s)`);
await set.stop();
