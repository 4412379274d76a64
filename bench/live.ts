/**
 * npm run bench:live [-- --concurrency 512] [--samples 5]
 *
 * What a cycle in flight keeps alive: quorumlock (the built package), node-redlock 4 and the
 * checked floor, each in turn on the same five local masters, `--concurrency` loops of acquire →
 * release on distinct keys; every 300 ms a full GC, then the heap in use above the idle heap,
 * divided by the loops. At hundreds of locks in flight, that live data is what each
 * young-generation collection copies (and, surviving two, promotes): it, more than what a cycle
 * allocates, is what the client CPU at c = 512 pays (docs/performance.md).
 */
import { parseArgs } from 'node:util';
import { forceGc, median } from './lib.js';
import { floorAndNodeRedlock, withLockers } from './peers.js';

const { values } = parseArgs({ options: { concurrency: { type: 'string', default: '512' }, samples: { type: 'string', default: '5' } } });
const concurrency = Number(values.concurrency);
if (forceGc === undefined) throw new Error('bench:live needs a forced GC (--expose-gc could not be set)');
const gc = forceGc;

await withLockers(floorAndNodeRedlock, async (lockers) => {
  let key = 0;
  console.log(`five local masters, ${concurrency} cycles in flight; live heap per cycle in flight (median of ${values.samples}, all in brackets)`);
  for (const [name, locker] of lockers) {
    for (let i = 0; i < 300; i++) await (await locker.acquire(`live:${++key}`, 10_000)).release(); // warm up
    gc();
    const idle = process.memoryUsage().heapUsed;
    let stop = false;
    const loops = Array.from({ length: concurrency }, async () => {
      while (!stop) await (await locker.acquire(`live:${++key}`, 10_000)).release();
    });
    const kb: number[] = [];
    for (let sample = 0; sample < Number(values.samples); sample++) {
      await new Promise((resolve) => setTimeout(resolve, 300));
      gc();
      kb.push((process.memoryUsage().heapUsed - idle) / concurrency / 1024);
    }
    stop = true;
    await Promise.all(loops);
    console.log(`${name.padEnd(14)} ${median(kb).toFixed(1).padStart(5)} KB  [${kb.map((x) => x.toFixed(1)).join(' ')}]`);
  }
});
