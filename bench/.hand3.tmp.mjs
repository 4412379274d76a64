// 8 workers, one key, 1 ms holds: handoff latency, and how many wins came by hand-over.
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from '../dist/esm/index.js';
const ports = [7921, 7922, 7923, 7924, 7925];
const procs = ports.map((p) => spawn('redis-server', ['--port', String(p), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
await sleep(300);
const admin = ports.map((port) => new Redis({ port }));
await new Redlock(admin).trustMembers();
const workers = Array.from({ length: 8 }, () => new Redlock(ports.map((port) => new Redis({ port }))));
const key = 'h:' + Date.now();
for (const w of workers) await (await w.acquire(key + 'warm', 1000)).release();
let last, handed = 0, byAttempt = 0; const lat = []; const rel = [];
await Promise.all(admin.map((a) => a.config('RESETSTAT')));
const end = performance.now() + 8000;
await Promise.all(workers.map(async (w, id) => {
  while (performance.now() < end) {
    const lock = await w.acquire(key, 1000, { waitTimeout: 5000 });
    const at = performance.now();
    const locked = lock.votes.filter((v) => v.vote === 'locked');
    if (locked.every((v) => v.ms === 0)) handed++; else byAttempt++;
    if (last && last.id !== id) lat.push(at - last.at);
    await sleep(1);
    last = { id, at: performance.now() };
    const r0 = performance.now();
    await lock.release();
    rel.push(performance.now() - r0);
  }
}));
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.floor(p * lat.length)].toFixed(3);
rel.sort((a, b) => a - b);
console.log('release p50', rel[rel.length >> 1].toFixed(3));
console.log((await admin[0].info('commandstats')).split('\n').filter((l) => l.includes('evalsha') || l.includes('publish')).join('\n'));
console.log({ handed, byAttempt, n: lat.length, p50: q(0.5), p90: q(0.9), p99: q(0.99) });
for (const w of workers) await w.quit();
process.exit(0);
