/**
 * npm run bench:batching [-- --turns 3] [--cycles 30720]
 *
 * What the transport costs per script call, and what one script call per member per tick saves:
 * the checked floor (bench/peers.ts: quorumlock's keys, arguments, per-call check reads and
 * writes, and nothing of its client) beside a "batched floor" that makes the same calls, but sends
 * all the calls a tick makes to one member as ONE script call (the check reads done once per
 * script call), and quorumlock itself (which batches: src/members/batching.ts). Acquire + release cycles
 * on five local masters, at c = 1, 16, 128 and 512, in turns, medians printed.
 *
 * Not a client: the batched floor has no epoch binding, no per-call error isolation and no
 * ordering rule with other commands: the floor of batching, not a design (docs/performance.md).
 */
import Redis from 'ioredis';
import { nextTick } from 'node:process';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { median } from './lib.js';
import { ALL, checkedKeys, type Locker } from './peers.js';
import { quorumlock } from './quorumlock.js';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '3' }, cycles: { type: 'string', default: '30720' } } });
const turns = Number(values.turns);
const cycles = Number(values.cycles);
const LEVELS = [1, 16, 128, 512];

/**
 * The checked floor's acquire and release (CHECKED_ACQUIRE, CHECKED_RELEASE), one entry after
 * another in one script: the epoch hash is the last key, each entry has its 5 resource keys and
 * its arguments after a kind ('a' 13 arguments, 'r' 5), as the checked floor sends them.
 */
const BATCH = `
local info = redis.call('INFO', 'replication', 'stats')
local epoch = redis.call('HMGET', KEYS[#KEYS], 'id', 'since', 'run_id', 'replid', 'evicted')
local out, a = {}, 1
for e = 1, (#KEYS - 1) / 5 do
  local k = (e - 1) * 5
  if ARGV[a] == 'a' then
    out[e] = 0
    if redis.call('EXISTS', KEYS[k + 1], KEYS[k + 2], KEYS[k + 4]) == 0 then
      redis.call('SET', KEYS[k + 1], ARGV[a + 2], 'PX', ARGV[a + 3])
      out[e] = 1
    end
    a = a + 14
  else
    out[e] = 0
    if redis.call('EXISTS', KEYS[k + 2]) == 0 and redis.call('GET', KEYS[k + 1]) == ARGV[a + 2] then
      out[e] = redis.call('DEL', KEYS[k + 1])
    end
    a = a + 6
  end
end
return out`;

type BatchClient = Redis & { batch(...keysThenArgs: (string | number)[]): Promise<number[]> };
interface Entry {
  keys: readonly string[];
  args: readonly string[];
  resolve: (reply: number) => void;
}

/** Queues a member's calls of one tick and sends them as one script call at the tick's end. */
function batcher(client: BatchClient): (keys: readonly string[], args: readonly string[]) => Promise<number> {
  let queue: Entry[] | undefined;
  const flush = () => {
    const entries = queue!;
    queue = undefined;
    const keys: string[] = [];
    const args: string[] = [];
    for (const entry of entries) {
      for (let i = 0; i < 5; i++) keys.push(entry.keys[i]!);
      for (const arg of entry.args) args.push(arg);
    }
    keys.push(entries[0]!.keys[5]!);
    void client.batch(keys.length, ...keys, ...args).then((replies) => entries.forEach((entry, i) => entry.resolve(replies[i]!)));
  };
  return (keys, args) =>
    new Promise((resolve) => {
      if (queue === undefined) {
        queue = [];
        nextTick(flush);
      }
      queue.push({ keys, args, resolve });
    });
}

/** Resolves once `count` replies pass `ok`, as the checked floor's rounds decide. */
function quorumOf(replies: Promise<number>[], count: number, ok: (reply: number) => boolean): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    for (const reply of replies) void reply.then((value) => ok(value) && ++seen === count && resolve());
  });
}

function batchedFloor(members: Redis[]): Locker {
  const send = members.map((client) => {
    client.defineCommand('batch', { lua: BATCH });
    return batcher(client as BatchClient);
  });
  let next = 0;
  return {
    async acquire(resource, ttl) {
      const value = `b${++next}`;
      const keys = checkedKeys(resource);
      const acquireArgs = ['a', 'epoch', value, String(ttl), 'waiter.1.1', '1', '0', '3000', '0', 'epoch', '', '', '', ''];
      await quorumOf(
        send.map((call) => call(keys, acquireArgs)),
        3,
        (reply) => reply === 1,
      );
      return {
        validityMs: ttl,
        release: async () => {
          await quorumOf(
            send.map((call) => call(keys, ['r', 'epoch', value, '', '', ''])),
            3,
            () => true,
          );
          return true;
        },
      };
    },
    isAcquireFailure: () => false,
    close: async () => undefined,
  };
}

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
try {
  await Promise.all(clients.map((c) => c.ping()));
  await new quorumlock.Redlock(clients).trustMembers();
  const lockers: [string, Locker][] = [
    ['checked floor', ALL.find((peer) => peer.name === 'checked floor')!.create(clients)],
    ['batched floor', batchedFloor(clients)],
    ['quorumlock', ALL.find((peer) => peer.name === 'quorumlock')!.create(clients)],
  ];
  let key = 0;
  console.log(`five local masters, ${turns} turns of ${cycles} cycles (c = 1: ${cycles / 10}); medians`);
  for (const concurrency of LEVELS) {
    const count = concurrency === 1 ? cycles / 10 : cycles;
    const results = new Map<string, { rate: number[]; cpu: number[] }>(lockers.map(([name]) => [name, { rate: [], cpu: [] }]));
    for (let turn = 0; turn < turns; turn++) {
      for (const [name, locker] of lockers) {
        const loop = async (n: number) => {
          for (let i = 0; i < n; i++) await (await locker.acquire(`batching:${++key}`, 10_000)).release();
        };
        await loop(200); // warm up
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        await Promise.all(Array.from({ length: concurrency }, () => loop(Math.ceil(count / concurrency))));
        const seconds = (performance.now() - started) / 1000;
        const cpu = process.cpuUsage(cpuBefore);
        const done = Math.ceil(count / concurrency) * concurrency;
        results.get(name)!.rate.push(done / seconds);
        results.get(name)!.cpu.push((cpu.user + cpu.system) / done);
      }
    }
    const floorRate = median(results.get('checked floor')!.rate);
    for (const [name, { rate, cpu }] of results)
      console.log(
        `c = ${String(concurrency).padEnd(3)}  ${name.padEnd(13)}  ${median(rate).toFixed(0).padStart(6)} cycles/s (${(median(rate) / floorRate).toFixed(2)}× the checked floor)  client CPU ${median(cpu).toFixed(0).padStart(3)} µs per cycle`,
      );
  }
  for (const [, locker] of lockers) await locker.close();
} finally {
  for (const client of clients) client.disconnect();
  await set.stop();
}
