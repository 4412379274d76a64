/**
 * npx tsx bench/handoff-cost.ts [--seconds 3] [--turns 2]
 *
 * What one contended acquisition costs, quorumlock beside figure 3's two hand-off floors
 * (bench/peers.ts): 8 workers in this process on one key, 1 ms holds, five local masters; turns
 * alternate. Per acquisition: the handoff p50 (a holder's release to another worker holding),
 * redis-server CPU summed over the 5 members (INFO cpu, user + system) and this process's CPU.
 * The floor keeps its line in this process and hands over with one small script; the line floor
 * keeps it on the members, with the reads of the per-call checks (bench/peers.ts); quorumlock
 * keeps the line, the leases, the hand-over requests and the waiters' presence on the members,
 * inside the epoch binding: the differences are the price of that bookkeeping.
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { HANDOFF_FLOOR, LINE_HANDOFF_FLOOR } from './peers.js';
import { quorumlock } from './quorumlock.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, turns: { type: 'string', default: '2' } } });
const WORKERS = 8;
const set = await processBackend.start(5);
const admin = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));

interface Worker {
  acquire(resource: string, ttl: number): Promise<{ release(): Promise<unknown> }>;
  close(): Promise<void>;
}

const contenders: [string, () => Promise<Worker>][] = [
  [
    'quorumlock',
    async () => {
      const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
      const redlock = new quorumlock.Redlock(clients);
      await redlock.trustMembers();
      return {
        acquire: (resource, ttl) => redlock.acquire(resource, ttl),
        close: async () => {
          await redlock.quit();
          for (const client of clients) client.disconnect();
        },
      };
    },
  ],
  ['hand-off floor', async () => HANDOFF_FLOOR.open!(set)],
  ['line floor', async () => LINE_HANDOFF_FLOOR.open!(set)],
];

const serverCpu = async () =>
  (await Promise.all(admin.map((a) => a.info('cpu')))).reduce(
    (sum, text) => sum + Number(/used_cpu_sys:([\d.]+)/.exec(text)![1]) + Number(/used_cpu_user:([\d.]+)/.exec(text)![1]),
    0,
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function run(workers: Worker[], resource: string, seconds: number) {
  const end = performance.now() + seconds * 1000;
  let acquisitions = 0;
  const handoffs: number[] = [];
  let last: { worker: number; at: number } | undefined;
  await Promise.all(
    workers.map(async (worker, id) => {
      while (performance.now() < end) {
        const held = await worker.acquire(resource, 10_000);
        const at = performance.now();
        if (last && last.worker !== id) handoffs.push(at - last.at);
        acquisitions++;
        await sleep(1);
        last = { worker: id, at: performance.now() };
        await held.release();
      }
    }),
  );
  handoffs.sort((a, b) => a - b);
  return { acquisitions, p50: handoffs[handoffs.length >> 1] ?? NaN };
}

try {
  for (let turn = 1; turn <= Number(values.turns); turn++) {
    for (const [name, open] of contenders) {
      const workers = await Promise.all(Array.from({ length: WORKERS }, open));
      await run(workers, `handoff-cost:warm:${name}:${turn}`, 1);
      const server0 = await serverCpu();
      const client0 = process.cpuUsage();
      const { acquisitions, p50 } = await run(workers, `handoff-cost:${name}:${turn}`, Number(values.seconds));
      const client = process.cpuUsage(client0);
      const server = ((await serverCpu()) - server0) * 1e6;
      console.log(
        `${name.padEnd(15)} turn ${turn}: ${acquisitions} acquisitions, handoff p50 ${p50.toFixed(3)} ms; per acquisition: server CPU ${(server / acquisitions).toFixed(0)} µs (5 members), client CPU ${((client.user + client.system) / acquisitions).toFixed(0)} µs`,
      );
      for (const worker of workers) await worker.close();
    }
  }
} finally {
  for (const a of admin) a.disconnect();
  await set.stop();
}
