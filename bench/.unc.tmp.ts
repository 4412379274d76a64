import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from '../src/index.js';
const ports = [7941, 7942, 7943, 7944, 7945];
const procs = ports.map((p) => spawn('redis-server', ['--port', String(p), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
await sleep(300);
const admin = ports.map((port) => new Redis({ port }));
await new Redlock(admin).trustMembers();
const w = new Redlock(ports.map((port) => new Redis({ port })));
const acq: number[] = [], rel: number[] = [];
for (let i = 0; i < 3000; i++) {
  const t0 = performance.now();
  const lock = await w.acquire('u' + i, 1000);
  const t1 = performance.now();
  if (i % 2) await sleep(1);
  const t2 = performance.now();
  await lock.release();
  acq.push(t1 - t0); rel.push(performance.now() - t2);
}
const q = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.floor(p * xs.length)]!.toFixed(3);
console.log('acquire p50', q(acq, 0.5), 'release p50', q(rel, 0.5));
const relAfterSleep = rel.filter((_, i) => i % 2 === 1), relNoSleep = rel.filter((_, i) => i % 2 === 0);
console.log('release after sleep(1) p50', q(relAfterSleep, 0.5), 'without', q(relNoSleep, 0.5));
await w.quit(); for (const p of procs) p.kill(); process.exit(0);
