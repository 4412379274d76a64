/**
 * The rollback of a failed attempt skips a member that refused it (src/quorum/release.ts): the
 * refusal is proof that nothing of the attempt is left there. Driven here on real masters with the
 * one case that could make it false: ioredis re-sends an acquire whose reply was lost in a
 * reconnect, its first run set our key, and the second run (which refuses, finding the key held)
 * must clear it (_acquired.lua, refused).
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, scriptCalls } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
  await trust(servers.clients);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

it('a refusal by the second run of an acquire ioredis re-sent after a reconnect clears the first run’s key, and the rollback skips that member', async () => {
  const proxy = await TcpProxy.start(servers.masters[0]!);
  const viaProxy = new Redis({ host: '127.0.0.1', port: proxy.port });
  try {
    await viaProxy.ping();
    // A long nodeTimeout: the round waits for member 0's answer to the re-sent call.
    const redlock = new Redlock([viaProxy, servers.clients[1]!, servers.clients[2]!], { nodeTimeout: 5_000, retryCount: 0 });
    const resource = fresh('resent-refusal');
    await servers.clients[1]!.set(resource, 'another owner', 'PX', 60_000);
    // Scripts run by members 0 and 2 from here on (the Redlock's first calls bind its script copies).
    await redlock.acquire(fresh('warm-up'), 10_000).then((lock) => lock.release());
    const before = await Promise.all(servers.clients.map(scriptCalls));

    // Member 0 runs the acquire and sets our key; its reply is held back in the proxy.
    proxy.hold('toClient');
    const attempt = errorOf(redlock.acquire(resource, 10_000));
    const ours = await eventually(async () => {
      const value = await servers.clients[0]!.get(resource);
      if (value === null) throw new Error('member 0 has not run the acquire yet');
      return value;
    });
    // The connection drops with the reply unread: ioredis reconnects and sends the call again.
    proxy.retarget(proxy.target);
    proxy.release('toClient');

    const error = await attempt;
    expect(error.attempts[0]!.votes.map((vote) => vote.vote)).toEqual(['taken', 'taken', 'locked']);
    await Promise.all([viaProxy, ...servers.clients].map((c) => c.ping()));
    // Nothing of the attempt is left: member 0's second run deleted the first run's key, member 2
    // was rolled back, member 1 still has its owner.
    expect(await Promise.all(servers.clients.map((c) => c.get(resource)))).toEqual([null, 'another owner', null]);
    expect(ours).not.toBe('another owner');
    // Script calls: member 0 ran the acquire twice and got no rollback; member 1 refused once and
    // got none; member 2 ran the acquire and its rollback.
    const after = await Promise.all(servers.clients.map(scriptCalls));
    expect(after.map((calls, index) => calls - before[index]!)).toEqual([2, 1, 2]);
  } finally {
    viaProxy.disconnect();
    await proxy.close();
  }
});
