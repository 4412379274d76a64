// Server time of release.lua: plain, with a head to wake, and with a hand-over (generic and bound).
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { releaseLua } from '../src/lua/sources.js';
import { EPOCH_KEY, resourceKeys } from '../src/store/keys.js';
import { boundLua } from '../src/store/scripts.js';
import { Redlock } from '../src/index.js';
const proc = spawn('redis-server', ['--port', '7931', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await sleep(300);
const r = new Redis({ port: 7931 });
await new Redlock([r]).trustMembers();
const runId = /run_id:(\w+)/.exec(await r.info('server'))![1]!;
const generic = (await r.script('LOAD', releaseLua)) as string;
let bound: string | undefined;
try { bound = (await r.script('LOAD', boundLua(releaseLua.replace('local BOUND_RUN_ID = false', 'local BOUND_RUN_ID = false'), runId, 'ab12'))) as string; } catch (e) { console.log('no bound', String(e)); }
const N = 3000;
async function phase(label: string, sha: string, mode: 'plain' | 'wake' | 'hand') {
  for (let i = 0; i < N; i++) {
    const res = `x:${label}:${i}`;
    const k = resourceKeys([res]);
    const p = r.pipeline();
    p.set(res, 'v', 'PX', 10000);
    if (mode !== 'plain') {
      p.zadd(k[1]!, 1, 'lst.1.w'); p.zadd(k[2]!, Date.now() + 60000, 'lst.1.w'); p.pexpire(k[1]!, 60000); p.pexpire(k[2]!, 60000);
      if (mode === 'hand') p.hset(k[4]!, 'lst.1.w', `h${i} 10000 60000 1`);
    }
    await p.exec();
  }
  await r.config('RESETSTAT');
  const p = r.pipeline();
  for (let i = 0; i < N; i++) { const res = `x:${label}:${i}`; p.evalsha(sha, 6, ...resourceKeys([res]), EPOCH_KEY, 'v'); }
  await p.exec();
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+),usec_per_call=([\d.]+)/.exec(await r.info('commandstats'));
  console.log(label, m?.[3], 'µs/call');
}
for (let round = 0; round < 2; round++) {
  await phase(`plain${round}`, generic, 'plain');
  await phase(`wake${round}`, generic, 'wake');
  await phase(`hand${round}`, generic, 'hand');
  if (bound) await phase(`handBound${round}`, bound, 'hand');
}
r.disconnect(); proc.kill();
