/**
 * Extending on real masters (issue 10, defects 4 and 7): an extension counts only if its quorum
 * came before the previous deadline, and a lock is lost only when it can no longer be kept.
 * Members are paused (SIGSTOP), their links delayed (a TCP proxy), their keys deleted or
 * overwritten behind the lock's back.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { channels, driftMs, type Lock, LockExtendError, LockLostError, ManualClock, Redlock, systemClock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { eventually, fresh, sleep } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

/** The LockExtendError `promise` rejects with; fails the test if it resolves. */
async function extendError(promise: Promise<unknown>): Promise<LockExtendError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LockExtendError);
  return error as LockExtendError;
}

/** How many members hold `value` under `key` right now. */
async function holding(key: string, value: string): Promise<number> {
  return (await servers.valuesOf(key)).filter((held) => held === value).length;
}

describe('defect 4: an extension counts only if its quorum came before the previous deadline', () => {
  it("a quorum completed after the previous deadline loses the lock ('lapsed'), although the keys hold our value", async () => {
    // The members are real; the client's clock reading is manual (its timers stay real), so the
    // old deadline can be made to pass exactly inside the extend round, before its quorum.
    const manual = new ManualClock(1_000);
    const clock = { ...systemClock, now: () => manual.now(), epochMs: () => manual.epochMs() };
    const redlock = new Redlock(servers.clients, { nodeTimeout: 5_000, retryCount: 0, clock });
    const resource = fresh('lapsed');
    const lock = await redlock.acquire(resource, 10_000);
    const signal = lock.signal;
    const oldDeadline = 1_000 + 10_000 - driftMs(10_000, 0.01);
    for (const index of [0, 1, 2]) await servers.masters[index]!.pause();
    // A longer ttl: its own deadline lies well after the moment the quorum completes, so only
    // the "before the previous deadline" rule can refuse it.
    const pending = extendError(lock.extend(20_000));
    await Promise.all([3, 4].map((i) => servers.clients[i]!.ping())); // the two live members said 'locked'
    await sleep(50);
    manual.advance(10_000); // the old deadline passes: in the story, our keys expired meanwhile
    await servers.masters[0]!.resume(); // the third 'locked' completes the quorum, after the old deadline

    const error = await pending;
    expect(error.reason).toBe('lapsed');
    expect(error.lostBecause).toBe('lapsed');
    expect(error.votes.filter((vote) => vote.vote === 'locked')).toHaveLength(3);
    expect(error.message).toMatch(/lapsed: a quorum extended only after the previous validity had run out/);
    // The premise: the members really hold our value, with the new ttl.
    await servers.resumeAll();
    expect(await holding(resource, lock.value)).toBeGreaterThanOrEqual(3);
    // The lock is lost: the signal says why, and nothing can revive it.
    expect(manual.now()).toBeGreaterThan(oldDeadline);
    expect(lock.held).toBe(false);
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(LockLostError);
    expect((signal.reason as LockLostError).lostBecause).toBe('lapsed');
    expect((await extendError(lock.extend(10_000))).reason).toMatch(/lost|expired/);
    await lock.release();
  });

  it('another client held the lock in the gap, then our delayed acquire set our value again: the extension does not bridge the gap', async () => {
    // Client A reaches masters 0-2 over delayed links (a TCP proxy that delivers each chunk after
    // a latency, in order) and 3-4 directly; client B reaches all five directly.
    const proxies = await Promise.all([0, 1, 2].map((i) => TcpProxy.start(servers.masters[i]!)));
    const viaProxy = proxies.map((proxy) => new Redis({ host: '127.0.0.1', port: proxy.port }));
    const clientsA = [...viaProxy, servers.clients[3]!, servers.clients[4]!];
    try {
      await Promise.all(clientsA.map((c) => c.ping()));
      // A nodeTimeout almost as long as the ttl: a round started late in the validity may then
      // wait past the lock's deadline (the old code did).
      const ttl = 5_000;
      const a = new Redlock(clientsA, { nodeTimeout: 4_500, retryCount: 0 });
      const b = new Redlock(servers.connect(), { retryCount: 0 });
      const resource = fresh('gap');

      // A's acquire to master 0 is held for 6.5 s: A wins on 1-4 without it; it is still on its way.
      proxies[0]!.latencyMs = 6_500;
      // Nobody watches lock.signal yet (a plain extend() caller): no expiry timer marks the lock
      // lost at its deadline, so the extension's own decision is all that stands in the way.
      const lock = await a.acquire(resource, ttl);
      proxies[0]!.latencyMs = 0; // what follows on that link still queues behind the acquire
      // A extends late in its validity, as auto-extension does: 3 and 4 say 'locked' at once, the
      // extends to 1 and 2 are held 1.5 s, the one to 0 queues behind A's acquire.
      while (lock.remainingMs() > 1_000) await sleep(10);
      proxies[1]!.latencyMs = 1_500;
      proxies[2]!.latencyMs = 1_500;
      const extended = lock.extend(10_000).then(
        () => 'extended' as const,
        (error: unknown) => error,
      );
      await sleep(50);
      for (const proxy of proxies) proxy.latencyMs = 0; // replies come back at once

      // The gap: A's keys expire on 1 and 2 (master 0 never had one); B locks 0, 1 and 2, a
      // majority, then releases.
      await eventually(async () => expect((await servers.valuesOf(resource)).slice(0, 3)).toEqual([null, null, null]), 3_000);
      const other = await b.acquire(resource, 5_000);
      expect(other.votes.filter((vote) => vote.vote === 'locked')).toHaveLength(3);
      await other.release();

      // Then A's delayed acquire reaches master 0, finds the resource free and sets A's value
      // again, and A's extend right behind it finds that value: a third 'locked', from a member
      // that was B's in between. The old code counted it and extended the lock across B's tenure.
      await eventually(async () => expect((await servers.valuesOf(resource))[0]).toBe(lock.value), 4_000);
      const outcome = await extended;
      expect(outcome).toBeInstanceOf(LockExtendError);
      expect(lock.held).toBe(false);
      expect(lock.signal.aborted).toBe(true);
      expect(lock.signal.reason).toBeInstanceOf(LockLostError);
      await lock.release();
    } finally {
      for (const c of viaProxy) c.disconnect();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});

describe('defect 7: an extension that fails for lack of answers does not end the lock', () => {
  it('using(): 2 of 3 members stalled ~400 ms during an auto-extension; the work completes, the signal never aborts, later extensions succeed', async () => {
    const redlock = new Redlock(servers.clients.slice(0, 3));
    const resource = fresh('stall');
    const events: { extended: boolean; reason?: string }[] = [];
    const listener = (message: unknown) => {
      const event = message as { resources: string[]; extended: boolean; reason?: string };
      if (event.resources[0] === resource) events.push(event);
    };
    subscribe(channels.extend.name, listener);
    try {
      let abortedAt: number | undefined;
      const result = await redlock.using(resource, 3_000, async (signal, lock: Lock) => {
        signal.addEventListener('abort', () => (abortedAt = lock.remainingMs()), { once: true });
        // Stall two members just before the first extension is due (at 1 000 ms left).
        while (lock.remainingMs() > 1_150 && !signal.aborted) await sleep(10);
        for (const index of [1, 2]) await servers.masters[index]!.pause();
        await sleep(400);
        for (const index of [1, 2]) await servers.masters[index]!.resume();
        // Keep working through two more successful extensions.
        while (events.filter((event) => event.extended).length < 2 && !signal.aborted) await sleep(20);
        return signal.aborted ? 'aborted' : 'done';
      });
      expect(result).toBe('done');
      expect(abortedAt).toBeUndefined();
      // The stall did hit an extension: it failed for lack of answers, and a retry succeeded.
      expect(events[0]).toMatchObject({ extended: false, reason: 'unavailable' });
      expect(events.filter((event) => event.extended).length).toBeGreaterThanOrEqual(2);
      expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
    } finally {
      unsubscribe(channels.extend.name, listener);
    }
  });

  it("with a majority stalled for good, using() retries inside the validity, and the signal aborts only when it runs out ('expired')", async () => {
    const redlock = new Redlock(servers.clients.slice(0, 3), { nodeTimeout: 50 });
    const resource = fresh('majority-stalled');
    const failures: string[] = [];
    const listener = (message: unknown) => {
      const event = message as { resources: string[]; extended: boolean; reason?: string };
      if (event.resources[0] === resource && !event.extended) failures.push(event.reason ?? '');
    };
    subscribe(channels.extend.name, listener);
    try {
      let remainingAtAbort: number | undefined;
      const outcome = redlock.using(resource, 1_500, async (signal, lock) => {
        for (const index of [1, 2]) await servers.masters[index]!.pause();
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
        remainingAtAbort = lock.remainingMs();
        throw signal.reason;
      });
      const lost = (await outcome.catch((e: unknown) => e)) as LockLostError;
      expect(lost).toBeInstanceOf(LockLostError);
      // Not at the first failed round: at the deadline, after every try within it failed.
      expect(lost.reason).toBe('expired');
      expect(lost.lostBecause).toBe('expired');
      expect(remainingAtAbort).toBe(0);
      expect(failures.length).toBeGreaterThanOrEqual(2);
      expect(new Set(failures)).toEqual(new Set(['unavailable']));
    } finally {
      unsubscribe(channels.extend.name, listener);
    }
  });

  it('extend() that lacked answers leaves the lock held: the signal stays, and the next extend goes out and succeeds', async () => {
    const redlock = new Redlock(servers.clients.slice(0, 3), { nodeTimeout: 50 });
    const lock = await redlock.acquire(fresh('unavailable'), 10_000);
    const signal = lock.signal;
    for (const index of [1, 2]) await servers.masters[index]!.pause();
    const error = await extendError(lock.extend(10_000));
    expect(error.reason).toBe('unavailable');
    expect(error.message).toMatch(/the previous validity still applies/);
    expect(signal.aborted).toBe(false);
    expect(lock.held).toBe(true);
    for (const index of [1, 2]) await servers.masters[index]!.resume();
    await lock.extend(10_000);
    expect(signal.aborted).toBe(false);
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(2);
    await lock.release();
  });

  it('a failed extend with a shorter ttl shortens the validity: the members it reached now expire the keys sooner', async () => {
    const redlock = new Redlock(servers.clients.slice(0, 3), { nodeTimeout: 50 });
    const resource = fresh('shorter');
    const lock = await redlock.acquire(resource, 10_000);
    for (const index of [1, 2]) await servers.masters[index]!.pause();
    await extendError(lock.extend(1_000));
    expect(lock.remainingMs()).toBeLessThanOrEqual(1_000 - driftMs(1_000, 0.01));
    await servers.resumeAll();
    // What the old validity (~10 s) would have hidden: every member now expires the key within 1 s.
    const ttls = await Promise.all(servers.clients.slice(0, 3).map((c) => c.pttl(resource)));
    for (const pttl of ttls) expect(pttl).toBeLessThanOrEqual(1_000);
    await lock.release();
  });

  it("keys gone behind the lock's back: the reason says gone, not held by another owner", async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('gone');
    const outcome = redlock.using(resource, 600, async (signal) => {
      await Promise.all(servers.clients.map((c) => c.del(resource))); // evicted, expired, forgotten: gone
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      throw signal.reason;
    });
    const lost = (await outcome.catch((e: unknown) => e)) as LockLostError;
    expect(lost).toBeInstanceOf(LockLostError);
    expect(lost.reason).toBe('extension failed');
    expect(lost.lostBecause).toBe('gone');
    expect(lost.message).toMatch(/gone/);
    expect(lost.message).not.toMatch(/another owner/);
    const cause = lost.cause as LockExtendError;
    expect(cause.reason).toBe('lost');
    expect(cause.lostBecause).toBe('gone');
    expect(cause.votes.filter((vote) => vote.vote === 'absent').length).toBeGreaterThanOrEqual(3);
  });

  it('keys held by another value: the reason says another owner', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('taken');
    const lock = await redlock.acquire(resource, 10_000);
    await Promise.all(servers.clients.map((c) => c.set(resource, 'someone-else', 'PX', 10_000)));
    const error = await extendError(lock.extend(10_000));
    expect(error.reason).toBe('lost');
    expect(error.lostBecause).toBe('taken');
    expect(error.message).toMatch(/held by another owner/);
    expect((lock.signal.reason as LockLostError).lostBecause).toBe('taken');
    // Once lost, always lost, and the reason stays.
    const again = await extendError(lock.extend(10_000));
    expect(again).toMatchObject({ reason: 'lost', lostBecause: 'taken' });
    await lock.release();
  });
});
