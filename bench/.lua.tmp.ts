// Server µs of Lua pieces: INFO replication, INFO server, HMGET, TIME, per call.
import Redis from 'ioredis';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
const proc = spawn('redis-server', ['--port', '7932', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
await sleep(300);
const r = new Redis({ port: 7932 });
const bodies: Record<string, string> = {
  empty: "return 1",
  infoRepl: "redis.call('INFO','replication') return 1",
  infoServer: "redis.call('INFO','server') return 1",
  hmget: "redis.call('HMGET', KEYS[1], 'id','since','run_id','replid') return 1",
  time: "redis.call('TIME') return 1",
  zadd2: "redis.call('ZADD', KEYS[1], 1, 'a') redis.call('ZADD', KEYS[1], 2, 'b') return 1",
};
const shas: Record<string, string> = {};
for (const [k, v] of Object.entries(bodies)) shas[k] = (await r.script('LOAD', v)) as string;
await r.hset('ep', 'id', '1', 'since', '2', 'run_id', 'x', 'replid', 'y');
for (let round = 0; round < 3; round++) {
  const out: string[] = [];
  for (const name of Object.keys(bodies)) {
    await r.config('RESETSTAT');
    for (let b = 0; b < 10; b++) { const p = r.pipeline(); for (let i = 0; i < 2000; i++) p.evalsha(shas[name]!, 1, 'ep'); await p.exec(); }
    out.push(`${name} ${/usec_per_call=([\d.]+)/.exec(await r.info('commandstats'))![1]}`);
  }
  console.log(out.join(' | '));
}
r.disconnect(); proc.kill();
