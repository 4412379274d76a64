/**
 * npm run bench:cpu [-- --turns 5] [--cycles 20480] [--levels 1,16,512] [--bounded]
 *
 * The client CPU target in turns: quorumlock (the built package), node-redlock 4 and the checked
 * floor (bench/peers.ts) on one ioredis client per master, the same five local masters, each at
 * its defaults, acquire + release cycles on distinct keys at each concurrency. Each takes a turn
 * in every round (--turns), in an order rotated each round and after a forced GC, so the
 * machine's noise and the garbage of the turn before fall on all three alike; the medians are
 * printed, user and system CPU each its own median (they need not add up to the total's). Whole
 * runs (c = 1: a quarter of --cycles), ramp and drain included, where `npm run bench` counts
 * three 3-second windows per level once the loops have spread out. --bounded wraps each
 * operation as figure 2 does (an outer limit of 6 s: a timer and a promise per operation).
 */
import { parseArgs } from 'node:util';
import { median, rotation, turn } from './lib.js';
import { floorAndNodeRedlock, withLockers } from './peers.js';
import { from } from './quorumlock.js';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '5' },
    cycles: { type: 'string', default: '20480' },
    levels: { type: 'string', default: '1,16,512' },
    bounded: { type: 'boolean', default: false },
  },
});
const turns = Number(values.turns);
const cycles = Number(values.cycles);
const levels = values.levels.split(',').map(Number);

await withLockers(floorAndNodeRedlock, async (lockers) => {
  let key = 0;
  console.log(
    `quorumlock from ${from}; five local masters, ${turns} turns${values.bounded ? ', each operation bounded as in figure 2' : ''}; medians (all turns' client CPU in brackets)`,
  );
  for (const concurrency of levels) {
    const count = concurrency === 1 ? cycles / 4 : cycles;
    const results = new Map(lockers.map(([name]) => [name, { rate: [] as number[], cpu: [] as number[], user: [] as number[], system: [] as number[] }]));
    for (let round = 0; round < turns; round++) {
      for (const [name, locker] of rotation(lockers, round)) {
        const measured = await turn(locker, concurrency, count, () => `cpu:${++key}`, values.bounded ? 6000 : undefined);
        const result = results.get(name)!;
        result.rate.push(measured.rate);
        result.cpu.push(measured.cpuUs);
        result.user.push(measured.userUs);
        result.system.push(measured.systemUs);
      }
    }
    const reference = median(results.get('node-redlock')!.cpu);
    for (const [name, { rate, cpu, user, system }] of results)
      console.log(
        `c = ${String(concurrency).padEnd(3)}  ${name.padEnd(13)}  ${median(rate).toFixed(0).padStart(6)} cycles/s  client CPU ${median(cpu).toFixed(0).padStart(3)} µs per cycle (${(median(cpu) / reference).toFixed(2)}× node-redlock's; user ${median(user).toFixed(0)}, system ${median(system).toFixed(0)}) [${cpu.map((x) => x.toFixed(0)).join(' ')}]`,
      );
  }
});
