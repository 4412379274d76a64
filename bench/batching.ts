/**
 * npm run bench:batching [-- --turns 3] [--cycles 30720]
 *
 * What the transport costs per script call, and what one script call per member per tick saves:
 * the checked floor (bench/peers.ts: quorumlock's keys, arguments, per-call check reads, writes
 * and batching, and nothing of its client) beside the same floor sending every call alone (the
 * "unbatched floor"), and quorumlock itself (which batches: src/members/batching.ts). Acquire +
 * release cycles on five local masters, at c = 1, 16, 128 and 512, in turns, medians printed.
 *
 * Not a client: the floor's batch has no epoch binding, no per-call error isolation and no
 * ordering rule with other commands: the floor of batching, not a design (docs/performance.md).
 */
import { parseArgs } from 'node:util';
import { median, turn } from './lib.js';
import { ALL, checkedFloor, withLockers } from './peers.js';

const { values } = parseArgs({ options: { turns: { type: 'string', default: '3' }, cycles: { type: 'string', default: '30720' } } });
const turns = Number(values.turns);
const cycles = Number(values.cycles);
const LEVELS = [1, 16, 128, 512];

await withLockers(
  (clients) => [
    ['unbatched floor', checkedFloor(false).create(clients)],
    ['checked floor', checkedFloor().create(clients)],
    ['quorumlock', ALL.find((peer) => peer.name === 'quorumlock')!.create(clients)],
  ],
  async (lockers) => {
    let key = 0;
    console.log(`five local masters, ${turns} turns of ${cycles} cycles (c = 1: ${cycles / 10}); medians`);
    for (const concurrency of LEVELS) {
      const count = concurrency === 1 ? cycles / 10 : cycles;
      const results = new Map<string, { rate: number[]; cpu: number[] }>(lockers.map(([name]) => [name, { rate: [], cpu: [] }]));
      for (let round = 0; round < turns; round++) {
        for (const [name, locker] of lockers) {
          const { rate, cpuUs } = await turn(locker, concurrency, count, () => `batching:${++key}`);
          results.get(name)!.rate.push(rate);
          results.get(name)!.cpu.push(cpuUs);
        }
      }
      const floorRate = median(results.get('checked floor')!.rate);
      for (const [name, { rate, cpu }] of results)
        console.log(
          `c = ${String(concurrency).padEnd(3)}  ${name.padEnd(15)}  ${median(rate).toFixed(0).padStart(6)} cycles/s (${(median(rate) / floorRate).toFixed(2)}× the checked floor)  client CPU ${median(cpu).toFixed(0).padStart(3)} µs per cycle`,
        );
    }
  },
);
