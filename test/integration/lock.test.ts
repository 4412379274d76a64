/**
 * Acquire, extend and release against five real masters, with members paused (SIGSTOP),
 * killed and restarted.
 */
import Redis from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { driftMs, ManualClock, LockExtendError, Redlock, systemClock } from '../../src/index.js';
import { Lock } from '../../src/lock/lock.js';
import { contextOf } from '../../src/redlock.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { errorOf, fresh } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

describe('acquire', () => {
  it('locks on every member, returns a lock whose validity never exceeds ttl - drift, and releases everywhere', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('basic');
    const ttl = 10_000;
    const lock = await redlock.acquire([resource], ttl);
    expect(lock.resources).toEqual([resource]);
    expect(lock.value).toMatch(/^[A-Za-z0-9_-]{22}$/); // 128 bits, base64url
    expect(lock.remainingMs()).toBeGreaterThan(0);
    expect(lock.remainingMs()).toBeLessThanOrEqual(ttl - driftMs(ttl, 0.01));
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(3);

    // Stragglers are not waited for, but they do get the key: all five hold it.
    await Promise.all(servers.clients.map((c) => c.ping()));
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));
    const ttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    for (const pttl of ttls) expect(pttl).toBeGreaterThan(ttl - 1_000);

    const released = await lock.release();
    expect(released.freed).toBe(true);
    // Settled on the quorum: the first three confirmed; the rest were sent it too.
    expect(released.votes.filter((vote) => vote.vote === 'released').length).toBeGreaterThanOrEqual(3);
    expect(released.votes.every((vote) => vote.vote === 'released' || vote.vote === 'pending')).toBe(true);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
    expect(lock.remainingMs()).toBe(0);
    expect(lock.held).toBe(false);
  });

  it('validity stays within ttl - drift over many acquisitions, whatever the round took', async () => {
    const redlock = new Redlock(servers.clients, { driftFactor: 0.05 });
    const ttl = 2_000;
    for (let i = 0; i < 50; i++) {
      const before = systemClock.now();
      const lock = await redlock.acquire(fresh('validity'), ttl);
      const remaining = lock.remainingMs();
      const after = systemClock.now();
      // The deadline is counted from the round's start, which lies between `before` and now.
      expect(remaining).toBeLessThanOrEqual(ttl - driftMs(ttl, 0.05));
      expect(remaining).toBeGreaterThanOrEqual(ttl - driftMs(ttl, 0.05) - (after - before));
      await lock.release();
    }
  });

  it('a second owner is refused while the first holds the lock, with a message that says why', async () => {
    const first = new Redlock(servers.clients);
    const second = new Redlock(servers.connect(), { retryCount: 2, retryDelay: 20, retryJitter: 5 });
    const resource = fresh('orders');
    const lock = await first.acquire(resource, 10_000);

    const error = await errorOf(second.acquire(resource, 10_000));
    expect(error.outcome).toBe('taken');
    expect(error.attempts).toHaveLength(3);
    expect(error.attempts[0]!.votes.some((vote) => vote.vote === 'taken')).toBe(true);
    expect(error.message).toMatch(new RegExp(`^could not lock ${resource}: 0/5 locked, \\d held by another owner.*after 3 attempts in \\d+ ms`));
    expect(await second.tryAcquire(resource, 10_000)).toBeNull();
    // The refused attempts rolled back their own keys, and never touched the owner's.
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));

    await lock.release();
    const next = await second.acquire(resource, 10_000);
    expect(next.remainingMs()).toBeGreaterThan(0);
    await next.release();
  });

  it('locks several resources all-or-nothing, and rolls back every key of a failed attempt', async () => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const [a, b, c] = [fresh('multi-a'), fresh('multi-b'), fresh('multi-c')];
    const holder = await redlock.acquire([b], 10_000);

    const error = await errorOf(redlock.acquire([a, b, c], 10_000));
    expect(error.outcome).toBe('taken');
    expect(await servers.valuesOf(a)).toEqual(Array(5).fill(null));
    expect(await servers.valuesOf(c)).toEqual(Array(5).fill(null));

    await holder.release();
    const lock = await redlock.acquire([a, b, c], 10_000);
    await Promise.all(servers.clients.map((client) => client.ping()));
    for (const key of [a, b, c]) expect(await servers.valuesOf(key)).toEqual(Array(5).fill(lock.value));
    await lock.release();
    for (const key of [a, b, c]) expect(await servers.valuesOf(key)).toEqual(Array(5).fill(null));
  });

  it('with 2 of 5 paused, succeeds on the quorum without waiting for the paused members', async () => {
    // A long nodeTimeout: had acquire waited for the paused members, they would read 'timeout'.
    const redlock = new Redlock(servers.clients, { nodeTimeout: 2_000 });
    await servers.masters[0]!.pause();
    await servers.masters[3]!.pause();
    const resource = fresh('minority');
    const lock = await redlock.acquire(resource, 10_000);
    expect(lock.votes[0]!.vote).toBe('pending');
    expect(lock.votes[3]!.vote).toBe('pending');
    expect(lock.votes.filter((vote) => vote.vote === 'locked')).toHaveLength(3);
    // Release while they are still paused: it settles on the quorum, reports them, and does not throw.
    const released = await lock.release();
    expect(released.freed).toBe(true);
    expect(released.votes.map((vote) => vote.vote)).toEqual(['pending', 'released', 'released', 'pending', 'released']);
    // Once resumed, the paused members run the queued SET and then the queued release.
    await servers.resumeAll();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('with 3 of 5 paused, every attempt ends at nodeTimeout and nothing is left once they resume', async () => {
    const nodeTimeout = 60;
    const redlock = new Redlock(servers.clients, { nodeTimeout, retryCount: 3, retryDelay: 30, retryJitter: 10 });
    for (const index of [1, 2, 4]) await servers.masters[index]!.pause();
    const resource = fresh('majority');
    const started = systemClock.now();
    const error = await errorOf(redlock.acquire(resource, 10_000));
    const elapsed = systemClock.now() - started;

    expect(error.outcome).toBe('unavailable');
    expect(error.attempts).toHaveLength(4);
    for (const attempt of error.attempts) {
      expect(attempt.votes.map((vote) => vote.vote)).toEqual(['locked', 'timeout', 'timeout', 'locked', 'timeout']);
      expect(attempt.elapsedMs).toBeGreaterThanOrEqual(nodeTimeout - 1);
    }
    expect(error.message).toMatch(/2\/5 locked, 3 timed out, after 4 attempts/);
    // Not a speed check (noisy machines): it only proves the acquire ended instead of hanging.
    expect(elapsed).toBeLessThan(10_000);
    // The unpaused members were rolled back at once...
    expect(await Promise.all([0, 3].map((i) => servers.clients[i]!.get(resource)))).toEqual([null, null]);
    // ...and the paused ones run SET then DEL for each attempt when they resume.
    await servers.resumeAll();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('fails fast when members are down (killed); once they restart empty they sit out a quarantine, then count again', async () => {
    // Long enough to outlast a reconnect: the epoch begins when the first client of ours is ready
    // again (it reads the epoch then: src/members/epochs.ts), which on the container backend can
    // be a second or more before the acquire below.
    const maxLockTtl = 4_000;
    const resource = fresh('killed');
    // The acquires sent to the dead members wait in their clients' offline queue, and ioredis
    // sends them to the restarted processes (docs/internals.md#re-send-after-reconnect): the first of them to run would start
    // a member's new epoch, so its quarantine, whenever the reconnect backoff lets it, perhaps
    // more than maxLockTtl before the check below. So the dead members are asked through clients
    // of their own, closed (their queues with them) before the restart, and the quarantine starts
    // with this test's first acquire after it, on every member alike.
    const downClients = servers.connect();
    await Promise.all(downClients.map((c) => c.ping()));
    for (const index of [0, 1, 2]) await servers.masters[index]!.kill();
    try {
      const error = await errorOf(new Redlock(downClients, { retryCount: 1, retryDelay: 50, maxLockTtl }).acquire(resource, 1_000));
      expect(error.outcome).toBe('unavailable');
      for (const vote of error.attempts[0]!.votes.slice(0, 3)) expect(['timeout', 'error']).toContain(vote.vote);
    } finally {
      for (const c of downClients) c.disconnect();
      for (const index of [0, 1, 2]) await servers.masters[index]!.restart();
    }
    const redlock = new Redlock(servers.clients, { retryCount: 1, retryDelay: 50, maxLockTtl });
    await Promise.all(servers.clients.map((c) => c.ping())); // ioredis reconnects on its own
    // They forgot every lock they held: for maxLockTtl their yes does not count.
    const quarantined = await errorOf(redlock.acquire(resource, 1_000, { retryCount: 0 }));
    expect(quarantined.outcome).toBe('quarantined');
    const votes = quarantined.attempts[0]!.votes;
    for (const vote of votes.slice(0, 3)) {
      expect(vote.vote).toBe('quarantined');
      expect(vote.quarantinedForMs).toBeGreaterThan(0);
      expect(vote.quarantinedForMs).toBeLessThanOrEqual(maxLockTtl);
    }
    expect(quarantined.message).toMatch(/3 quarantined.*redlock\.trustMembers\(\)/);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null)); // rolled back everywhere
    await new Promise((resolve) => setTimeout(resolve, Math.max(...votes.slice(0, 3).map((vote) => vote.quarantinedForMs!)) + 50));
    const lock = await redlock.acquire(resource, 1_000);
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(3);
    await lock.release();
    await trust(servers.clients); // leave them trusted for the next tests
  });

  it('never returns a lock whose validity ran out: a quorum that comes too late fails as "expired" and is rolled back', async () => {
    // The members are real; the client's clock reading is manual (its timers stay real), so a
    // jump of a whole ttl can be put exactly inside the round, before the quorum completes.
    const manual = new ManualClock(1_000);
    const clock = { ...systemClock, now: () => manual.now(), epochMs: () => manual.epochMs() };
    const redlock = new Redlock(servers.clients, { nodeTimeout: 1_500, retryCount: 0, clock });
    for (const index of [0, 1, 2]) await servers.masters[index]!.pause();
    const resource = fresh('late');
    const pending = redlock.acquire(resource, 10_000);
    await Promise.all([3, 4].map((i) => servers.connect()[i]!.ping())); // the two live members have had time to answer
    manual.advance(10_000); // the whole ttl passes before the quorum is complete
    await servers.masters[0]!.resume();
    const error = await errorOf(pending);
    expect(error.outcome).toBe('expired');
    expect(error.attempts[0]!.validityMs).toBeLessThanOrEqual(0);
    expect(error.message).toMatch(/3\/5 locked, 2 not waited for, but validity was used up/);
    await servers.resumeAll();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('honours waitTimeout as the whole budget, and an AbortSignal at any point, rolling back', async () => {
    const owner = new Redlock(servers.clients);
    const waiter = new Redlock(servers.connect(), { retryCount: Infinity, retryDelay: 20, retryJitter: 0 });
    const resource = fresh('budget');
    const lock = await owner.acquire(resource, 10_000);

    const timedOut = await errorOf(waiter.acquire(resource, 10_000, { waitTimeout: 300 }));
    expect(timedOut.stoppedBecause).toBe('wait budget exhausted');
    expect(timedOut.attempts.length).toBeGreaterThan(2);
    // Every attempt started inside the budget (each round is cut at what is left of it).
    for (const attempt of timedOut.attempts) expect(attempt.startedMs).toBeLessThan(300);
    expect(timedOut.elapsedMs).toBeLessThan(10_000); // ended rather than hung

    const controller = new AbortController();
    const aborted = waiter.acquire(resource, 10_000, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    await expect(aborted).rejects.toThrow('shutting down');
    await expect(waiter.acquire(resource, 10_000, { signal: AbortSignal.abort('gone') })).rejects.toBe('gone');
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));
    await lock.release();
  });
});

describe('extend and release', () => {
  it('a confirmed release logs no warning with a logger at info (pino in production): only an unconfirmed one warns', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { level: number; msg: string }) });
    const redlock = new Redlock(servers.clients, { logger, retryCount: 0 });
    const lock = await redlock.acquire(fresh('quiet-release'), 10_000);
    expect((await lock.release()).freed).toBe(true);
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);

    // Three of five paused: the release cannot be confirmed, and that one does warn.
    const other = await redlock.acquire(fresh('loud-release'), 10_000);
    for (const index of [0, 1, 2]) await servers.masters[index]!.pause();
    expect((await other.release()).freed).toBe(false);
    expect(lines.filter((line) => line.level === 40).map((line) => line.msg)).toEqual(['lock release not confirmed by a quorum; the keys expire by their TTL']);
  });

  it('only the owner can extend or release', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('owner');
    const lock = await redlock.acquire(resource, 10_000);
    const impostor = new Lock(contextOf(redlock), {
      id: 'impostor',
      resources: [resource],
      value: 'not-the-value',
      deadline: systemClock.now() + 10_000,
      votes: [],
      fence: undefined,
    });

    const extendError = await impostor.extend(10_000).catch((e: unknown) => e);
    expect(extendError).toBeInstanceOf(LockExtendError);
    expect(extendError).toMatchObject({ reason: 'lost' });
    const released = await impostor.release();
    expect(released.votes.filter((vote) => vote.vote === 'absent').length).toBeGreaterThanOrEqual(3);
    expect(released.votes.some((vote) => vote.vote === 'released')).toBe(false);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(lock.value));

    await lock.release();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('extend renews the same handle with validity counted from the extend round', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('extend');
    const lock = await redlock.acquire(resource, 1_000);
    const extended = await lock.extend(20_000);
    expect(extended).toBe(lock);
    expect(lock.remainingMs()).toBeGreaterThan(1_000);
    expect(lock.remainingMs()).toBeLessThanOrEqual(20_000 - driftMs(20_000, 0.01));
    const ttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    for (const pttl of ttls) expect(pttl).toBeGreaterThan(15_000);
    // Concurrent extends run one after another and all succeed.
    await Promise.all([lock.extend(5_000), lock.extend(6_000), lock.extend(7_000)]);
    expect(lock.remainingMs()).toBeLessThanOrEqual(7_000);
    await lock.release();
    await expect(lock.extend(5_000)).rejects.toMatchObject({ reason: 'released' });
    // Release is idempotent.
    const again = await lock.release();
    expect(again.freed).toBe(true);
    expect(again.votes.some((vote) => vote.vote === 'released')).toBe(false);
  });

  it('extend fails with "lost" when a majority no longer holds the value, and "expired" once validity is gone', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('lost');
    const lock = await redlock.acquire(resource, 10_000);
    await Promise.all(servers.clients.slice(0, 3).map((c) => c.del(resource)));
    await expect(lock.extend(10_000)).rejects.toMatchObject({ name: 'LockExtendError', reason: 'lost' });
    // A quorum no longer holds our value: another client may lock now, so nothing is guaranteed.
    expect(lock.remainingMs()).toBe(0);
    expect(lock.signal.aborted).toBe(true);
    await lock.release();

    const short = await redlock.acquire(fresh('expired'), 100);
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(short.remainingMs()).toBe(0);
    await expect(short.extend(1_000)).rejects.toMatchObject({ reason: 'expired' });
  });

  it('extend with a majority paused fails as "unavailable" within nodeTimeout', async () => {
    const redlock = new Redlock(servers.clients, { nodeTimeout: 50 });
    const lock = await redlock.acquire(fresh('extend-paused'), 10_000);
    for (const index of [0, 1, 2]) await servers.masters[index]!.pause();
    const error = (await lock.extend(10_000).catch((e: unknown) => e)) as LockExtendError;
    expect(error).toBeInstanceOf(LockExtendError);
    expect(error.reason).toBe('unavailable');
    expect(error.votes.filter((vote) => vote.vote === 'timeout')).toHaveLength(3);
    await servers.resumeAll();
    await lock.release();
  });

  it('await using releases at block exit, also when the block throws', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('using');
    {
      await using lock = await redlock.acquire(resource, 10_000);
      expect(await servers.valuesOf(resource)).toContain(lock.value);
    }
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
    await expect(
      (async () => {
        await using lock = await redlock.acquire(resource, 10_000);
        expect(lock.held).toBe(true);
        throw new Error('work failed');
      })(),
    ).rejects.toThrow('work failed');
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('works with clients that use a keyPrefix: keys land under the prefix', async () => {
    const prefixed = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, keyPrefix: 'app:' }));
    try {
      const redlock = new Redlock(prefixed);
      await trust(prefixed); // the prefix is a namespace of its own, with its own epoch marker
      const resource = fresh('prefixed');
      const lock = await redlock.acquire(resource, 10_000);
      await Promise.all(prefixed.map((c) => c.ping()));
      expect(await servers.valuesOf(`app:${resource}`)).toEqual(Array(5).fill(lock.value));
      await lock.release();
      expect(await servers.valuesOf(`app:${resource}`)).toEqual(Array(5).fill(null));
    } finally {
      for (const c of prefixed) c.disconnect();
    }
  });
});

describe('the lock value stays secret', () => {
  it('is absent from JSON (what pino logs) and from util.inspect', async () => {
    const { inspect } = await import('node:util');
    const redlock = new Redlock(servers.clients);
    const lock = await redlock.acquire(fresh('secret'), 10_000);
    const json = JSON.stringify({ lock });
    expect(json).not.toContain(lock.value);
    expect(JSON.parse(json).lock.resources).toEqual(lock.resources);
    expect(inspect(lock)).not.toContain(lock.value);
    await lock.release();
  });

  it('is never passed to the logger (a real pino logger)', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(line) });
    const redlock = new Redlock(servers.clients, { logger, retryCount: 1, retryDelay: 10 });
    const resource = fresh('logged');
    const lock = await redlock.acquire(resource, 10_000);
    await redlock.acquire(resource, 10_000).catch(() => undefined);
    await Promise.all(servers.clients.slice(0, 3).map((c) => c.del(resource)));
    await lock.extend(10_000).catch(() => undefined);
    await lock.release();
    expect(lines.length).toBeGreaterThan(3);
    const messages = lines.map((line) => JSON.parse(line).msg);
    expect(messages).toEqual(expect.arrayContaining(['lock acquired', 'lock attempt failed', 'lock not acquired', 'lock extension failed', 'lock lost']));
    // The extension found it lost: that was its end, and the release after it logs none.
    expect(messages).not.toContain('lock released');
    for (const line of lines) expect(line).not.toContain(lock.value);
  });
});

describe('many Redlocks over the same clients', () => {
  it('share one role watch per client: no listener piles up', async () => {
    const before = servers.clients.map((c) => c.listenerCount('ready'));
    for (let i = 0; i < 50; i++) new Redlock(servers.clients);
    expect(servers.clients.map((c) => c.listenerCount('ready'))).toEqual(before);
  });
});
