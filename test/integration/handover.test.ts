/**
 * The lock handed over inside the release (docs/handover.md, src/quorum/handover.ts), on real
 * masters: the waiter wins without an acquire round of its own; only members that would have
 * counted its own acquire hand over; a hand-over the waiter did not count is taken back, whether
 * it goes on waiting or gives up; a ttl longer than the waiter's place in line is handed over
 * too, for the whole ttl; a waiter whose place lapsed is not handed anything.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EPOCH_KEY, presenceChannel } from '../../src/store/keys.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { contextOf } from '../../src/redlock.js';
import { callsOf, eventually, fresh, hearsReleases, presentOn, sleep, heldOnEvery, lineLengths, lineOf, onMajority, requestsOf, scriptCalls } from './util.js';

let servers: TestMasters;
const { client, quitAll } = redlocksOn(() => servers);
const named: Redis[] = [];

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await quitAll();
  for (const connection of named.splice(0)) connection.disconnect();
  await servers.heal();
});
afterAll(() => servers?.close());

/** Clients named `name` (their subscriber duplicates carry the name), slow to reconnect: 400 ms. */
function clientsNamed(name: string): Redis[] {
  const clients = servers.masters.map((master) => {
    const redis = new Redis({ host: master.host, port: master.port, connectionName: name, retryStrategy: () => 400 });
    redis.on('error', () => {});
    return redis;
  });
  named.push(...clients);
  return clients;
}

/** Drops the subscriber connections named `name` on every member: what is published until they are back is lost. */
async function killSubscribers(name: string): Promise<void> {
  await Promise.all(
    servers.clients.map(async (member) => {
      const list = (await member.client('LIST')) as string;
      for (const line of list.split('\n')) {
        if (!line.includes(` name=${name} `) || / sub=0 /.test(line)) continue;
        const id = /^id=(\d+)/.exec(line)?.[1];
        if (id) await member.client('KILL', 'ID', id);
      }
    }),
  );
}

/**
 * A connection per member subscribed to the channel of `resource`'s first waiter: what a release
 * finds when the waiter's own subscriber drops right after it looked (the release hands over to a
 * listener that is there, and the message is lost). With killSubscribers: a hand-over nobody counts.
 */
async function standIns(resource: string): Promise<void> {
  const [head] = await servers.clients[0]!.zrange(lineOf(resource), '0', '0');
  await Promise.all(
    servers.masters.map(async (master) => {
      const standIn = new Redis({ host: master.host, port: master.port });
      standIn.on('error', () => {});
      named.push(standIn);
      await standIn.subscribe(presenceChannel(head!));
    }),
  );
}

const inLine = (resource: string) => lineLengths(servers.clients, resource);
/** Per member: whether a release there reaches the waiter at `place` in line (util.ts, hearsReleases). */
const hears = (resource: string, place = 0) => hearsReleases(servers.clients, resource, place);

/**
 * The holder's lock, held on every member: an acquire resolves on the majority that answered
 * first, and where its key has not landed yet a waiter's attempt would be granted (and rolled
 * back) instead of lined up (util.ts, heldOnEvery).
 */
async function heldEverywhere<Held extends { value: string }>(holder: Held, resource: string): Promise<Held> {
  await heldOnEvery(servers.clients, resource, holder.value);
  return holder;
}

describe('a release hands the lock to the waiter first in line', () => {
  it('which wins with no acquire round of its own, its keys set for its ttl', async () => {
    const resource = fresh('handed');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    // A 5 s retry delay: only the release can give it the lock within its 3 s budget; its lease
    // (3 × 5 s) outlasts its ttl, so the keys are set for the whole ttl.
    const waiting = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 8_000, { waitTimeout: 3_000 });
    // In line everywhere, and listening on a majority: what hears the hand-over.
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect(onMajority(await hears(resource))).toBe(true);
    });
    const before = await Promise.all(servers.clients.map(scriptCalls));
    await holder.release();
    const lock = await waiting;
    // The release resolves on a majority's answers: the last member's may still be on its way.
    await eventually(async () => {
      const after = await Promise.all(servers.clients.map(scriptCalls));
      expect(after.map((calls, index) => calls - before[index]!)).toEqual([1, 1, 1, 1, 1]); // the release alone
      expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));
    });
    const pttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    for (const pttl of pttls) expect(pttl).toBeGreaterThan(7_000);
    // Its validity runs from its last attempt's start, before the release: never more than the ttl.
    expect(lock.remainingMs()).toBeGreaterThan(0);
    expect(lock.remainingMs()).toBeLessThanOrEqual(8_000);
    await lock.release();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
    expect(await Promise.all(servers.clients.map((c) => c.exists(requestsOf(resource))))).toEqual([0, 0, 0, 0, 0]);
  });

  it('also for a ttl longer than its place in line: the key is set for the whole ttl', async () => {
    const resource = fresh('long-ttl');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    // A lease of 3 × (3000 + 50) = 9150 ms on its place, shorter than its 20 s ttl. (With the
    // default retry delay, 200 ± 100 ms, a timed retry could land between the count below and the
    // release, one more script call per member.)
    const waiting = client({ retryDelay: 3_000, retryJitter: 0 }).acquire(resource, 20_000, { waitTimeout: 5_000 });
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect(onMajority(await hears(resource))).toBe(true);
    });
    expect(await Promise.all(servers.clients.map((c) => c.exists(requestsOf(resource))))).toEqual([1, 1, 1, 1, 1]); // it asked
    const before = await Promise.all(servers.clients.map(scriptCalls));
    await holder.release();
    const lock = await waiting;
    expect(lock.remainingMs()).toBeGreaterThan(17_000);
    // The release alone, on each member (the last answers may still be on their way).
    await eventually(async () => {
      const after = await Promise.all(servers.clients.map(scriptCalls));
      expect(after.map((calls, index) => calls - before[index]!)).toEqual([1, 1, 1, 1, 1]);
    });
    // Set for the ttl, past the place in line (9150 ms), on every member.
    for (const pttl of await Promise.all(servers.clients.map((c) => c.pttl(resource)))) expect(pttl).toBeGreaterThan(17_000);
    await lock.release();
  });

  /**
   * Serving every ttl, and a waiter that crashed in line (docs/handover.md, "A waiter that dies in
   * line"): a release hands the lock only to a waiter whose listener still has a connection on the
   * member (PUBSUB NUMSUB), so a crashed one is handed nothing, its place lapses with its lease and
   * the next in line gets the lock, as before hand-overs. The crashed waiter's calls are made as
   * its own attempt's run makes them, through the member (contextOf); it never listens.
   */
  it('a waiter with no connection listening (crashed) is handed nothing; the next in line gets the lock', async () => {
    const redlock = client();
    const resource = fresh('crashed-waiter');
    const holder = await heldEverywhere(await redlock.acquire(resource, 10_000), resource);
    const request = {
      value: 'attempt-of-the-crashed',
      ttlMs: 20_000,
      waiter: { id: 'crashed.listener.1', ticket: Date.now(), leaseMs: 1_000 },
      quarantineMs: 0,
      fencing: false,
      handover: { value: 'never-handed', stamp: '1', abandoned: '' },
    };
    const votes = await Promise.all(contextOf(redlock).members.map((member) => member.acquire([resource], request)));
    expect(votes.map((vote) => vote.vote)).toEqual(Array(5).fill('taken'));
    expect(await Promise.all(servers.clients.map((c) => c.exists(requestsOf(resource))))).toEqual([1, 1, 1, 1, 1]); // it asked
    // Second in line, retrying every 300 ms: once the crashed one's place lapses (1 s), its next
    // attempt wins. Handed to the crashed one instead, the lock would be held for 20 s.
    const next = client({ retryDelay: 300, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 5_000 });
    await eventually(async () => expect(await inLine(resource)).toEqual([2, 2, 2, 2, 2]));
    await holder.release();
    const lock = await next;
    // Won at a quorum: the other members' answers may still be on their way (under load they
    // were, once), so the lock is looked for on every member until it lands there.
    await eventually(async () => expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value)));
    await lock.release();
  });

  it('only where its own acquire would count: a member in its restart quarantine does not hand over', async () => {
    const resource = fresh('handed-quarantine');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    const waiting = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 3_000 });
    // In line everywhere, and listening on the three members that will hand over.
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect((await hears(resource)).slice(2)).toEqual([true, true, true]);
    });
    // Members 0 and 1 forget their epoch, as after a restart without persistence: a new epoch
    // begins at their next call, quarantined for maxLockTtl.
    await Promise.all([servers.clients[0]!.del(EPOCH_KEY), servers.clients[1]!.del(EPOCH_KEY)]);
    await holder.release();
    const lock = await waiting; // handed over by the other three, a majority
    // The holder's release resolved on a majority; on members 0 and 1 it may land later (a call
    // refused in a new epoch is sent once more, bound to it). There it frees the key and hands
    // nothing over: each of them goes from the holder's value to empty, never to the waiter's.
    await eventually(async () => expect(await servers.valuesOf(resource)).toEqual([null, null, lock.value, lock.value, lock.value]));
    await lock.release();
  });
});

/** Per member: SUBSCRIBE and UNSUBSCRIBE calls so far (INFO commandstats). */
const subscriptionCalls = (member: Redis) => callsOf(member, ['subscribe', 'unsubscribe']);

describe('presence, from the first refusal on', () => {
  it('a Redlock that waited before: an acquire never refused subscribes to nothing; a refused one is present and handed the lock', async () => {
    const redlock = client({ retryDelay: 5_000, retryJitter: 0 });
    // One wait first: the Redlock listens from then on, so later acquires watch from their start.
    const first = fresh('presence-first');
    const holder = await heldEverywhere(await client().acquire(first, 10_000), first);
    const waited = redlock.acquire(first, 8_000, { waitTimeout: 3_000 });
    await eventually(async () => expect(onMajority(await hears(first))).toBe(true));
    await holder.release();
    await (await waited).release();

    // Uncontended now: no SUBSCRIBE or UNSUBSCRIBE of a presence channel, on any member.
    const before = await Promise.all(servers.clients.map(subscriptionCalls));
    const uncontended = await redlock.acquire(fresh('presence-free'), 8_000);
    await uncontended.release();
    // What it would have sent goes out on its subscriber connections within a turn or two of the
    // event loop; 200 ms is far more than they take to arrive (the old code's did).
    await sleep(200);
    expect(await Promise.all(servers.clients.map(subscriptionCalls))).toEqual(before);

    // Refused: its first attempt stands in line (the Redlock listens), it subscribes its presence
    // after the refusal, and the release hands it the lock (the release is the only script run).
    const contended = fresh('presence-refused');
    const other = await heldEverywhere(await client().acquire(contended, 10_000), contended);
    const waiting = redlock.acquire(contended, 8_000, { waitTimeout: 3_000 });
    await eventually(async () => {
      expect(await inLine(contended)).toEqual([1, 1, 1, 1, 1]);
      expect(onMajority(await hears(contended))).toBe(true);
    });
    // Present after its refusal: subscribed on every member before the release.
    const [waiterId] = await servers.clients[0]!.zrange(lineOf(contended), '0', '0');
    await eventually(async () => expect(await presentOn(servers.clients, waiterId!)).toEqual([1, 1, 1, 1, 1]));
    const scripts = await Promise.all(servers.clients.map(scriptCalls));
    await other.release();
    const lock = await waiting;
    await eventually(async () => {
      const after = await Promise.all(servers.clients.map(scriptCalls));
      expect(after.map((calls, index) => calls - scripts[index]!)).toEqual([1, 1, 1, 1, 1]);
    });
    // Won: its presence ends (the UNSUBSCRIBEs go out after the acquire resolved), on every member.
    expect(waiterId).toBe(lock.id);
    await eventually(async () => expect(await presentOn(servers.clients, waiterId!)).toEqual([0, 0, 0, 0, 0]));
    await lock.release();
  });
});

describe('a hand-over the waiter did not count', () => {
  it('with a member down and another one stray: the waiter tries again within a grace, takes its value back and wins', async () => {
    const resource = fresh('grace');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    const waiting = client({ retryDelay: 3_000, retryJitter: 0 }).acquire(resource, 8_000, { waitTimeout: 9_000 });
    // In line everywhere, and listening on the four members that stay up.
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect((await hears(resource)).slice(0, 4)).toEqual([true, true, true, true]);
    });
    // A late copy of an earlier attempt rewrote members 2 and 3's requests: their hand-overs name
    // another stamp (stray). Member 4 is down. Members 0 and 1 hand over by the right one: 2 of 5.
    for (const member of [2, 3]) {
      const [[waiter, request]] = Object.entries(await servers.clients[member]!.hgetall(requestsOf(resource))) as [[string, string]];
      const parts = request.split(' ');
      parts[3] = '0.0';
      await servers.clients[member]!.hset(requestsOf(resource), waiter, parts.join(' '));
    }
    await servers.masters[4]!.pause();
    const releasedAt = performance.now();
    void holder.release().catch(() => undefined);
    const lock = await waiting;
    // Not its 3 s retry delay: a grace (nodeTimeout) for the rest of the hand-overs, then an
    // attempt that takes the uncounted ones back and wins on the four members up.
    expect(performance.now() - releasedAt).toBeLessThan(1_500);
    const values = (await Promise.all(servers.clients.slice(0, 4).map((c) => c.get(resource)))) as (string | null)[];
    expect(values.filter((value) => value === lock.value).length).toBeGreaterThanOrEqual(3);
    await servers.masters[4]!.resume();
    await lock.release();
  });

  it('is taken back by its next attempt, which wins with a value of its own', async () => {
    const resource = fresh('unheard');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    // It asks for hand-overs, and retries every 300 ms.
    const waiting = client({ retryDelay: 300, retryJitter: 0 }, clientsNamed('unheard')).acquire(resource, 1_000, { waitTimeout: 5_000 });
    // In line and listening everywhere, so that the kill below leaves it deaf on every member (a
    // subscriber still connecting would subscribe after it, and hear the hand-over).
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect(await hears(resource)).toEqual([true, true, true, true, true]);
    });
    await killSubscribers('unheard');
    await standIns(resource);
    await holder.release(); // handed over on every member, heard by nobody
    const handed = await servers.valuesOf(resource);
    expect(new Set(handed).size).toBe(1);
    expect(handed[0]).not.toBeNull();
    const lock = await waiting;
    expect(lock.value).not.toBe(handed[0]);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));
    await lock.release();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('is taken back when the waiter gives up, and the next in line is not held up', async () => {
    const resource = fresh('gave-up');
    const holder = await heldEverywhere(await client().acquire(resource, 10_000), resource);
    const controller = new AbortController();
    const first = client({ retryDelay: 3_000, retryJitter: 0 }, clientsNamed('gives-up'))
      .acquire(resource, 8_000, { waitTimeout: 8_000, signal: controller.signal })
      .catch((error: unknown) => error);
    // In line and listening everywhere, so that the kill below leaves it deaf on every member.
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1, 1, 1]);
      expect(await hears(resource)).toEqual([true, true, true, true, true]);
    });
    // Second in line, with a 5 s retry delay: only a wake-up or a hand-over brings it the lock soon.
    const second = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 4_000 });
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([2, 2, 2, 2, 2]);
      expect(onMajority(await hears(resource, 1))).toBe(true);
    });
    await killSubscribers('gives-up');
    await standIns(resource);
    await holder.release(); // handed to the first on every member, unheard
    expect((await servers.valuesOf(resource)).every((value) => value !== null)).toBe(true);
    const gaveUpAt = performance.now();
    controller.abort();
    const lock = await second;
    // Its leave took the unheard hand-over back and handed the lock on (not after the first one's ttl).
    expect(performance.now() - gaveUpAt).toBeLessThan(2_000);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));
    expect((await first) as Error).toMatchObject({ name: 'AbortError' });
    await lock.release();
  });
});
