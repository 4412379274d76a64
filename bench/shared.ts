/**
 * npm run bench:shared [-- --rounds 2000] [-- --calls 20000] [-- --passes 5] [-- --before 3a43348]
 *
 * Shared (read) locks beside exclusive ones, in one run on five local masters:
 * 1. acquire + release latency, shared and exclusive interleaved (same process, same members,
 *    each iteration on a fresh resource: no contention), median and p99;
 * 2. the server time of the exclusive acquire script before and after shared locks (which added
 *    one EXISTS per resource to it): INFO commandstats usec_per_call of EVALSHA over `calls`
 *    calls on one idle redis-server, the script text of commit `before` against today's, in
 *    alternating batches; the shared acquire script's beside them; and the same for the
 *    exclusive release script (which now also handles readers and wakes readers at the head).
 */
import { execFileSync } from 'node:child_process';
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { Redlock } from '../src/index.js';
import { acquireLua, acquireSharedLua, epochLua, releaseLua } from '../src/lua/sources.js';
import { EPOCH_KEY, KEYS_PER_RESOURCE, resourceKeys } from '../src/store/keys.js';
import { acquireArgs, decodeEpoch, sharedName, type AcquireRequest } from '../src/store/protocol.js';
import { median, now, quantile } from './lib.js';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '2000' },
    calls: { type: 'string', default: '20000' },
    passes: { type: 'string', default: '5' },
    before: { type: 'string', default: '3a43348' },
  },
});
const rounds = Number(values.rounds);
const calls = Number(values.calls);

// --- 1. latency -------------------------------------------------------------------------------
const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
for (const client of clients) client.on('error', () => {});
await Promise.all(clients.map((c) => c.ping()));
const redlock = new Redlock(clients, { retryCount: 0 });
await redlock.trustMembers();
for (const shared of [false, true]) await (await redlock.acquire('bench:warm-up', 10_000, { shared })).release();
const samples = { exclusive: [] as number[], shared: [] as number[] };
for (let i = 0; i < rounds; i++) {
  for (const shared of i % 2 === 0 ? [false, true] : [true, false]) {
    const started = now();
    const lock = await redlock.acquire(`bench:shared:${i}:${shared ? 'r' : 'w'}`, 10_000, { shared });
    await lock.release();
    samples[shared ? 'shared' : 'exclusive'].push(now() - started);
  }
}
for (const client of clients) client.disconnect();
await redlock.quit();
await set.stop();
const ms = (xs: number[], q?: number) => (q === undefined ? median(xs) : quantile(xs, q)).toFixed(3);
console.log(`acquire + release, 5 local masters, ${rounds} of each interleaved (ms):`);
console.log(`  exclusive  median ${ms(samples.exclusive)}  p99 ${ms(samples.exclusive, 0.99)}`);
console.log(`  shared     median ${ms(samples.shared)}  p99 ${ms(samples.shared, 0.99)}`);

// --- 2. server time of the acquire script ------------------------------------------------------
/** A script as shipped at commit `rev` (its sources.ts, after #include expansion). */
function luaAt(rev: string, name: 'acquireLua' | 'releaseLua'): string {
  const sources = execFileSync('git', ['show', `${rev}:src/lua/sources.ts`], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const line = sources.split('\n').find((l) => l.startsWith(`export const ${name} = `));
  if (!line) throw new Error(`no ${name} at ${rev}`);
  return JSON.parse(line.slice(`export const ${name} = `.length, -1)) as string;
}

const one = await processBackend.start(1);
const server = new Redis({ host: one.masters[0]!.host, port: one.masters[0]!.port });
await new Redlock([server]).trustMembers();
const scripts = { before: luaAt(values.before, 'acquireLua'), after: acquireLua, shared: acquireSharedLua };
const releases = { before: luaAt(values.before, 'releaseLua'), after: releaseLua };
const releaseShas = { before: (await server.script('LOAD', releases.before)) as string, after: (await server.script('LOAD', releases.after)) as string };
const shas = Object.fromEntries(
  await Promise.all(Object.entries(scripts).map(async ([name, lua]) => [name, (await server.script('LOAD', lua)) as string])),
) as Record<keyof typeof scripts, string>;
/** The keys of one resource as each version lays them out: 3 keys before shared locks, KEYS_PER_RESOURCE now. */
const keysFor = (name: keyof typeof scripts, resource: string) => [...resourceKeys([resource]).slice(0, name === 'before' ? 3 : KEYS_PER_RESOURCE), EPOCH_KEY];
const request = (value: string, waiter: string): AcquireRequest => ({
  value,
  ttlMs: 10_000,
  waiter: { id: waiter, ticket: 1, leaseMs: 0 },
  quarantineMs: 60_000,
  fencing: false,
});
// The member's epoch (trusted, so settled: the hot path, a bare 1 reply, no TIME). Today's
// scripts are bound to it (src/lua/_bound.lua: its id first in ARGV); `before`'s take it as
// `settled` only. Read again after each batch's FLUSHALL.
const readEpoch = async () => decodeEpoch(await server.eval(epochLua, 1, EPOCH_KEY)).id;
let settled = await readEpoch();
const boundTo = (name: keyof typeof scripts): string[] => (name === 'before' ? [] : [settled]);

let batch = 0;
async function usecPerCall(name: keyof typeof scripts): Promise<number> {
  await server.config('RESETSTAT');
  const tag = ++batch;
  for (let done = 0; done < calls; done += 1000) {
    const pipeline = server.pipeline();
    for (let i = done; i < Math.min(calls, done + 1000); i++) {
      const resource = `cs:${tag}:${i}`;
      const shared = name === 'shared';
      const keys = keysFor(name, resource);
      pipeline.evalsha(
        shas[name],
        keys.length,
        ...keys,
        ...boundTo(name),
        ...acquireArgs(request(shared ? sharedName(`v${i}`) : `v${i}`, shared ? sharedName(`w${i}`) : `w${i}`), settled),
      );
    }
    await pipeline.exec();
  }
  const info = await server.info('commandstats');
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(info);
  if (!match || Number(match[1]) !== calls) throw new Error(`unexpected commandstats: ${match?.[0]}`);
  await server.flushall(); // the next batch starts on an empty keyspace again (the epoch is re-read: trust it again)
  await new Redlock([server]).trustMembers();
  settled = await readEpoch();
  return Number(match[3]);
}
/** The exclusive release script's server time: each call finds its key (set by a plain SET) and deletes it. */
async function usecPerRelease(name: keyof typeof releases): Promise<number> {
  await server.config('RESETSTAT');
  const tag = ++batch;
  for (let done = 0; done < calls; done += 1000) {
    const pipeline = server.pipeline();
    for (let i = done; i < Math.min(calls, done + 1000); i++) {
      const resource = `cr:${tag}:${i}`;
      // Before, release took the resource keys alone; now the epoch key too, and the epoch id (bound).
      const keys = name === 'before' ? keysFor(name, resource).slice(0, -1) : keysFor(name, resource);
      pipeline.set(resource, `v${i}`, 'PX', 10_000);
      pipeline.evalsha(releaseShas[name], keys.length, ...keys, ...boundTo(name), `v${i}`);
    }
    await pipeline.exec();
  }
  const info = await server.info('commandstats');
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(info);
  if (!match || Number(match[1]) !== calls) throw new Error(`unexpected commandstats: ${match?.[0]}`);
  return Number(match[3]);
}
const readings: Record<keyof typeof scripts, number[]> = { before: [], after: [], shared: [] };
const releaseReadings: Record<keyof typeof releases, number[]> = { before: [], after: [] };
for (let pass = 0; pass < Number(values.passes); pass++) {
  for (const name of pass % 2 === 0 ? (['before', 'after', 'shared'] as const) : (['shared', 'after', 'before'] as const))
    readings[name].push(await usecPerCall(name));
  for (const name of pass % 2 === 0 ? (['before', 'after'] as const) : (['after', 'before'] as const)) releaseReadings[name].push(await usecPerRelease(name));
}
server.disconnect();
await one.stop();
const show = (xs: number[]) => `median ${median(xs).toFixed(2)}, min ${Math.min(...xs).toFixed(2)} µs/call (passes: ${xs.map((x) => x.toFixed(2)).join(', ')})`;
console.log(`acquire script server time, INFO commandstats usec_per_call, ${calls} uncontended calls per pass, one idle redis-server:`);
console.log(`  exclusive, before shared locks (${values.before})  ${show(readings.before)}`);
console.log(`  exclusive, now                        ${show(readings.after)}`);
console.log(`  shared (acquireShared.lua)            ${show(readings.shared)}`);
console.log(`release script server time (exclusive, the key found and deleted), same method:`);
console.log(`  before shared locks (${values.before})          ${show(releaseReadings.before)}`);
console.log(`  now                                   ${show(releaseReadings.after)}`);
