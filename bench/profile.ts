/**
 * npm run bench:profile [-- --cycles 20000] [--concurrency 1] [--fencing] [--allocations]
 *
 * Where quorumlock's client time goes: acquire + release cycles on five local masters with the
 * V8 CPU profiler on (node:inspector), then the self time per function, heaviest first, and
 * each member's server time per script call (INFO commandstats). Writes
 * bench/results/profile.cpuprofile (open it in Chrome DevTools for the call tree). With
 * --allocations, what the cycles allocate instead, per cycle and by site (V8's sampling heap
 * profiler, objects the collector freed included): the garbage behind the collector's share.
 */
import Redis from 'ioredis';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { processBackend } from '../test/harness/process.js';
import { commandstats, printAllocations, siteOf } from './lib.js';
import { from, quorumlock } from './quorumlock.js';

const { Redlock } = quorumlock;

const { values } = parseArgs({
  options: {
    cycles: { type: 'string', default: '20000' },
    concurrency: { type: 'string', default: '1' },
    fencing: { type: 'boolean', default: false },
    allocations: { type: 'boolean', default: false },
  },
});
const cycles = Number(values.cycles);
const concurrency = Number(values.concurrency);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
}

const set = await processBackend.start(5);
const clients = set.masters.map((m) => new Redis({ host: m.host, port: m.port }));
try {
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients, { retryCount: 0 });
  await redlock.trustMembers();
  let key = 0;
  const loop = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const lock = await redlock.acquire(`profile:${++key}`, 10_000, { fencing: values.fencing });
      await lock.release();
    }
  };
  await loop(2000); // warm up: JIT, script caches, settled epochs
  await Promise.all(clients.map((c) => c.config('RESETSTAT')));
  const session = new Session();
  session.connect();
  const measured = () => Promise.all(Array.from({ length: concurrency }, () => loop(Math.ceil(cycles / concurrency))));
  if (values.allocations) {
    await printAllocations(session, measured, Math.ceil(cycles / concurrency) * concurrency, `allocated at concurrency ${concurrency}`);
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await measured();
    const elapsedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    const { profile } = (await session.post('Profiler.stop')) as { profile: { nodes: ProfileNode[] } };
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/profile.cpuprofile', JSON.stringify(profile));

    const total = profile.nodes.reduce((sum, node) => sum + node.hitCount, 0);
    const byFunction = new Map<string, number>();
    for (const node of profile.nodes) {
      const site = siteOf(node.callFrame);
      byFunction.set(site, (byFunction.get(site) ?? 0) + node.hitCount);
    }
    const done = Math.ceil(cycles / concurrency) * concurrency;
    console.log(
      `quorumlock from ${from}: ${done} cycles at concurrency ${concurrency}${values.fencing ? ', fenced' : ''}: ${(done / (elapsedMs / 1000)).toFixed(0)} cycles/s, client CPU ${((cpu.user + cpu.system) / done).toFixed(1)} µs per cycle (user ${(cpu.user / done).toFixed(1)}, system ${(cpu.system / done).toFixed(1)})`,
    );
    console.log('\nself time, heaviest first:');
    for (const [name, hits] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 40))
      console.log(`${((100 * hits) / total).toFixed(1).padStart(5)} %  ${name}`);
    console.log('\nserver time per call (INFO commandstats, all members):');
    const stats = await commandstats(clients);
    for (const [command, { calls, usec }] of stats) console.log(`  ${command}: ${calls} calls, ${(usec / calls).toFixed(2)} µs per call`);
  }
} finally {
  for (const client of clients) client.disconnect();
  await set.stop();
}
