/**
 * npx tsx bench/script-cost.ts [--cycles 5000] [--rounds 5] [--peer]
 *
 * The server's share of one uncontended lock, per call, on one local redis-server: N acquires
 * (distinct keys, each held), then their N releases, each phase alone after CONFIG RESETSTAT;
 * INFO commandstats gives µs per script call and the commands run inside it (listed again under
 * their own names). Median of --rounds. With --peer, node-redlock 4's scripts beside it on the
 * same server. With --floor, the floor of any script that keeps quorumlock's per-call checks: the
 * reads they make (the acquire's INFO replication and stats in one call, the release's INFO
 * replication, the epoch hash's HMGET) and nothing but the uncontended acquire's EXISTS and
 * SET, or the release's EXISTS, GET and DEL, called with the same keys and arguments. A quick loop for script work; `npm run bench` (figure 7) is the side-by-side.
 */
import Redis from 'ioredis';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { CHECKED_ACQUIRE, CHECKED_RELEASE, checkedKeys } from './peers.js';
import { quorumlock } from './quorumlock.js';

const { values } = parseArgs({
  options: {
    cycles: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '5' },
    peer: { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
  },
});
const cycles = Number(values.cycles);
const rounds = Number(values.rounds);

type Stats = Map<string, { calls: number; usec: number }>;
async function commandstats(admin: Redis): Promise<Stats> {
  const stats: Stats = new Map();
  for (const [, name, calls, usec] of (await admin.info('commandstats')).matchAll(/cmdstat_([^:]+):calls=(\d+),usec=(\d+)/g))
    stats.set(name!, { calls: Number(calls), usec: Number(usec) });
  return stats;
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function phase(admin: Redis, run: () => Promise<void>): Promise<Stats> {
  await admin.config('RESETSTAT');
  await run();
  return commandstats(admin);
}

const SCRIPT_CALLS = ['evalsha', 'eval'];
const ADMIN = ['config|resetstat', 'info|commandstats'];

/** µs per script call (median over the samples), and each command run inside the scripts, per call. */
function describe(label: string, samples: Stats[], calls: number): string {
  const scripts = (s: Stats) =>
    SCRIPT_CALLS.reduce((sum, name) => ({ calls: sum.calls + (s.get(name)?.calls ?? 0), usec: sum.usec + (s.get(name)?.usec ?? 0) }), { calls: 0, usec: 0 });
  const perCall = median(samples.map((s) => scripts(s).usec / scripts(s).calls));
  const inner = [...samples[0]!.keys()].filter((name) => !SCRIPT_CALLS.includes(name) && !ADMIN.includes(name));
  const parts = inner.map((name) => {
    const per = median(samples.map((s) => (s.get(name)?.usec ?? 0) / calls));
    const count = (samples[0]!.get(name)?.calls ?? 0) / calls;
    return `${name} ${count.toFixed(1)}× ${per.toFixed(2)} µs`;
  });
  return `${label}: ${perCall.toFixed(2)} µs per script call (inside, per call: ${parts.join(', ')})`;
}

const set = await processBackend.start(1);
const master = set.masters[0]!;
const admin = new Redis({ host: master.host, port: master.port });
const client = new Redis({ host: master.host, port: master.port });
/** One client's uncontended acquire and release, as measured here. */
interface Contender<L> {
  label: string;
  acquire(resource: string): Promise<L>;
  release(lock: L): Promise<unknown>;
}

try {
  const redlock = new quorumlock.Redlock([client], { retryCount: 0 });
  await redlock.trustMembers();
  const contenders: Contender<unknown>[] = [
    { label: 'quorumlock', acquire: (resource) => redlock.acquire(resource, 60_000), release: (lock) => (lock as { release(): Promise<unknown> }).release() },
  ];
  if (values.peer) {
    type PeerLock = { unlock(): Promise<unknown> };
    type PeerClass = new (clients: Redis[], options: { retryCount: number }) => { lock(resource: string, ttl: number): Promise<PeerLock> };
    const Peer = createRequire(import.meta.url)('redlock') as PeerClass;
    const peer = new Peer([client], { retryCount: 0 });
    contenders.push({
      label: 'node-redlock 4',
      acquire: (resource) => Promise.resolve(peer.lock(resource, 60_000)),
      release: (lock) => Promise.resolve((lock as PeerLock).unlock()),
    });
  }
  if (values.floor) {
    // The reads each script's checks make, and the key work: the checked floor of `npm run bench`.
    const acquireFloor = (await client.script('LOAD', CHECKED_ACQUIRE)) as string;
    const releaseFloor = (await client.script('LOAD', CHECKED_RELEASE)) as string;
    const keysOf = checkedKeys;
    contenders.push({
      label: "floor (the checks' reads only)",
      acquire: async (resource) => {
        await client.evalsha(acquireFloor, 6, ...keysOf(resource), 'epoch', 'value', '60000', 'waiter.1.1', '1', '0', '60000', '0', 'epoch');
        return resource;
      },
      release: (resource) => client.evalsha(releaseFloor, 6, ...keysOf(resource as string), 'epoch', 'value'),
    });
  }

  // Round by round, each contender in turn (machine noise hits all alike): N acquires held, then
  // their N releases, each phase alone; the first round warms up.
  let key = 0;
  const samples = contenders.map(() => ({ acquires: [] as Stats[], releases: [] as Stats[] }));
  for (let r = 0; r <= rounds; r++) {
    for (const [index, contender] of contenders.entries()) {
      const locks: unknown[] = [];
      const a = await phase(admin, async () => {
        for (let i = 0; i < cycles; i++) locks.push(await contender.acquire(`cost:${++key}`));
      });
      const b = await phase(admin, async () => {
        for (const lock of locks) await contender.release(lock);
      });
      if (r === 0) continue;
      samples[index]!.acquires.push(a);
      samples[index]!.releases.push(b);
    }
  }
  for (const [index, contender] of contenders.entries()) {
    console.log(describe(`${contender.label} acquire`, samples[index]!.acquires, cycles));
    console.log(describe(`${contender.label} release`, samples[index]!.releases, cycles));
  }
  await redlock.quit().catch(() => undefined);
} finally {
  admin.disconnect();
  client.disconnect();
  await set.stop();
}
