/**
 * npm run bench:live [-- --concurrency 512] [--samples 5] [--kinds]
 *
 * What a cycle in flight keeps alive: quorumlock (the built package), node-redlock 4 and the
 * checked floor, each in turn on the same five local masters, `--concurrency` loops of acquire →
 * release on distinct keys; every 300 ms a full GC, then the heap in use above the idle heap,
 * divided by the loops. At hundreds of locks in flight, that live data is what each
 * young-generation collection copies (and, surviving two, promotes): it, more than what a cycle
 * allocates, is what the client CPU at c = 512 pays (docs/performance.md). With --kinds, a heap
 * snapshot in flight beside one at rest, per kind of object (closures, promises, contexts,
 * arrays, ...): bytes and objects per cycle in flight, the heaviest kinds first.
 */
import { getHeapSnapshot } from 'node:v8';
import { parseArgs } from 'node:util';
import { forceGc, median } from './lib.js';
import { floorAndNodeRedlock, withLockers } from './peers.js';

const { values } = parseArgs({
  options: { concurrency: { type: 'string', default: '512' }, samples: { type: 'string', default: '5' }, kinds: { type: 'boolean', default: false } },
});
const concurrency = Number(values.concurrency);
if (forceGc === undefined) throw new Error('bench:live needs a forced GC (--expose-gc could not be set)');
const gc = forceGc;

/** Self size and count per kind of object in a heap snapshot (taken after a full GC). */
type Kinds = Map<string, { bytes: number; count: number }>;

async function kindsNow(): Promise<Kinds> {
  const chunks: Buffer[] = [];
  for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer);
  const snapshot = JSON.parse(Buffer.concat(chunks).toString()) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const [type, name, size] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [number, number, number];
  const kinds: Kinds = new Map();
  for (let node = 0; node < snapshot.nodes.length; node += fields.length) {
    const kind = types[snapshot.nodes[node + type]!]!;
    // Objects by constructor; closures by function name; the rest (arrays, strings, code…) by type.
    const label = kind === 'object' || kind === 'closure' ? `${kind} ${snapshot.strings[snapshot.nodes[node + name]!] || '(anonymous)'}` : kind;
    const entry = kinds.get(label) ?? { bytes: 0, count: 0 };
    entry.bytes += snapshot.nodes[node + size]!;
    entry.count++;
    kinds.set(label, entry);
  }
  return kinds;
}

function printKinds(busy: Kinds, idle: Kinds): void {
  const rows = [...busy]
    .map(([label, { bytes, count }]) => ({
      label,
      bytes: (bytes - (idle.get(label)?.bytes ?? 0)) / concurrency,
      count: (count - (idle.get(label)?.count ?? 0)) / concurrency,
    }))
    .sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((sum, row) => sum + row.bytes, 0);
  console.log(`  by kind (heap snapshot, ${(total / 1024).toFixed(1)} KB per cycle in flight):`);
  for (const row of rows.slice(0, 16)) console.log(`  ${row.bytes.toFixed(0).padStart(7)} B  ${row.count.toFixed(2).padStart(6)}×  ${row.label}`);
}

await withLockers(floorAndNodeRedlock, async (lockers) => {
  let key = 0;
  console.log(`five local masters, ${concurrency} cycles in flight; live heap per cycle in flight (median of ${values.samples}, all in brackets)`);
  for (const [name, locker] of lockers) {
    for (let i = 0; i < 300; i++) await (await locker.acquire(`live:${++key}`, 10_000)).release(); // warm up
    gc();
    const idle = process.memoryUsage().heapUsed;
    const idleKinds = values.kinds ? await kindsNow() : undefined;
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
    const busyKinds = idleKinds ? await kindsNow() : undefined;
    stop = true;
    await Promise.all(loops);
    console.log(`${name.padEnd(14)} ${median(kb).toFixed(1).padStart(5)} KB  [${kb.map((x) => x.toFixed(1)).join(' ')}]`);
    if (busyKinds && idleKinds) printKinds(busyKinds, idleKinds);
  }
});
