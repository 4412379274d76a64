// Handoff A/B: 8 workers on one key, 1 ms holds, a given ttl; the tree's built dist.
// usage: node bench/.ab.tmp.mjs <ttl> <seconds> <portBase>
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from '../dist/esm/index.js';
const [ttl, seconds, base] = process.argv.slice(2).map(Number);
const ports = [0, 1, 2, 3, 4].map((i) => base + i);
const procs = ports.map((p) => spawn('redis-server', ['--port', String(p), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
await sleep(300);
const admin = ports.map((port) => new Redis({ port }));
await new Redlock(admin).trustMembers();
const workers = Array.from({ length: 8 }, () => new Redlock(ports.map((port) => new Redis({ port }))));
const key = 'h:' + Date.now();
for (const w of workers) await (await w.acquire(key + 'warm', ttl)).release();
await Promise.all(admin.map((a) => a.config('RESETSTAT')));
let last; const lat = []; let n = 0;
const end = performance.now() + seconds * 1000;
await Promise.all(workers.map(async (w, id) => {
  while (performance.now() < end) {
    const lock = await w.acquire(key, ttl, { waitTimeout: 5000 });
    const at = performance.now(); n++;
    if (last && last.id !== id) lat.push(at - last.at);
    await sleep(1);
    last = { id, at: performance.now() };
    await lock.release();
  }
}));
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.floor(p * lat.length)].toFixed(3);
let calls = 0;
for (const a of admin) { const m = /cmdstat_evalsha:calls=(\d+)/.exec(await a.info('commandstats')); calls += Number(m?.[1] ?? 0); }
console.log(JSON.stringify({ ttl, perSecond: Math.round(n / seconds), p50: q(0.5), p90: q(0.9), p99: q(0.99), scriptCallsPerAcquisition: (calls / n).toFixed(1) }));
for (const w of workers) await w.quit();
for (const p of procs) p.kill();
process.exit(0);
