/** The harness itself: what a user sees without redis-server, and the faults it can inject. */
import Redis from 'ioredis';
import { afterEach, expect, it } from 'vitest';
import { processBackend } from '../harness/process.js';

const saved = process.env.QUORUMLOCK_REDIS_SERVER;
afterEach(() => {
  if (saved === undefined) delete process.env.QUORUMLOCK_REDIS_SERVER;
  else process.env.QUORUMLOCK_REDIS_SERVER = saved;
});

it('without redis-server, names the binary it tried and says how to install one (apt, brew) or run without it', async () => {
  process.env.QUORUMLOCK_REDIS_SERVER = '/nonexistent/redis-server';
  const error = await processBackend.start(1).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(Error);
  const message = (error as Error).message;
  expect(message).toContain('apt-get install -y redis-server');
  expect(message).toContain('brew install redis');
  expect(message).toContain('QUORUMLOCK_REDIS_SERVER=/nonexistent/redis-server could not be run');
  expect(message).toContain('npx vitest run --project unit');
  expect(message).toContain('npm run test:containers');
  expect(message).not.toContain('compose masters');

  delete process.env.QUORUMLOCK_REDIS_SERVER;
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  try {
    const fromPath = await processBackend.start(1).catch((e: unknown) => e);
    expect((fromPath as Error).message).toMatch(/^redis-server was not found on PATH\. /);
  } finally {
    process.env.PATH = path;
  }
});

it('kills, pauses and restarts a master on the same port, empty', async () => {
  const set = await processBackend.start(1);
  const master = set.masters[0]!;
  const client = new Redis({ host: master.host, port: master.port, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    await client.set('k', 'v');
    await master.pause();
    const paused = await Promise.race([client.ping(), new Promise((resolve) => setTimeout(() => resolve('no answer'), 200))]);
    expect(paused).toBe('no answer');
    await master.resume();
    expect(await client.get('k')).toBe('v');
    await master.kill();
    expect(master.running).toBe(false);
    await master.restart();
    expect(await client.get('k')).toBeNull(); // same port, reconnected, nothing kept
  } finally {
    client.disconnect();
    await set.stop();
  }
});
