/**
 * npm run bench:versions -- --other <checkout> [--other <checkout> ...] [--cycles 3000] [--levels 16,128]
 *
 * This tree's quorumlock against other checkouts' (e.g. `git worktree add /tmp/old <commit>`,
 * with node_modules linked in), side by side in one run on the same five local masters: each
 * version has its own clients and its own Redis db (their scripts and epoch hashes differ), and
 * cycles rotate between them so machine noise hits all alike. Measures acquire latency
 * (plain and fenced), the client CPU per cycle, the server time per script call (INFO
 * commandstats), and acquire + release cycles/s at each concurrency of --levels (workers on
 * distinct resources; each version in turn, five turns, the median), to price a change.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import * as current from '../src/index.js';
import { checkouts, quantile } from './lib.js';

const { values } = parseArgs({
  options: { other: { type: 'string', multiple: true }, cycles: { type: 'string', default: '3000' }, levels: { type: 'string', default: '16,128' } },
});
if (!values.other?.length) throw new Error('usage: npm run bench:versions -- --other <path of another checkout> ...');
const others = await checkouts(values.other);
const cycles = Number(values.cycles);

const set = await processBackend.start(5);
const clientsFor = (db: number) => set.masters.map((m) => new Redis({ host: m.host, port: m.port, db }));
const versions = [{ name: 'this tree', lib: current }, ...others].map((version, db) => {
  const clients = clientsFor(db);
  return { ...version, clients, redlock: new version.lib.Redlock(clients, { retryCount: 0 }) };
});
for (const { clients, redlock } of versions) {
  await Promise.all(clients.map((c) => c.ping()));
  await redlock.trustMembers();
}
let key = 0;

async function cycle(redlock: current.Redlock, fencing: boolean): Promise<number> {
  const started = performance.now();
  const lock = await redlock.acquire(`bench:${++key}`, 10_000, { fencing });
  const ms = performance.now() - started;
  await lock.release();
  return ms;
}

async function interleaved(fencing: boolean) {
  const samples = versions.map(() => [] as number[]);
  // Client CPU (user + system) of each version's cycles: only one version runs at a time.
  const cpuUs = versions.map(() => 0);
  for (let i = 0; i < 200; i++) for (const version of versions) await cycle(version.redlock, fencing); // warm-up
  for (let i = 0; i < cycles; i++) {
    // Rotate who goes first, so none always meets another's leftovers.
    for (let k = 0; k < versions.length; k++) {
      const index = (i + k) % versions.length;
      const before = process.cpuUsage();
      samples[index]!.push(await cycle(versions[index]!.redlock, fencing));
      const used = process.cpuUsage(before);
      cpuUs[index]! += used.user + used.system;
    }
  }
  return samples.map((s, index) => ({ p50: quantile(s, 0.5), p99: quantile(s, 0.99), cpuUs: cpuUs[index]! / cycles }));
}

/** Server µs per script call (EVALSHA and EVAL together), for one version alone. */
async function serverTime(index: number): Promise<number> {
  const admin = versions[index]!.clients;
  await Promise.all(admin.map((c) => c.config('RESETSTAT')));
  for (let i = 0; i < 1000; i++) await cycle(versions[index]!.redlock, false);
  const stats = await Promise.all(admin.map((c) => c.info('commandstats')));
  let calls = 0;
  let usec = 0;
  for (const text of stats) {
    for (const match of text.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
      calls += Number(match[1]);
      usec += Number(match[2]);
    }
  }
  return usec / calls;
}

/** Acquire + release cycles per second with `concurrency` workers, each on its own resources, for `total` cycles. */
async function throughput(redlock: current.Redlock, concurrency: number, total: number): Promise<number> {
  let started = 0;
  const worker = async () => {
    while (started++ < total) await (await redlock.acquire(`bench:${++key}`, 10_000)).release();
  };
  const begin = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return (total / (performance.now() - begin)) * 1000;
}

async function throughputs(concurrency: number): Promise<number[]> {
  const turns = versions.map(() => [] as number[]);
  const total = Math.max(2000, concurrency * 20);
  for (const version of versions) await throughput(version.redlock, concurrency, total / 4); // warm-up
  for (let turn = 0; turn < 5; turn++)
    for (let k = 0; k < versions.length; k++) {
      const index = (turn + k) % versions.length;
      turns[index]!.push(await throughput(versions[index]!.redlock, concurrency, total));
    }
  return turns.map((rates) => quantile(rates, 0.5));
}

const levels = values.levels.split(',').map(Number);
const rates: number[][] = [];
for (const level of levels) rates.push(await throughputs(level));
const plain = await interleaved(false);
const fenced = await interleaved(true);
const server: number[] = [];
for (let i = 0; i < versions.length; i++) server.push(await serverTime(i));
const f = (n: number) => n.toFixed(3);
console.log(
  `\n5 local masters, ${cycles} interleaved cycles per row; acquire latency in ms (release not included); client CPU per acquire + release cycle in µs\n`,
);
console.log('| version | acquire p50 | p99 | client CPU µs | fenced acquire p50 | p99 | fenced CPU µs | server µs per script call (acquire and release) |');
console.log('|---|---|---|---|---|---|---|---|');
versions.forEach((version, i) => {
  console.log(
    `| ${version.name} | ${f(plain[i]!.p50)} | ${f(plain[i]!.p99)} | ${plain[i]!.cpuUs.toFixed(0)} | ${f(fenced[i]!.p50)} | ${f(fenced[i]!.p99)} | ${fenced[i]!.cpuUs.toFixed(0)} | ${server[i]!.toFixed(2)} |`,
  );
});
versions.slice(1).forEach((version, i) => {
  console.log(
    `this tree ÷ ${version.name}: acquire p50 ${(plain[0]!.p50 / plain[i + 1]!.p50).toFixed(2)}×, fenced p50 ${(fenced[0]!.p50 / fenced[i + 1]!.p50).toFixed(2)}×, client CPU ${(plain[0]!.cpuUs / plain[i + 1]!.cpuUs).toFixed(2)}×`,
  );
});
console.log(`\nacquire + release cycles/s (median of 5 turns), concurrency ${levels.join(' / ')}:`);
versions.forEach((version, i) => console.log(`  ${version.name}: ${rates.map((level) => level[i]!.toFixed(0)).join(' / ')}`));
versions
  .slice(1)
  .forEach((version, i) => console.log(`  this tree ÷ ${version.name}: ${rates.map((level) => (level[0]! / level[i + 1]!).toFixed(2)).join(' / ')}×`));
for (const { clients } of versions) for (const c of clients) c.disconnect();
await set.stop();
