/**
 * Issue 21: the guarantees of the wire layer, each driven through the mechanism that broke it on
 * 08db068, on real redis-server processes.
 * - Every write is bound to the epoch its member was last read in (src/members/epochs.ts,
 *   src/lua/_bound.lua): a trust or an acquire that ioredis re-sends into a restarted process
 *   writes nothing there.
 * - One server counts once per round (src/quorum/round.ts, #count), whichever of its addresses
 *   answers and is read first.
 * - An eviction ends the member's epoch in the same script run that would grant on the key's
 *   absence (src/lua/_epoch.lua): eviction switched on at runtime has no window.
 */
import Redis, { type RedisOptions } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { connected, eventually, fresh, sleep } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
}, 30_000);
afterAll(() => servers?.close());
afterEach(() => servers.heal(), 30_000);

const opened: Redis[] = [];
afterEach(() => {
  for (const redis of opened.splice(0)) redis.disconnect();
});
/** Clients of the test's own, with `options` (a service's configuration). */
function clients(options: RedisOptions = {}): Redis[] {
  const made = servers.masters.map((master) => {
    const redis = new Redis({ host: master.host, port: master.port, ...options });
    redis.on('error', () => {});
    return redis;
  });
  opened.push(...made);
  return made;
}

/** One client of the test's own to master `index`, with `options`. */
function connect(index: number, options: RedisOptions = {}): Redis {
  const master = servers.masters[index]!;
  const redis = new Redis({ host: master.host, port: master.port, ...options });
  redis.on('error', () => {});
  opened.push(redis);
  return redis;
}

const ready = (redis: Redis) => eventually(async () => expect(redis.status).toBe('ready'), 10_000);

describe('a write is bound to its epoch', () => {
  /**
   * Defect 1. An operator's trust whose reply from m2 is outstanding when m2 is killed and
   * restarted empty: ioredis sends the call again, to the new process. On 08db068 trust.lua ran
   * there and declared the new epoch brand new (no quarantine), and a second client took a lock
   * that rested on m2 and m1, while its holder held it.
   */
  it('a trust re-sent into a restarted member trusts nothing there, and no second holder gets in', async () => {
    const resource = fresh('trust-resent');
    const holder = await new Redlock(clients(), { retryCount: 0 }).acquire(resource, 20_000);
    // The holder's lock rests on m1 and m2 only (m0 lost it: a release that reached only m0, say).
    await servers.clients[0]!.del(resource);
    const operatorClients = clients();
    await Promise.all(operatorClients.map((redis) => redis.ping())); // an operator's process, connected
    const operator = new Redlock(operatorClients, { retryCount: 0 });
    await servers.masters[2]!.pause();
    const trusting = operator.trustMembers({ timeoutMs: 10_000 });
    await sleep(100); // the trust calls are written; m2's waits in its socket
    await servers.masters[2]!.restart(); // killed while paused, started empty on the same port
    const report = await trusting;
    expect(report.map((member) => member.trusted)).toEqual([true, true, false]);
    // The new process was not declared brand new: it sits out its quarantine.
    await servers.clients[2]!.ping();
    expect(await servers.clients[2]!.hget('quorumlock:epoch', 'genesis')).toBeNull();
    const second = await new Redlock(clients(), { retryCount: 0 }).acquire(resource, 5_000).catch((error: unknown) => error);
    expect(second).toBeInstanceOf(LockAcquireError);
    expect((second as LockAcquireError).outcome).not.toBe('expired');
    await holder.release();
  });

  /**
   * Defect 3. An acquire written to m2 is unanswered when m2 dies; the lock is won without it and
   * released while m2 is down (a client with enableOfflineQueue: false rejects the release at
   * once, as it does every call made while disconnected). When m2 comes back empty, ioredis
   * re-sends the acquire to the new process. On 08db068 it set the key there for the whole ttl:
   * nobody would release it, and with one more member down nobody could lock for that long.
   */
  it('an acquire re-sent into a restarted member after its release leaves no key there', async () => {
    const mine = clients({ enableOfflineQueue: false });
    await Promise.all(mine.map(ready));
    const redlock = new Redlock(mine, { retryCount: 0 });
    await (await redlock.acquire(fresh('warm'), 5_000)).release(); // every member's epoch is known
    const resource = fresh('resent-acquire');
    await servers.masters[2]!.pause();
    const lock = await redlock.acquire(resource, 30_000);
    expect(lock.votes[2]!.vote).toBe('pending');
    await servers.masters[2]!.kill();
    await eventually(async () => expect(mine[2]!.status).not.toBe('ready'));
    await lock.release();
    await servers.masters[2]!.restart();
    await ready(mine[2]!);
    await mine[2]!.ping(); // behind the re-sent acquire on the same connection
    expect(await servers.clients[2]!.get(resource)).toBeNull();
  });
});

describe('one server counts once', () => {
  /**
   * Defect 2. One server listed under two addresses, one of them slow (a proxy adds latency): the
   * fast address answered and counted before the slow one's INFO named the same run id, and then
   * the slow one counted too. On 08db068 a new Redlock's first acquire won on that one server
   * while the only other member was stalled.
   */
  it("a new Redlock's first round does not count one server twice", async () => {
    const proxy = await TcpProxy.start({ host: servers.masters[0]!.host, port: servers.masters[0]!.port });
    try {
      proxy.latencyMs = 60;
      const slow = new Redis({ host: '127.0.0.1', port: proxy.port });
      slow.on('error', () => {});
      opened.push(slow);
      const [fast, , other] = clients();
      await servers.masters[2]!.pause();
      // The slow address first in the list: the Redlock marks the later one a duplicate only once
      // both readings are in, and the fast one answers long before.
      const redlock = new Redlock([slow, fast!, other!], { retryCount: 0, nodeTimeout: 1_000 });
      const result = await redlock.acquire(fresh('twice'), 10_000).catch((error: unknown) => error);
      if (!(result instanceof Error)) await (result as Lock).release();
      expect(result).toBeInstanceOf(LockAcquireError);
      const votes = (result as LockAcquireError).attempts[0]!.votes;
      expect(votes.filter((vote) => vote.vote === 'locked' && vote.notCounting === undefined)).toHaveLength(1);
      expect(votes.some((vote) => /the same server as/.test(vote.notCounting ?? ''))).toBe(true);
    } finally {
      await servers.masters[2]!.resume();
      await proxy.close();
    }
  });
});

describe('a member not identified yet', () => {
  /**
   * A member whose first INFO reading failed (here: -BUSY, a long script from another client on
   * the server at the moment the Redlock was made) has no identity until a reading succeeds. On
   * 5a64be4 its yes counted without one, so the same server under two names counted twice in every
   * round (found by review). Now such a member does not count until it is identified (watch.ts).
   */
  it('a member whose first INFO reading failed does not count until it is identified: one server never counts twice', async () => {
    const a = connect(0);
    const b = connect(0, { host: 'localhost', family: 4 }); // the same server as a, another name
    const c = connect(2);
    await Promise.all([a, b, c].map((r) => r.ping()));
    const admin = connect(0);
    await admin.config('SET', 'busy-reply-threshold', '20');
    try {
      // A long script from someone else: the server answers -BUSY to everything meanwhile.
      const busy = admin.eval('local x = 0 for i = 1, 60000000 do x = x + i end return 1', 0).catch(() => undefined);
      await sleep(50);
      const redlock = new Redlock([a, b, c], { retryCount: 0, nodeTimeout: 500 });
      await busy;
      await sleep(3_000); // not a first-round race: the member stays identity-less until its next reading (10 s)
      await servers.masters[2]!.pause();
      const result = await redlock.acquire(fresh('twice'), 10_000).catch((error: unknown) => error);
      if (!(result instanceof Error)) {
        const lock = result as Lock;
        const votes = lock.votes.map((v) => `${v.member}:${v.vote}:${v.notCounting ?? ''}`);
        await servers.masters[2]!.resume();
        await lock.release();
        expect.fail(`won on one server: ${votes.join(' | ')}`);
      }
      expect(result).toBeInstanceOf(LockAcquireError);
    } finally {
      await servers.masters[2]!.resume();
      await admin.config('SET', 'busy-reply-threshold', '5000');
    }
  });
});

describe('operator calls, bounded and bound', () => {
  /**
   * trustMembers({ timeoutMs }) reports a silent member as not trusted. On 5a64be4 its call was
   * not cancelled: the epoch read answered later and the trust was written then, so the operator
   * was told "not trusted" about a member that ended up trusted (found by review). Now the write
   * is sent only while the call's round still waits.
   */
  it('a trust reported as timed out is not applied after the deadline', async () => {
    // m2 restarted: a new, untrusted epoch (the harness trusted the first one).
    await servers.masters[2]!.restart();
    await eventually(async () => expect(await servers.clients[2]!.ping()).toBe('PONG'), 10_000);
    const clients = [connect(0), connect(1), connect(2)];
    await Promise.all(clients.map((r) => r.ping()));
    const operator = new Redlock(clients, { maxLockTtl: 60_000 });
    await operator
      .acquire(fresh('warm'), 1_000)
      .then((lock) => lock.release())
      .catch(() => undefined); // epochs begun and read
    expect(await servers.clients[2]!.hget('quorumlock:epoch', 'genesis')).toBeNull();
    await servers.masters[2]!.pause();
    const report = await operator.trustMembers({ timeoutMs: 300 });
    expect(report[2]!.trusted).toBe(false);
    await servers.masters[2]!.resume();
    await sleep(300);
    // Told not trusted, m2 is not trusted.
    expect(await servers.clients[2]!.hget('quorumlock:epoch', 'genesis')).toBeNull();
  });

  /**
   * A client with no connection counted is a one-off script's "first" connection; on 5a64be4 one
   * that had been connected and lost its server before this Redlock was made counted as first
   * too, and the member restarted empty during the call was trusted (found by review). Now only a
   * client that never connected is first (ioredis counts its reconnect attempts).
   */
  it('a Redlock made while a client is reconnecting does not trust the process it reconnects to', async () => {
    const resource = fresh('reconnecting');
    const holder = await (await connected(new Redlock(servers.connect(), { retryCount: 0 }))).acquire(resource, 20_000);
    await servers.clients[0]!.del(resource); // the lock rests on m1 and m2 only
    const clients = [connect(0), connect(1), connect(2)];
    await Promise.all(clients.map((r) => r.ping()));
    await servers.masters[2]!.kill();
    await eventually(async () => expect(clients[2]!.status).not.toBe('ready'));
    const operator = new Redlock(clients, { retryCount: 0 });
    const trusting = operator.trustMembers({ timeoutMs: 10_000 });
    await sleep(100);
    await servers.masters[2]!.restart();
    const report = await trusting;
    const second = await new Redlock(servers.connect(), { retryCount: 0 }).acquire(resource, 5_000).catch((error: unknown) => error);
    const overlap = !(second instanceof Error);
    if (overlap) await (second as Lock).release();
    await holder.release().catch(() => undefined);
    expect(report[2]!.trusted).toBe(false);
    expect(overlap).toBe(false);
  });
});

describe('eviction switched on at runtime', () => {
  /**
   * Defect 4. CONFIG SET maxmemory and a volatile-* policy on members whose connections stay
   * open: the held lock key is evicted at once, the epoch hash (no TTL) survives, and the
   * client's INFO poll sees the policy only at its next reading (10 s). On 08db068 a second
   * client locked while the first held the lock. Every eviction moves INFO stats' evicted_keys,
   * and the acquire script reads it in the run that would grant: the epoch ends there.
   */
  it('a lock key evicted on a majority never lets a second holder in', async () => {
    const resource = fresh('evicted-at-runtime');
    const holder = await new Redlock(clients(), { retryCount: 0 }).acquire(resource, 30_000);
    const second = new Redlock(clients(), { retryCount: 0 });
    await (await second.acquire(fresh('warm'), 5_000)).release(); // its connections and readings are up before the switch
    for (const member of servers.clients.slice(0, 2)) {
      const used = Number(/used_memory:(\d+)/.exec(await member.info('memory'))![1]);
      await member.config('SET', 'maxmemory-policy', 'volatile-ttl');
      await member.config('SET', 'maxmemory', String(used + 400_000));
      // Long-lived fillers: volatile-ttl evicts the shortest TTL first, the lock key.
      for (let i = 0; i < 20; i++) await member.set(`filler:${resource}:${i}`, 'x'.repeat(50_000), 'EX', 3600).catch(() => undefined);
    }
    try {
      for (const member of servers.clients.slice(0, 2)) expect(await member.exists(resource)).toBe(0);
      const result = await second.acquire(resource, 5_000).catch((error: unknown) => error);
      if (!(result instanceof Error)) await (result as Lock).release();
      expect(result).toBeInstanceOf(LockAcquireError);
    } finally {
      for (const member of servers.clients.slice(0, 2)) {
        await member.config('SET', 'maxmemory', '0');
        await member.config('SET', 'maxmemory-policy', 'noeviction');
      }
      await holder.release();
    }
  });
});
