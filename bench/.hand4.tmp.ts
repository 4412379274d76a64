import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from '../src/index.js';
import { Watch } from '../src/waiting/notifications.js';
const ports = [7921, 7922, 7923, 7924, 7925];
const procs = ports.map((p) => spawn('redis-server', ['--port', String(p), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
await sleep(300);
const admin = ports.map((port) => new Redis({ port }));
await new Redlock(admin).trustMembers();
let relAt = 0; let firstMsg = 0; let thirdMsg = 0; let count = 0;
const orig = Watch.prototype.handOver;
Watch.prototype.handOver = function (i: number, s: string, c: boolean) {
  count++;
  const t = performance.now();
  if (firstMsg === 0) firstMsg = t;
  if (this.handedBy.size === 2 && thirdMsg === 0) thirdMsg = t;
  return orig.call(this, i, s, c);
};
const workers = Array.from({ length: 8 }, () => new Redlock(ports.map((port) => new Redis({ port }))));
const key = 'h:' + Date.now();
for (const w of workers) await (await w.acquire(key + 'warm', 1000)).release();
let last: { id: number; at: number } | undefined;
const a: number[] = [], b: number[] = [], c: number[] = [], d: number[] = [];
const end = performance.now() + 6000;
await Promise.all(workers.map(async (w, id) => {
  while (performance.now() < end) {
    const lock = await w.acquire(key, 1000, { waitTimeout: 5000 });
    const at = performance.now();
    if (last && last.id !== id && firstMsg && thirdMsg) { a.push(firstMsg - last.at); b.push(thirdMsg - last.at); c.push(at - last.at); }
    await sleep(1);
    firstMsg = 0; thirdMsg = 0;
    last = { id, at: performance.now() };
    const r0 = performance.now();
    await lock.release();
    d.push(performance.now() - r0);
  }
}));
const q = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.floor(p * xs.length)]!.toFixed(3);
console.log('n', c.length, 'first msg p50', q(a, 0.5), 'third msg p50', q(b, 0.5), 'acquired p50', q(c, 0.5), 'release round p50', q(d, 0.5));
for (const w of workers) await w.quit();
for (const p of procs) p.kill();
process.exit(0);
