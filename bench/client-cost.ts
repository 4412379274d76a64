/**
 * npm run bench:client -- [--other <checkout> ...] [--cycles 20000] [--turns 10] [--allocations]
 *
 * quorumlock's own client work per acquire + release cycle, with no server and no client library
 * under it: five stand-in members that answer every script call at once, with the replies
 * store/protocol.ts builds for tests (acquireReply). What is left is this package's JavaScript (the
 * rounds and their timers, the epoch binding, the votes, the Lock) and the garbage it makes, which
 * `npm run bench` can only show mixed with ioredis, the sockets and five busy servers. Not a lock
 * test: nothing here runs a script.
 *
 * Versions take turns (--turns), each --cycles cycles, and the median CPU per cycle of each is
 * printed; --other adds another checkout (e.g. `git worktree add /tmp/old <commit>`, with
 * node_modules linked in), run from its sources as this tree is. --allocations also prints what
 * this tree allocates per cycle, by site (V8's sampling heap profiler, collected objects included).
 */
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import * as current from '../src/index.js';
import { acquireReply } from '../src/store/protocol.js';
import { checkouts, median, printAllocations } from './lib.js';

const { values } = parseArgs({
  options: {
    other: { type: 'string', multiple: true, default: [] },
    cycles: { type: 'string', default: '20000' },
    turns: { type: 'string', default: '10' },
    allocations: { type: 'boolean', default: false },
  },
});
const cycles = Number(values.cycles);

const RUN_ID = 'a'.repeat(40);
const REPLID = 'b'.repeat(40);
const EPOCH = '1700000000000000';

/**
 * A stand-in shaped like an ioredis client (clients/ioredis.ts): ready, our scripts defined as
 * commands, INFO of a Redis 7 master. No evalsha, so no bound copies: every call is a script
 * command.
 */
function standIn(port: number): object {
  const client: Record<string, unknown> = {
    status: 'ready',
    options: { host: '127.0.0.1', port, db: 0 },
    on() {},
    off() {},
    once() {},
    duplicate: () => standIn(port),
    info: () =>
      Promise.resolve(
        `# Server\r\nredis_version:7.0.15\r\nrun_id:${RUN_ID.slice(0, 36)}${port}\r\n# Replication\r\nrole:master\r\nmaster_replid:${REPLID}\r\n`,
      ),
    call: () => Promise.resolve('OK'),
    defineCommand(name: string) {
      const script = name.slice(0, name.lastIndexOf('_'));
      // ioredis flattens a command's arguments one level: keys and arguments may come as arrays or one by one.
      client[name] = (...words: (string | readonly string[])[]) => {
        const flat = words.flat();
        const args = flat.slice(1 + Number(flat[0]));
        switch (script) {
          case 'quorumlockEpoch':
            return Promise.resolve([EPOCH, 10_000_000, 0, RUN_ID, REPLID]);
          // ARGV: the epoch id, then acquireArgs (store/protocol.ts): `settled` is its 8th.
          case 'quorumlockAcquire':
            return Promise.resolve(args[8] === EPOCH ? acquireReply.settled() : acquireReply.locked(0, EPOCH));
          case 'quorumlockRelease':
            return Promise.resolve(1);
          default:
            return Promise.reject(new Error(`client-cost: no stand-in reply for ${script}`));
        }
      };
    },
  };
  return client;
}

const others = await checkouts(values.other);
const versions = [{ name: 'this tree', lib: current }, ...others].map((version) => ({
  name: version.name,
  redlock: new version.lib.Redlock([1, 2, 3, 4, 5].map((i) => standIn(7000 + i)) as never, { retryCount: 0 }),
}));

let key = 0;
async function run(redlock: (typeof versions)[number]['redlock'], count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const lock = await redlock.acquire(`cost:${++key}`, 10_000);
    await lock.release();
  }
}

for (const { redlock } of versions) await run(redlock, cycles); // warm up: JIT, epochs read and settled
const perCycle = new Map<string, number[]>(versions.map(({ name }) => [name, []]));
for (let turn = 0; turn < Number(values.turns); turn++)
  for (const { name, redlock } of versions) {
    const before = process.cpuUsage();
    await run(redlock, cycles);
    const used = process.cpuUsage(before);
    perCycle.get(name)!.push((used.user + used.system) / cycles);
  }
console.log(`client CPU per acquire + release cycle, 5 stand-in members, ${values.turns} turns of ${cycles} cycles (median, min):`);
const base = median(perCycle.get('this tree')!);
for (const [name, samples] of perCycle)
  console.log(
    `  ${name}: ${median(samples).toFixed(1)} µs, ${Math.min(...samples).toFixed(1)} µs${name === 'this tree' ? '' : ` (this tree ÷ it: ${(base / median(samples)).toFixed(2)}×)`}`,
  );

if (values.allocations) {
  const session = new Session();
  session.connect();
  await printAllocations(session, () => run(versions[0]!.redlock, cycles), cycles, '\nallocated by this tree');
}
process.exit(0);
