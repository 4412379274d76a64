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
import { resourceKeys } from '../../src/store/keys.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, scriptCalls } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
  await trust(servers.clients);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

/**
 * A Redlock on members 0 (through a proxy), 1 (where `resource` has another owner) and 2, whose
 * acquire of `resource` member 0 has run (our key is set there) with its reply held in the proxy.
 * `resend()` drops the connection with the reply unread: ioredis reconnects and sends the call
 * again, and member 0's second run finds the first run's key.
 */
async function acquireWithReplyLost(label: string, beforeAttempt: () => Promise<void> = async () => undefined) {
  const proxy = await TcpProxy.start(servers.masters[0]!);
  const viaProxy = new Redis({ host: '127.0.0.1', port: proxy.port });
  viaProxy.on('error', () => undefined);
  const close = async () => {
    viaProxy.disconnect();
    await proxy.close();
  };
  try {
    await viaProxy.ping();
    // A long nodeTimeout: the round waits for member 0's answer to the re-sent call.
    const redlock = new Redlock([viaProxy, servers.clients[1]!, servers.clients[2]!], { nodeTimeout: 5_000, retryCount: 0 });
    const resource = fresh(label);
    await servers.clients[1]!.set(resource, 'another owner', 'PX', 60_000);
    // Scripts run by members 0 and 2 from here on (the Redlock's first calls bind its script copies).
    await redlock.acquire(fresh('warm-up'), 10_000).then((lock) => lock.release());
    // The release settled on a quorum: the rest of it is read before going on (behind a PING on each connection).
    await Promise.all([viaProxy, servers.clients[1]!, servers.clients[2]!].map((c) => c.ping()));
    await beforeAttempt();
    proxy.hold('toClient');
    const attempt = errorOf(redlock.acquire(resource, 10_000));
    const ours = await eventually(async () => {
      const value = await servers.clients[0]!.get(resource);
      if (value === null) throw new Error('member 0 has not run the acquire yet');
      return value;
    });
    const resend = () => {
      proxy.retarget(proxy.target);
      proxy.release('toClient');
    };
    return { viaProxy, resource, attempt, ours, resend, close };
  } catch (error) {
    await close();
    throw error;
  }
}

it('a refusal by the second run of an acquire ioredis re-sent after a reconnect clears the first run’s key, and the rollback skips that member', async () => {
  let before: number[] = [];
  const { viaProxy, resource, attempt, ours, resend, close } = await acquireWithReplyLost('resent-refusal', async () => {
    before = await Promise.all(servers.clients.map(scriptCalls));
  });
  try {
    resend();
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
    await close();
  }
});

it('the refusal that clears a re-sent call’s key wakes the waiter first in line, as the rollback’s release would have', async () => {
  const waiterRedlock = new Redlock(servers.connect(), { retryDelay: 5_000, retryJitter: 0 });
  const { resource, attempt, resend, close } = await acquireWithReplyLost('resent-wake');
  try {
    // W is refused everywhere (the first run's key on 0, the owner on 1, the attempt on 2) and
    // waits in line; its own retry would come only after 5 s, past its 4 s budget.
    const started = performance.now();
    const waiting = waiterRedlock.acquire(resource, 10_000, { waitTimeout: 4_000 });
    await eventually(async () => expect(await servers.clients[0]!.zcard(resourceKeys([resource])[1]!)).toBe(1));
    resend();
    await attempt;
    // Members 0 (the re-sent call's refusal) and 2 (the rollback) wake W: a quorum of 3.
    const lock = await waiting;
    expect(performance.now() - started).toBeLessThan(3_000);
    await lock.release();
  } finally {
    await waiterRedlock.quit();
    await close();
  }
});
