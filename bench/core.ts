/**
 * npm run bench:core [-- --cycles 3000]
 *
 * Acquire latency on five local masters: healthy, with 2 of 5 paused (SIGSTOP), and the time to
 * fail with 3 of 5 paused. quorumlock and a raw reference (one parallel round of SET NX PX on every
 * member, released by a Lua compare-and-delete: the floor no client can beat) run interleaved, so
 * machine noise hits both alike. Prints a Markdown table; writes bench/results/core.json.
 */
import Redis from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { Redlock, systemClock } from '../src/index.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '3000' } } });
const cycles = Number(values.cycles);
const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

const quantile = (samples: number[], q: number) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
for (const client of clients) client.on('error', () => {});
await Promise.all(clients.map((c) => c.ping()));
const redlock = new Redlock(clients, { retryCount: 0 });
await redlock.trustMembers(); // brand-new masters: no restart quarantine to sit out
let key = 0;

/** Resolves when `count` of the promises resolved to 'OK'-ish (truthy): the floor's early decision. */
function firstOf<T>(promises: Promise<T>[], count: number, ok: (value: T) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    for (const promise of promises)
      promise.then(
        (value) => ok(value) && ++seen === count && resolve(),
        () => undefined,
      );
  });
}

/**
 * The floor: one parallel SET NX PX round, decided at the third OK, then one parallel Lua release
 * round decided at the third answer. No timeouts, no validity, no rollback: what no client can beat.
 */
async function rawCycle(): Promise<number> {
  const resource = `raw:${++key}`;
  const value = `v${key}`;
  const started = systemClock.now();
  await firstOf(
    clients.map((c) => c.set(resource, value, 'PX', 10_000, 'NX')),
    3,
    (reply) => reply === 'OK',
  );
  const acquired = systemClock.now() - started;
  await firstOf(
    clients.map((c) => c.eval(RELEASE, 1, resource, value)),
    3,
    () => true,
  );
  return acquired;
}

async function quorumlockCycle(): Promise<number> {
  const started = systemClock.now();
  const lock = await redlock.acquire(`ql:${++key}`, 10_000);
  const acquired = systemClock.now() - started;
  await lock.release();
  return acquired;
}

async function measure(label: string) {
  const raw: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < 200; i++) await Promise.all([rawCycle(), quorumlockCycle()]); // warm-up
  for (let i = 0; i < cycles; i++) {
    // Alternate which goes first, one at a time, so neither always meets the other's leftovers.
    if (i % 2 === 0) {
      raw.push(await rawCycle());
      ours.push(await quorumlockCycle());
    } else {
      ours.push(await quorumlockCycle());
      raw.push(await rawCycle());
    }
  }
  return { label, raw: { p50: quantile(raw, 0.5), p99: quantile(raw, 0.99) }, quorumlock: { p50: quantile(ours, 0.5), p99: quantile(ours, 0.99) } };
}

const healthy = await measure('5 of 5 healthy');
await set.masters[0]!.pause();
await set.masters[3]!.pause();
const twoPaused = await measure('2 of 5 paused (SIGSTOP)');
await set.masters[1]!.pause();
const failTimes: number[] = [];
for (let i = 0; i < 20; i++) {
  const started = systemClock.now();
  await redlock.acquire(`fail:${++key}`, 10_000).then(
    () => {
      throw new Error('acquired with 3 of 5 paused');
    },
    () => undefined,
  );
  failTimes.push(systemClock.now() - started);
}
for (const master of set.masters) await master.resume();

const rows = [healthy, twoPaused];
const f = (n: number) => n.toFixed(3);
console.log(`\n5 local masters, ${cycles} cycles each, interleaved; acquire latency in ms (release not included)\n`);
console.log('| members | raw SET NX PX p50 | quorumlock p50 | ratio | raw p99 | quorumlock p99 |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(
    `| ${row.label} | ${f(row.raw.p50)} | ${f(row.quorumlock.p50)} | ${(row.quorumlock.p50 / row.raw.p50).toFixed(2)}× | ${f(row.raw.p99)} | ${f(row.quorumlock.p99)} |`,
  );
}
console.log(
  `\nTime to fail one attempt with 3 of 5 paused (nodeTimeout ${redlock.settings.nodeTimeout} ms, incl. rollback): p50 ${f(quantile(failTimes, 0.5))} ms, max ${f(Math.max(...failTimes))} ms`,
);

mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/core.json', JSON.stringify({ date: new Date().toISOString(), node: process.version, cycles, rows, failTimes }, null, 2));
for (const client of clients) client.disconnect();
await set.stop();
