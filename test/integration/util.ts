/** Small helpers shared by the integration tests. */
import type Redis from 'ioredis';
import { expect } from 'vitest';
import { LockAcquireError, Redlock, type MemberClient } from '../../src/index.js';
import { describeVotes } from '../../src/quorum/votes.js';
import { presenceChannel, resourceKeys, waiterChannel } from '../../src/store/keys.js';

let counter = 0;
/** A resource name no other test uses, so tests never see each other's keys. */
export const fresh = (label: string): string => `${label}:${++counter}`;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * trustMembers() on Clusters: a read and a write per slot, 32,768 calls a cluster (1–2 s on an idle
 * machine). Three clusters trusted at once on two loaded cores once took more than the default
 * 10 s; none of these tests is about how long a trust takes (25 s: inside their 30 s timeouts).
 */
export const clusterTrust = { timeoutMs: 25_000 } as const;

/** The LockAcquireError `promise` rejects with; fails the test if it resolves or rejects otherwise. */
export async function errorOf(promise: Promise<unknown>): Promise<LockAcquireError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LockAcquireError);
  return error as LockAcquireError;
}

/** Retries `attempt` every 50 ms until it resolves; rethrows its last error after `timeoutMs`. */
export async function eventually<T>(attempt: () => Promise<T>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(50);
    }
  }
}

/**
 * Resolves `redlock` once every member has connected and read its server (its role is known). A
 * test whose one attempt (retryCount 0) must win waits for this first: a new connection on a busy
 * machine can take longer than the attempt's nodeTimeout.
 */
export async function connected(redlock: Redlock): Promise<Redlock> {
  await eventually(async () => expect(redlock.members.filter((member) => member.role === undefined)).toEqual([]), 10_000);
  return redlock;
}

/**
 * Takes and releases one lock of its own with `redlock`, tried until that works: afterwards it has
 * connected and read its members' epochs, so its next round is sent to every member at once. A new
 * Redlock's first calls (connect, INFO, epoch read, scripts) can outlast one attempt's 50 ms per
 * member on a busy machine, and a test about something else must not hinge on that.
 */
export async function warmedUp(redlock: Redlock): Promise<Redlock> {
  await eventually(async () => (await redlock.acquire(fresh('warm-up'), 10_000)).release(), 10_000);
  return redlock;
}

/** `resource`'s line of waiters and its handover requests, as the scripts name them (resourceKeys). */
export const lineOf = (resource: string): string => resourceKeys([resource])[1]!;
export const requestsOf = (resource: string): string => resourceKeys([resource])[4]!;

/** Per member (`clients`, one per member): how many wait in `resource`'s line. */
export const lineLengths = (clients: readonly Redis[], resource: string): Promise<number[]> => Promise.all(clients.map((c) => c.zcard(lineOf(resource))));

/** Calls of the scripts on one member, from Redis' own command statistics. */
export async function scriptCalls(member: Redis): Promise<number> {
  return callsOf(member, ['evalsha', 'eval']);
}

/** Calls of the commands `names` on `member` so far, summed (INFO commandstats). */
export async function callsOf(member: Redis, names: readonly string[]): Promise<number> {
  const info = await member.info('commandstats');
  let calls = 0;
  for (const match of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) if (names.includes(match[1]!)) calls += Number(match[2]);
  return calls;
}

/** Per member (`clients`): how many connections are subscribed to `waiterId`'s presence channel (PUBSUB NUMSUB). */
export const presentOn = (clients: readonly Redis[], waiterId: string): Promise<number[]> =>
  Promise.all(clients.map(async (c) => Number(((await c.pubsub('NUMSUB', presenceChannel(waiterId))) as (string | number)[])[1])));

/**
 * Resolves once every one of `clients` (one per member) has `value` at `key`. An acquire resolves
 * on the majority that said yes first; on the other members its SET may land later (a connection
 * still connecting, a busy machine: 100 ms and more under load). A waiter's attempt that reaches
 * such a member first finds the resource free there, so that member grants it (rolled back when
 * the attempt fails on the others) instead of putting the waiter in line: it joins that line only
 * with its next attempt, a retry delay later. A test that expects a waiter in line on every
 * member waits for this first; then every member refuses the waiter and lines it up.
 */
export function heldOnEvery(clients: readonly Redis[], key: string, value: string): Promise<void> {
  return eventually(async () => expect(await Promise.all(clients.map((c) => c.get(key)))).toEqual(clients.map(() => value)));
}

/**
 * Per member (`clients`, one per member), per place in `resource`'s line: whether a release there
 * would reach that waiter, its Redlock being subscribed to its wake-up channel there. A waiter
 * subscribes after its first refusal and waits for that at most nodeTimeout before its next
 * attempt takes its place in line; on a busy machine it can therefore be in line before it
 * listens, and a release then wakes nobody (it tries again once subscribed: quorum/wait.ts). A
 * test of being woken by a release waits until a majority would tell the waiter (hearsReleases):
 * all a wake needs.
 */
export async function listeningInLine(clients: readonly Redis[], resource: string): Promise<boolean[][]> {
  const line = lineOf(resource);
  return Promise.all(
    clients.map(async (c) => {
      const waiters = await c.zrange(line, '0', '-1');
      if (waiters.length === 0) return [];
      const counts = (await c.pubsub('NUMSUB', ...waiters.map(waiterChannel))) as (string | number)[];
      return waiters.map((_, index) => Number(counts[2 * index + 1]) > 0);
    }),
  );
}

/** Per member: whether a release there would reach the waiter at `place` (0-based) in line (listeningInLine). */
export async function hearsReleases(clients: readonly Redis[], resource: string, place = 0): Promise<boolean[]> {
  return (await listeningInLine(clients, resource)).map((places) => places[place] ?? false);
}

/** Whether `flags` (one per member) are true on a majority of the members. */
export const onMajority = (flags: readonly boolean[]): boolean => flags.filter(Boolean).length > flags.length / 2;

/**
 * Two members, quorum two, the first of them with a node that may evict (maxmemory-policy
 * allkeys-lru): the round must hear it, and cannot win without it. Its vote says why it does not count.
 */
export async function refusedAsEvicting(redlock: Redlock, resource: string): Promise<void> {
  const error = await errorOf(redlock.acquire(resource, 2_000));
  expect(error.attempts[0]!.votes[0]!, describeVotes(error.attempts[0]!.votes)).toMatchObject({
    vote: 'quarantined',
    notCounting: expect.stringMatching(/maxmemory-policy allkeys-lru/),
  });
}

/**
 * Three fenced acquires of `resource`, each by a Redlock `open` makes on new clients (other
 * processes, in effect) and has connected: the tokens rise from one to the next.
 */
export async function expectFencesRise(resource: string, open: () => Promise<Redlock>): Promise<void> {
  const tokens: number[] = [];
  for (let i = 0; i < 3; i++) {
    const redlock = await open();
    const lock = await redlock.acquire(resource, 2_000, { fencing: true });
    tokens.push(lock.fence!);
    await lock.release();
  }
  expect(tokens[0]).toBeGreaterThan(0);
  expect(tokens[1]).toBeGreaterThan(tokens[0]!);
  expect(tokens[2]).toBeGreaterThan(tokens[1]!);
}

/**
 * Eviction switched on at runtime on each of `admins` (allkeys-lru, maxmemory just above what it
 * uses), then filled until `resource`'s key is evicted (LRU is sampled: not necessarily the first to go).
 */
export async function evictUntilGone(admins: readonly Redis[], resource: string): Promise<void> {
  for (const admin of admins) {
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    await admin.config('SET', 'maxmemory', String(used + 400_000));
    for (let i = 0; (await admin.exists(resource)) === 1 && i < 500; i++)
      await admin.set(`filler:${resource}:${i}`, 'x'.repeat(50_000), 'EX', 3600).catch(() => undefined);
    expect(await admin.exists(resource)).toBe(0);
  }
}

/** Eviction off again on each of `admins`, and their data gone (the fillers). */
export async function stopEvicting(admins: readonly Redis[]): Promise<void> {
  for (const admin of admins) {
    await admin.config('SET', 'maxmemory', '0');
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.flushall();
  }
}

/**
 * Runs `run` while `node` may evict (allkeys-lru), then switches eviction off again and waits
 * until every member of `shared` (the file's clients, used by the tests after this one) counts
 * again. A member reads its servers' INFO at connect and every 10 s: one reading taken while the
 * node evicted kept a shared client from counting for up to 10 s, and a later test failed there
 * (under load, where the window is long enough to catch a reading).
 */
export async function whileEvicting(node: Redis, shared: readonly MemberClient[], run: () => Promise<void>): Promise<void> {
  await node.config('SET', 'maxmemory', '512mb');
  await node.config('SET', 'maxmemory-policy', 'allkeys-lru');
  try {
    await run();
  } finally {
    await node.config('SET', 'maxmemory', '0');
    await node.config('SET', 'maxmemory-policy', 'noeviction');
    // A Cluster member's reading asks every master and ends with the slowest: one begun before the
    // switch may still be on its way. A second for it to land, then every shared client read and counting.
    await sleep(1_000);
    const watching = new Redlock(shared);
    try {
      await eventually(
        async () => expect(watching.members.map((member) => [member.role !== undefined, member.notCounting])).toEqual(shared.map(() => [true, undefined])),
        15_000,
      );
    } finally {
      await watching.quit();
    }
  }
}
