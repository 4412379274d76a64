/**
 * The rollback of a failed attempt skips a member that refused it (src/quorum/release.ts): the
 * refusal is proof that nothing of the attempt is left there. Driven here on real masters with the
 * cases that could make it false: ioredis re-sends an acquire whose reply was lost in a reconnect
 * (its first run set our key: the second run must answer granted, as the first did, not refuse
 * and leave the key behind), and a late copy of a won acquire runs after the win (it must not
 * take the key from its holder). _acquired.lua, holdsAll.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { contextOf } from '../../src/redlock.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { connected, eventually, fresh, scriptCalls } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
  await trust(servers.clients);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

/**
 * A Redlock on members 0 (through a proxy), 1 (where `resource` has another owner) and 2, whose
 * acquire of `resource` member 0 has run (our key is set there) with its reply held in the proxy
 * (`attempt` is that acquire).
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
    const attempt = redlock.acquire(resource, 10_000);
    attempt.catch(() => undefined); // awaited by the test
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

it('the second run of an acquire ioredis re-sent after a reconnect finds the first run’s key and answers granted, as the first run did', async () => {
  let before: number[] = [];
  const { viaProxy, resource, attempt, ours, resend, close } = await acquireWithReplyLost('resent-granted', async () => {
    before = await Promise.all(servers.clients.map(scriptCalls));
  });
  try {
    resend();
    // Members 0 (the re-sent call) and 2 say locked: the attempt wins, with the key set on each.
    const won = await attempt;
    expect(won.votes.map((vote) => vote.vote)).toEqual(['locked', 'taken', 'locked']);
    expect(won.value).toBe(ours);
    await Promise.all([viaProxy, ...servers.clients].map((c) => c.ping()));
    expect(await Promise.all(servers.clients.map((c) => c.get(resource)))).toEqual([ours, 'another owner', ours]);
    // Script calls: member 0 ran the acquire twice and read its epoch once at the new connection
    // (members/epochs.ts), members 1 and 2 ran the acquire once; no rollback anywhere.
    const after = await Promise.all(servers.clients.map(scriptCalls));
    expect(after.map((calls, index) => calls - before[index]!)).toEqual([3, 1, 1]);
    await won.release();
  } finally {
    await close();
  }
});

it('a late copy of a won acquire (a delayed link delivers it after the win) leaves the holder its key: nobody else gets the lock', async () => {
  const redlock = await connected(new Redlock(servers.connect(), { retryCount: 0 }));
  const other = new Redlock(servers.connect(), { retryCount: 0 });
  const resource = fresh('late-copy');
  await servers.clients[2]!.set(resource, 'another owner', 'PX', 60_000);
  const lock = await redlock.acquire(resource, 10_000);
  // The same call (its value, waiter and ticket) run once more on member 0, as a late copy would.
  const request = { value: lock.value, ttlMs: 10_000, waiter: { id: lock.id, ticket: Date.now(), leaseMs: 0 }, quarantineMs: 0, fencing: false };
  const late = await contextOf(redlock).members[0]!.acquire([resource], request);
  expect(late.vote).toBe('locked'); // granted again, not refused
  expect(await Promise.all(servers.clients.map((c) => c.get(resource)))).toEqual([lock.value, lock.value, 'another owner']);
  expect(await other.tryAcquire(resource, 10_000)).toBeNull();
  await lock.release();
  await Promise.all([redlock.quit(), other.quit()]);
});

it('a refusal that finds part of the attempt’s hold (one of its keys gone between the two runs) says so, and the rollback goes there', async () => {
  const redlock = new Redlock(servers.connect(), { retryCount: 0 });
  const [a, b] = [fresh('part-a'), fresh('part-b')].map((name) => `{part}:${name}`) as [string, string];
  // The first run of an attempt set both keys on member 0; then b's key went (evicted, say) and another owner took it.
  await servers.clients[0]!.set(a, 'attempt-value', 'PX', 60_000);
  await servers.clients[0]!.set(b, 'another owner', 'PX', 60_000);
  const request = { value: 'attempt-value', ttlMs: 10_000, waiter: { id: 'x.1.1', ticket: Date.now(), leaseMs: 0 }, quarantineMs: 0, fencing: false };
  const refusal = await contextOf(redlock).members[0]!.acquire([a, b], request);
  expect(refusal).toMatchObject({ vote: 'taken', holdsOwn: true });
  await Promise.all(servers.clients.map((c) => c.del(a, b)));
  await redlock.quit();
});
