/**
 * Waiting at its edges, on real masters (issue 10, defects 8 and 9, and the subscriber):
 * - a key without a TTL (a user's key of the same name) must not make a waiter spin, and
 *   quorumlock's own key names are refused as resources before anything is sent;
 * - a waiter for several resources must not keep a free one from everyone while it waits out a
 *   long holder of another, and must still get its resources while others keep taking them;
 * - the waiters' subscriber connection copies the user's client options: with
 *   enableOfflineQueue: false and maxRetriesPerRequest: 0 it must still subscribe, come back
 *   after its member restarts (also while a re-subscription is on the wire), and never leave an
 *   unhandled rejection behind.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redlock, type Lock } from '../../src/index.js';
import { contextOf } from '../../src/redlock.js';
import { resourceKeys } from '../../src/store/keys.js';
import { TcpProxy } from '../chaos/proxy.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, hearsReleases, lineLengths, onMajority, sleep, scriptCalls } from './util.js';

let servers: TestMasters;
const { client, quitAll } = redlocksOn(() => servers);

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await quitAll();
  await servers.heal();
});
afterAll(() => servers?.close());

describe('a resource that never expires (defect 8)', () => {
  it("a key of the user's own of another type (a hash) is held by another owner: tryAcquire resolves null, not an outage", async () => {
    const resource = fresh('users-hash');
    await Promise.all(servers.clients.map((c) => c.hset(resource, 'field', '1')));
    // A first call on new connections: on a busy machine it can take longer than the default
    // nodeTimeout (50 ms) on every member, which reads as an outage. The answer is what is tested.
    expect(await client({ retryCount: 0, nodeTimeout: 1_000 }).tryAcquire(resource, 10_000)).toBeNull();
    expect(await Promise.all(servers.clients.map((c) => c.hget(resource, 'field')))).toEqual(Array(5).fill('1'));
    await Promise.all(servers.clients.map((c) => c.del(resource)));
  });

  it("refuses quorumlock's own key names as resources, before anything is sent", async () => {
    // lazyConnect clients to the real masters: any call at all would connect them.
    const lazy = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, lazyConnect: true }));
    try {
      const redlock = new Redlock(lazy, { retryDelay: 50 });
      const cases: [string | string[], string][] = [
        ['quorumlock:epoch', 'resources[0]'], // the member's epoch hash: it has no TTL
        [['jobs', 'quorumlock:epoch'], 'resources[1]'],
        [`{${fresh('tagged')}}:quorumlock:line`, 'resources[0]'], // another resource's line of waiters
        [`{${fresh('tagged')}}:quorumlock:readers`, 'resources[0]'], // another resource's shared holders
      ];
      for (const [resources, parameter] of cases) {
        for (const call of [
          () => redlock.acquire(resources, 1_000, { waitTimeout: 1_000 }),
          () => redlock.tryAcquire(resources, 1_000),
          () => redlock.using(resources, 1_000, async () => 'ran'),
        ]) {
          const error = (await call().catch((e: unknown) => e)) as RangeError & { parameter?: string };
          expect(error).toBeInstanceOf(RangeError);
          expect(error.parameter).toBe(parameter);
          expect(error.message).toMatch(
            /not starting with "quorumlock:", not ending in ":quorumlock:line", ":quorumlock:leases", ":quorumlock:readers" or ":quorumlock:handover"/,
          );
        }
      }
      expect(lazy.map((c) => c.status)).toEqual(Array(5).fill('wait'));
      expect(await servers.clients[0]!.type('quorumlock:epoch')).toBe('hash'); // untouched
    } finally {
      for (const c of lazy) c.disconnect();
    }
  });

  it('a waiter first in line behind a key without a TTL retries at its retry delay, not every millisecond, and gets the lock once the key goes', async () => {
    const resource = fresh('user-key');
    // A key of the application's own, of the same name, without an expiry.
    await Promise.all(servers.clients.map((c) => c.set(resource, 'not a lock')));
    const member = servers.clients[2]!;
    const before = await scriptCalls(member);
    const retryDelay = 100;
    const waitTimeout = 1_500;
    // Every member answers within nodeTimeout, also on a busy machine (50 ms is not enough there):
    // the last attempt's votes are read below. Attempts start while at least that much of the
    // budget is left, for 1 s, spin or not.
    const nodeTimeout = 500;
    const error = await errorOf(client({ retryDelay, retryJitter: 0, retryCount: Infinity, nodeTimeout }).acquire(resource, 1_000, { waitTimeout }));
    const calls = (await scriptCalls(member)) - before;
    expect(error.outcome).toBe('taken');
    // First in line on every member that answered (the round settles on a quorum), and told
    // heldForMs 0 (PTTL -1, older scripts) or none at all.
    const answered = error.attempts.at(-1)!.votes.filter((vote) => vote.vote !== 'pending');
    expect(answered.length).toBeGreaterThanOrEqual(3);
    for (const vote of answered) expect(vote).toMatchObject({ vote: 'taken', place: 0 });
    for (const vote of answered) expect(vote.heldForMs ?? 0).toBe(0);
    // One attempt per retry delay at most (plus the first two, which come at once). Before the
    // fix: one every ~1 ms, hundreds in this budget.
    const most = Math.ceil(waitTimeout / retryDelay) + 2;
    expect(error.attempts.length).toBeLessThanOrEqual(most);
    // On a member: each attempt's acquire and its rollback, the line leave.
    expect(calls).toBeLessThanOrEqual(2 * most + 1);

    // The timed retry is what notices the key is gone (deleting a user key announces nothing).
    const waiting = client({ retryDelay, retryJitter: 0, retryCount: Infinity }).acquire(resource, 1_000, { waitTimeout: 5_000 });
    await sleep(300);
    await Promise.all(servers.clients.map((c) => c.del(resource)));
    const lock = await waiting;
    expect(lock.remainingMs()).toBeGreaterThan(0);
    await lock.release();
  });
});

describe('a waiter for several resources (defect 9)', () => {
  it('does not keep a free resource from everyone while it waits out a long holder of another', async () => {
    const [r1, r2] = [fresh('free-r1'), fresh('held-r2')];
    const holder = await client().acquire(r2, 20_000); // held for the whole test
    await eventually(async () => expect(await servers.valuesOf(r2)).toEqual(Array(5).fill(holder.value)));
    let waiterDone = false;
    const both = client({ retryDelay: 100, retryJitter: 0, retryCount: Infinity })
      .acquire([r1, r2], 10_000, { waitTimeout: 10_000 })
      .finally(() => (waiterDone = true));
    // First in r1's line and in r2's, on a majority.
    await eventually(async () => {
      for (const resource of [r1, r2])
        expect(onMajority(await Promise.all(servers.clients.map(async (c) => (await c.zcard(resourceKeys([resource])[1]!)) > 0)))).toBe(true);
    });
    // Before: r1 was kept for the waiter until its budget ran out (10 s), so this acquire, with a
    // 3 s budget, failed as "kept for an earlier waiter" although nobody held r1.
    const single = await client({ retryDelay: 100, retryJitter: 0, retryCount: Infinity }).acquire(r1, 10_000, { waitTimeout: 3_000 });
    expect(waiterDone).toBe(false); // r1 came free while the waiter still waited, not after it gave up
    await single.release();
    await holder.release();
    // And the waiter still gets both.
    const lock = await both;
    expect(lock.resources).toEqual([r1, r2]);
    await lock.release();
  });

  it('still gets its resources while others keep taking them one at a time (its turns in line grow)', async () => {
    const [r1, r2] = [fresh('busy-r1'), fresh('busy-r2')];
    let stop = false;
    // Each resource is held ~1.2 s at a time, again and again, the two out of step: one of them
    // is nearly always held. Longer than the waiter's first turn in line (~1 s).
    const cycle = async (resource: string, startAfterMs: number) => {
      const redlock = client({ retryDelay: 100, retryJitter: 20 });
      await sleep(startAfterMs);
      while (!stop) {
        const lock = await redlock.acquire(resource, 5_000, { waitTimeout: 20_000 }).catch(() => undefined);
        if (!lock) continue;
        await sleep(1_200);
        await lock.release();
      }
    };
    const workers = [cycle(r1, 0), cycle(r2, 600)];
    await sleep(800);
    const lock = await client({ retryDelay: 300, retryJitter: 0, retryCount: Infinity })
      .acquire([r1, r2], 5_000, { waitTimeout: 15_000 })
      .finally(() => (stop = true));
    expect(lock.remainingMs()).toBeGreaterThan(0);
    await lock.release();
    await Promise.all(workers);
  });
});

describe("the waiters' subscriber, on a user client with enableOfflineQueue: false and maxRetriesPerRequest: 0", () => {
  it('subscribes, comes back after its member restarts (twice, once with the re-subscription on the wire), wakes the waiter, and leaves no unhandled rejection', async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => rejections.push(reason);
    process.on('unhandledRejection', onRejection);
    // Member 0 behind a proxy that can slow its link, so a restart can land while our SUBSCRIBE
    // is still on its way.
    const proxy = await TcpProxy.start(servers.masters[0]!);
    const addresses = servers.masters.map((master, index) => ({ host: master.host, port: index === 0 ? proxy.port : master.port }));
    const users = addresses.map(({ host, port }) => {
      const redis = new Redis({ host, port, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      redis.on('error', () => {});
      return redis;
    });
    // The subscriber the Redlock duplicates from member 0's client, to see when it is ready: the
    // duplicate that subscribes. (The Redlock also duplicates the client to load its bound scripts,
    // binding.ts, and on a busy machine that one can come first.)
    let subscriber: Redis | undefined;
    const duplicate = users[0]!.duplicate.bind(users[0]!);
    users[0]!.duplicate = ((...args: Parameters<Redis['duplicate']>) => {
      const made = duplicate(...args);
      const subscribe = made.subscribe.bind(made);
      made.subscribe = ((...channels: Parameters<Redis['subscribe']>) => {
        subscriber = made;
        return subscribe(...channels);
      }) as Redis['subscribe'];
      return made;
    }) as Redis['duplicate'];
    // The Redlock's channel and the waiter's presence channel (it asks to be handed the lock).
    const subscribedOn = (index: number) => servers.clients[index]!.pubsub('CHANNELS', 'quorumlock:waiter:*') as Promise<string[]>;
    try {
      await Promise.all(users.map((c) => new Promise((resolve) => c.once('ready', resolve))));
      const resource = fresh('subscriber');
      const holder = await client().acquire(resource, 30_000);
      // Held on all five (not only the quorum that answered first): after member 0 restarts
      // empty, the release must still reach a majority of the waiter's places in line.
      await eventually(async () => expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(holder.value)));
      // Only a release can wake this waiter within its budget: its timed retry is 20 s away.
      const waiting = client({ retryDelay: 20_000, retryJitter: 0 }, users).acquire(resource, 10_000, { waitTimeout: 15_000 });
      // Subscribed on every member, including the first time (the subscriber was still
      // connecting, and the user's client options refuse to queue). Before: never, on any.
      await eventually(async () => {
        for (let index = 0; index < 5; index++) expect(await subscribedOn(index)).toHaveLength(2);
      }, 3_000);
      const connection = subscriber;
      if (connection === undefined) throw new Error('no subscriber connection was made from member 0');

      proxy.latencyMs = 300;
      // Listening before the restart: the subscriber may be ready again before restart() returns.
      const readyAgain = new Promise((resolve) => connection.once('ready', resolve));
      await servers.masters[0]!.restart();
      await readyAgain;
      // The subscription after the reconnect is now crossing the slow link: restart again.
      await servers.masters[0]!.restart();
      proxy.latencyMs = 0;
      // Subscribed again on member 0, and in line and listening on a majority: the release wakes it.
      await eventually(async () => {
        expect(await subscribedOn(0)).toHaveLength(2);
        expect(onMajority(await hearsReleases(servers.clients, resource))).toBe(true);
      }, 10_000);

      await holder.release();
      const lock: Lock = await waiting;
      expect(lock.remainingMs()).toBeGreaterThan(0);
      await lock.release();
      await sleep(50); // a rejection would surface within a few ticks
      expect(rejections.map(String)).toEqual([]);
    } finally {
      process.off('unhandledRejection', onRejection);
      await quitAll();
      for (const c of users) c.disconnect();
      await proxy.close();
    }
  });
});

describe('a waiter in line before its subscriptions are in place', () => {
  it('tries again once they are: a release that fell in between, and woke nobody, is not missed (its timed retry is far off)', async () => {
    // The waiter's clients reach the members through proxies that hold what new connections
    // send: its subscriber, opened at its first refusal, cannot subscribe until they let go, as
    // on a busy machine or a slow link where a SUBSCRIBE outlasts nodeTimeout.
    const proxies = await Promise.all(servers.masters.map((master) => TcpProxy.start(master)));
    const users = proxies.map((proxy) => new Redis({ host: '127.0.0.1', port: proxy.port }));
    try {
      await Promise.all(users.map((c) => c.ping()));
      const resource = fresh('unheard');
      const holder = await client().acquire(resource, 30_000);
      await eventually(async () => expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(holder.value)));
      for (const proxy of proxies) proxy.holdNewConnections('toServer');
      // Only a release can wake it within its budget: its timed retry is 20 s away.
      const waiting = client({ retryDelay: 20_000, retryJitter: 0 }, users).acquire(resource, 10_000, { waitTimeout: 8_000 });
      // Its second attempt took its place in line (after nodeTimeout, not subscribed), deaf.
      await eventually(async () => expect(await lineLengths(servers.clients, resource)).toEqual(Array(5).fill(1)));
      expect(await hearsReleases(servers.clients, resource)).toEqual(Array(5).fill(false));
      // The release announces the waiter first in line, to nobody.
      expect((await holder.release()).freed).toBe(true);
      for (const proxy of proxies) proxy.releaseNewConnections('toServer');
      // Before: the waiter slept on to its timed retry, past its budget (LockAcquireError).
      const lock: Lock = await waiting;
      expect(lock.remainingMs()).toBeGreaterThan(0);
      await lock.release();
    } finally {
      await quitAll();
      for (const c of users) c.disconnect();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});

describe('a rolling upgrade from quorumlock 0.1.0', () => {
  it("a release wakes a 0.1.0 waiter (id <process>.<n>) on that waiter's own channel, with the lock key, as 0.1.0 did", async () => {
    const resource = fresh('old-waiter');
    const redlock = client();
    const lock = await redlock.acquire(resource, 10_000);
    // A 0.1.0 waiter: in line on every member (refused, with a lease), listening on its own channel.
    const oldId = 'oldprocess.7';
    const heard: string[] = [];
    const subscribers = servers.connect();
    await Promise.all(
      subscribers.map(async (subscriber) => {
        subscriber.on('message', (channel: string, message: string) => heard.push(`${channel} ${message}`));
        await subscriber.subscribe(`quorumlock:waiter:${oldId}`);
      }),
    );
    const request = { value: 'old-attempt', ttlMs: 10_000, waiter: { id: oldId, ticket: Date.now(), leaseMs: 10_000 }, quarantineMs: 0, fencing: false };
    const refusals = await Promise.all(contextOf(redlock).members.map((member) => member.acquire([resource], request)));
    expect(refusals.every((refusal) => refusal.vote === 'taken')).toBe(true);
    await lock.release();
    await eventually(async () => expect(heard).toEqual(Array(5).fill(`quorumlock:waiter:${oldId} ${resource}`)));
    for (const subscriber of subscribers) subscriber.disconnect();
  });
});
