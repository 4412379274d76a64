/**
 * Batching (src/members/batching.ts, src/store/batch.ts): the acquire and release calls a tick
 * makes on one connection go out as one call of the batch script, on real redis-server
 * processes. What must hold: each call answers as it would alone (its own reply, its own error,
 * its own epoch binding), calls run in the order they were made (a release before the acquire
 * made after it; a call that is not batched after the batch made before it), and an eviction
 * switched on at runtime keeps every call of a batch from counting.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import type { RedisMember } from '../../src/members/redis-member.js';
import { BATCH_LIMIT } from '../../src/members/batching.js';
import { contextOf } from '../../src/redlock.js';
import { batchAnswer, batchArgs, batchLua } from '../../src/store/batch.js';
import { EPOCH_KEY, resourceKeys } from '../../src/store/keys.js';
import { acquireArgs } from '../../src/store/protocol.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { eventually, evictUntilGone, fresh, lineOf, sleep, stopEvicting } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterEach(() => servers.heal());
afterAll(() => servers?.close());

/** A Redlock on its own clients whose members all use bound copies (the batch is one of them). */
async function boundRedlock(options: ConstructorParameters<typeof Redlock>[1] = {}, clients = servers.connect()): Promise<Redlock> {
  const redlock = new Redlock(clients, { retryCount: 0, ...options });
  await eventually(async () => {
    if ((contextOf(redlock).members as RedisMember[]).some((member) => member.bound === undefined)) throw new Error('not bound yet');
  }, 10_000);
  await (await redlock.acquire(fresh('warm'), 5_000)).release(); // epochs read: the next calls are written at once
  return redlock;
}

const evalshaCalls = async (client: Redis) => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);

describe('batching', () => {
  it("a tick's acquires go out as one script call per member, each answered as alone", async () => {
    const redlock = await boundRedlock();
    const taken = fresh('batch-taken');
    const holder = await redlock.acquire(taken, 10_000);
    const resources = Array.from({ length: 6 }, () => fresh('batch'));
    await Promise.all(servers.clients.map((client) => client.config('RESETSTAT')));
    // Made in one tick: one batch per member, with a refused call among them.
    const results = await Promise.all([...resources, taken].map((resource) => redlock.tryAcquire(resource, 10_000)));
    // Seven acquires, two script calls per member: the tick's first alone, the six after it as
    // one batch (a member whose answer came after the refused round decided gets that round's
    // rollback, a release, as one call more).
    for (const calls of await Promise.all(servers.clients.map(evalshaCalls))) expect(calls).toBeLessThanOrEqual(3);
    const locks = results.slice(0, -1) as Lock[];
    expect(results.at(-1)).toBeNull(); // the held one: refused, its voters said 'taken'
    for (const [index, lock] of locks.entries()) {
      expect(lock.resources).toEqual([resources[index]]);
      expect(await servers.valuesOf(resources[index]!)).toEqual([lock.value, lock.value, lock.value]);
    }
    expect(await servers.valuesOf(taken)).toEqual([holder.value, holder.value, holder.value]);
    // The releases in one tick: one more batch each, every key deleted.
    const released = await Promise.all([...locks, holder].map((lock) => lock.release()));
    expect(released.map((result) => result.freed)).toEqual(Array(7).fill(true));
    for (const resource of [...resources, taken]) expect(await servers.valuesOf(resource)).toEqual([null, null, null]);
  });

  it('more calls in a tick than a batch takes: batches of BATCH_LIMIT, in order, every call answered', async () => {
    const clients = servers.connect();
    const redlock = await boundRedlock({}, clients);
    const resources = Array.from({ length: BATCH_LIMIT + 6 }, () => fresh('batch-many'));
    await Promise.all(servers.clients.map((client) => client.config('RESETSTAT')));
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 10_000)));
    // The rounds were decided by two members: a PING behind the calls on each connection waits for the third.
    await Promise.all(clients.map((client) => client.ping()));
    // Three script calls per member: the tick's first alone, a full batch, then the five after it.
    expect(await Promise.all(servers.clients.map(evalshaCalls))).toEqual([3, 3, 3]);
    for (const [index, lock] of locks.entries()) expect(lock.resources).toEqual([resources[index]]);
    await Promise.all(locks.map((lock) => lock.release()));
    for (const resource of resources.slice(-3)) expect(await servers.valuesOf(resource)).toEqual([null, null, null]);
  });

  it('a batch that ioredis re-sends to a restarted process fails there with NOSCRIPT: none of its calls runs', async () => {
    const clients = servers.connect();
    const redlock = await boundRedlock({}, clients);
    const copy = (contextOf(redlock).members[0] as RedisMember).bound!;
    const [m0] = servers.masters;
    // m0 takes the tick's calls into its socket but runs nothing; the other two decide the rounds.
    await m0!.pause();
    const resources = [fresh('batch-resent'), fresh('batch-resent'), fresh('batch-resent')];
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 10_000)));
    for (const lock of locks) expect(['pending', 'timeout']).toContain(lock.votes[0]!.vote);
    // The process dies with the first call and the batch of the other two unanswered; ioredis
    // re-sends both to the new one, where neither copy exists.
    await m0!.kill();
    await m0!.restart();
    // A PING on the same connection travels behind the re-sent calls: when it returns, they ran (or failed).
    await eventually(async () => expect(await clients[0]!.ping()).toBe('PONG'));
    await sleep(100);
    expect(await Promise.all(resources.map((resource) => clients[0]!.exists(resource)))).toEqual([0, 0, 0]);
    expect(await clients[0]!.script('EXISTS', copy.shas.quorumlockAcquire, copy.shas.quorumlockBatch)).toEqual([0, 0]);
    for (const lock of locks) await lock.release();
    // The shared clients reconnect to m0 too: trusted once they have, or the trust would refuse it (EPOCH_TOO_NEW).
    await eventually(async () => expect(await servers.clients[0]!.ping()).toBe('PONG'));
    await trust(servers.clients);
  });

  it('a call that fails inside a batch fails alone: the others of the batch lock', async () => {
    const redlock = await boundRedlock();
    const broken = fresh('batch-broken');
    // A line key of the wrong type: the acquire script's line commands fail (WRONGTYPE) on every member.
    await Promise.all(servers.clients.map((client) => client.set(lineOf(broken), 'not a line')));
    const others = [fresh('batch-ok'), fresh('batch-ok')];
    const [first, failed, second] = await Promise.all(
      [others[0]!, broken, others[1]!].map((resource) => redlock.acquire(resource, 5_000).catch((error: unknown) => error)),
    );
    expect(failed).toBeInstanceOf(LockAcquireError);
    const votes = (failed as LockAcquireError).attempts[0]!.votes;
    // Two errors decide the round (the third member's answer may come after it: 'pending').
    const errors = votes.filter((vote) => vote.vote === 'error');
    expect(errors.length).toBeGreaterThanOrEqual(2);
    for (const vote of errors) expect(vote.error!.message).toMatch(/WRONGTYPE/);
    for (const lock of [first, second] as Lock[]) {
      expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(2);
      await lock.release();
    }
    await Promise.all(servers.clients.map((client) => client.del(lineOf(broken))));
  });

  it('calls run in the order they were made: a release before the acquire made after it in the same tick', async () => {
    const redlock = await boundRedlock();
    const resource = fresh('batch-order');
    const lock = await redlock.acquire(resource, 10_000);
    // One tick: the release, then another owner's one attempt at the same resource. Run in any
    // other order, the attempt would meet the held key and fail.
    const [released, next] = await Promise.all([lock.release(), redlock.acquire(resource, 10_000)]);
    expect(released.freed).toBe(true);
    expect(await servers.valuesOf(resource)).toEqual([next.value, next.value, next.value]);
    await next.release();
  });

  it('a call that is not batched goes out after the batch made before it, on every member', async () => {
    const redlock = await boundRedlock();
    const held = await redlock.acquire(fresh('batch-held'), 10_000);
    const monitors = servers.masters.map((master) => new Redis({ host: master.host, port: master.port }));
    const seen: string[][] = monitors.map(() => []);
    try {
      await Promise.all(
        monitors.map(async (monitor, index) => {
          const feed = await monitor.monitor();
          feed.on('monitor', (_time: string, args: string[]) => {
            if (args[0]?.toLowerCase() === 'evalsha') seen[index]!.push(`${args[2]} ${args[3]}`);
          });
        }),
      );
      const resources = [fresh('batch-first'), fresh('batch-first'), fresh('batch-first')];
      // One tick: three acquires (the first alone, two batched), then an extend (not batched) of the lock held.
      const done = Promise.all([...resources.map((resource) => redlock.acquire(resource, 10_000)), held.extend(10_000)]);
      const [a, b, c] = (await done) as [Lock, Lock, Lock];
      await eventually(async () => expect(seen.every((calls) => calls.length >= 3)).toBe(true));
      for (const calls of seen) {
        // The first acquire (its resource's 5 keys and the epoch hash), the batch of the other two
        // (5 keys each, the epoch hash they share once), then the extend (the held lock's key and the epoch hash).
        expect(calls.slice(0, 3)).toEqual([`6 ${resources[0]}`, `11 ${resources[1]}`, `2 ${held.resources[0]}`]);
      }
      for (const lock of [a, b, c, held]) await lock.release();
    } finally {
      for (const monitor of monitors) monitor.disconnect();
    }
  });

  it('an ACL that refuses a batch for some of its keys fails its calls once; the connection batches no more', async () => {
    await Promise.all(
      servers.clients.map((admin) =>
        admin.call('ACL', 'SETUSER', 'some-keys', 'on', '>some-keys-secret', '~allowed:*', '~{allowed:*', '~quorumlock:*', '&*', '+@all'),
      ),
    );
    const users = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, username: 'some-keys', password: 'some-keys-secret' }));
    try {
      const redlock = new Redlock(users, { retryCount: 0 });
      await eventually(async () => {
        if ((contextOf(redlock).members as RedisMember[]).some((member) => member.bound === undefined)) throw new Error('not bound yet');
      }, 10_000);
      await (await redlock.acquire(fresh('allowed:warm'), 5_000)).release();
      // The tick's first call goes alone; the other two, an allowed and a denied one, as a batch.
      const tick = () =>
        Promise.all(
          [fresh('allowed:first'), fresh('allowed:batch'), fresh('denied:batch')].map((name) => redlock.acquire(name, 5_000).catch((error: unknown) => error)),
        );
      // The batch holds a key the user may not touch: the server refuses it whole (NOPERM).
      const [first, refused, denied] = await tick();
      expect(refused).toBeInstanceOf(LockAcquireError);
      expect(denied).toBeInstanceOf(LockAcquireError);
      await (first as Lock).release();
      // From then on the calls go one by one: only the denied one fails.
      const [firstAgain, allowed, deniedAgain] = await tick();
      await (firstAgain as Lock).release();
      expect(allowed).not.toBeInstanceOf(Error);
      expect(deniedAgain).toBeInstanceOf(LockAcquireError);
      for (const vote of (deniedAgain as LockAcquireError).attempts[0]!.votes.filter((v) => v.vote === 'error')) expect(vote.error!.message).toMatch(/NOPERM/);
      await (allowed as Lock).release();
    } finally {
      for (const user of users) user.disconnect();
      await Promise.all(servers.clients.map((admin) => admin.call('ACL', 'DELUSER', 'some-keys')));
    }
  });

  it('eviction switched on at runtime: no call of a batch counts on the members that evicted', async () => {
    const holderRedlock = await boundRedlock();
    const resource = fresh('batch-evicted');
    const holder = await holderRedlock.acquire(resource, 30_000);
    const second = await boundRedlock();
    const admins = servers.clients.slice(0, 2); // a majority: the evictions alone would let `second` in
    try {
      await evictUntilGone(admins, resource);
      // One tick: the first call alone, then a batch per member with the evicted resource in it.
      const results = await Promise.all(
        [fresh('batch-evicted-other'), fresh('batch-evicted-other'), resource].map((name) => second.acquire(name, 5_000).catch((error: unknown) => error)),
      );
      for (const result of results) {
        if (!(result instanceof Error)) await (result as Lock).release();
        expect(result).toBeInstanceOf(LockAcquireError);
        expect((result as LockAcquireError).attempts[0]!.votes.slice(0, 2).map((vote) => vote.vote)).not.toContain('locked');
      }
    } finally {
      await stopEvicting(admins);
      await holder.release().catch(() => undefined);
    }
  }, 30_000);
});

describe('the batch script on its own', () => {
  it('answers each call as the call alone would: a reply, an error reply, or an error raised inside', async () => {
    const client = servers.clients[0]!;
    const epochId = (await client.hget(EPOCH_KEY, 'id'))!;
    const release = (resource: string, epoch: string) => ({
      script: 'quorumlockRelease' as const,
      keys: [...resourceKeys([resource]), EPOCH_KEY],
      args: [epoch, 'some value', '', ''],
    });
    const acquire = (resource: string) => ({
      script: 'quorumlockAcquire' as const,
      keys: [...resourceKeys([resource]), EPOCH_KEY],
      args: [epochId, ...acquireArgs({ value: 'v', ttlMs: 5_000, waiter: { id: 'w', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false }, '')],
    });
    const wrongType = fresh('batch-wrongtype');
    await client.set(lineOf(wrongType), 'not a line');
    const held = fresh('batch-held');
    await client.set(held, 'some value');
    // The text as a generic script (EVAL), to read its replies here.
    const { keys, args } = batchArgs([
      release(fresh('batch-absent'), epochId),
      release(fresh('batch-absent'), 'another epoch'), // (so each call sends its own epoch hash and id)
      acquire(wrongType),
      release(held, epochId),
    ]);
    const reply = await client.eval(batchLua, keys.length, ...keys, ...args);
    expect(batchAnswer(reply, 0)).toEqual({ reply: 0 }); // nothing to release
    const refused = batchAnswer(reply, 1); // its epoch binding refuses, as the script alone does
    expect('error' in refused && refused.error.message).toMatch(/^QUORUMLOCK_EPOCH /);
    const raised = batchAnswer(reply, 2); // an error raised inside, caught for that call alone
    expect('error' in raised && raised.error.message).toMatch(/WRONGTYPE/);
    expect(batchAnswer(reply, 3)).toEqual({ reply: 1 }); // the held key, deleted after the failure before it
    expect(await client.exists(held)).toBe(0);
    expect('error' in batchAnswer(reply, 4)).toBe(true); // no such call: a protocol error, never a reply
    await client.del(lineOf(wrongType));
  });

  it('the calls of a batch read the epoch once, and a call that begins a new epoch is seen by every call after it', async () => {
    const client = servers.clients[0]!;
    const epochId = (await client.hget(EPOCH_KEY, 'id'))!;
    const release = (epoch: string) => ({
      script: 'quorumlockRelease' as const,
      keys: [...resourceKeys([fresh('batch-memo')]), EPOCH_KEY],
      args: [epoch, 'v', '', ''],
    });
    const acquire = (epoch: string) => ({
      script: 'quorumlockAcquire' as const,
      keys: [...resourceKeys([fresh('batch-memo')]), EPOCH_KEY],
      args: [epoch, ...acquireArgs({ value: 'v', ttlMs: 5_000, waiter: { id: 'w', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false }, '')],
    });
    const hmgets = async () => Number(/cmdstat_hmget:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);
    await client.config('RESETSTAT'); // (the epoch's eviction count is 0 already: it stays)
    const five = batchArgs([release(epochId), release(epochId), release(epochId), release(epochId), release(epochId)]);
    expect(five.keys).toHaveLength(5 * 5 + 1); // the epoch hash they share, once (and the id they are bound to)
    const replies = await client.eval(batchLua, five.keys.length, ...five.keys, ...five.args);
    expect([0, 1, 2, 3, 4].map((index) => batchAnswer(replies, index))).toEqual(Array(5).fill({ reply: 0 }));
    expect(await hmgets()).toBe(1);
    // As if the server had evicted a key since the epoch began: the acquire's check (it reads the
    // eviction count; a release does not) begins a new epoch. The release after it, bound to the
    // old epoch, is refused there, as alone; the one before it, read with the old epoch, was not.
    await client.hset(EPOCH_KEY, 'evicted', '999');
    const { keys, args } = batchArgs([release(epochId), acquire(epochId), release(epochId)]);
    const reply = await client.eval(batchLua, keys.length, ...keys, ...args);
    const next = (await client.hget(EPOCH_KEY, 'id'))!;
    expect(next).not.toBe(epochId);
    expect(batchAnswer(reply, 0)).toEqual({ reply: 0 });
    for (const index of [1, 2]) {
      const answer = batchAnswer(reply, index);
      expect('error' in answer && answer.error.message).toBe(`QUORUMLOCK_EPOCH ${next}`);
    }
    await trust(servers.clients);
  });
});
