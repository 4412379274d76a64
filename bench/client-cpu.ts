/**
 * npm run bench:cpu [-- --turns 5] [--cycles 20480] [--levels 1,16,512]
 *
 * The client CPU target in turns: quorumlock (the built package), node-redlock 4 and the checked
 * floor (bench/peers.ts) on one ioredis client per master, the same five local masters, each at
 * its defaults, acquire + release cycles on distinct keys at each concurrency. Each takes its
 * turn in every round (--turns), so the machine's noise falls on all three alike; the medians are
 * printed, with user and system CPU apart. `npm run bench` measures each client once per level,
 * where one busy moment of the shared machine moves a figure by 20 %; this is the loop for the
 * client CPU alone (c = 1: a quarter of --cycles).
 */
import Redis from 'ioredis';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { median } from './lib.js';
import { ALL, checkedFloor, type Locker } from './peers.js';
import { quorumlock, from } from './quorumlock.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '5' },
    cycles: { type: 'string', default: '20480' },
    levels: { type: 'string', default: '1,16,512' },
  },
});
const turns = Number(values.turns);
const cycles = Number(values.cycles);
const levels = values.levels.split(',').map(Number);

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
try {
  await Promise.all(clients.map((c) => c.ping()));
  await new quorumlock.Redlock(clients).trustMembers();
  const peer = (name: string) => ALL.find((p) => p.name === name)!.create(clients);
  const lockers: [string, Locker][] = [
    ['checked floor', checkedFloor().create(clients)],
    ['quorumlock', peer('quorumlock')],
    ['node-redlock', peer('node-redlock')],
  ];
  let key = 0;
  console.log(`quorumlock from ${from}; five local masters, ${turns} turns; medians (all turns' client CPU in brackets)`);
  for (const concurrency of levels) {
    const count = concurrency === 1 ? cycles / 4 : cycles;
    const results = new Map(lockers.map(([name]) => [name, { rate: [] as number[], cpu: [] as number[], user: [] as number[], system: [] as number[] }]));
    for (let turn = 0; turn < turns; turn++) {
      for (const [name, locker] of lockers) {
        const loop = async (n: number) => {
          for (let i = 0; i < n; i++) await (await locker.acquire(`cpu:${++key}`, 10_000)).release();
        };
        await loop(200); // warm up
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        await Promise.all(Array.from({ length: concurrency }, () => loop(Math.ceil(count / concurrency))));
        const seconds = (performance.now() - started) / 1000;
        const { user, system } = process.cpuUsage(cpuBefore);
        const done = Math.ceil(count / concurrency) * concurrency;
        const result = results.get(name)!;
        result.rate.push(done / seconds);
        result.cpu.push((user + system) / done);
        result.user.push(user / done);
        result.system.push(system / done);
      }
    }
    const reference = median(results.get('node-redlock')!.cpu);
    for (const [name, { rate, cpu, user, system }] of results)
      console.log(
        `c = ${String(concurrency).padEnd(3)}  ${name.padEnd(13)}  ${median(rate).toFixed(0).padStart(6)} cycles/s  client CPU ${median(cpu).toFixed(0).padStart(3)} µs per cycle (${(median(cpu) / reference).toFixed(2)}× node-redlock's; user ${median(user).toFixed(0)}, system ${median(system).toFixed(0)}) [${cpu.map((x) => x.toFixed(0)).join(' ')}]`,
      );
  }
  for (const [, locker] of lockers) await locker.close();
} finally {
  for (const client of clients) client.disconnect();
  await set.stop();
}
