/**
 * Semaphores on real masters: never more than `permits` guaranteed holdings at once, every permit
 * usable, holders() agreeing with what is held, bad input refused before any call, the wait budget
 * and the signal respected, and a lost permit aborting its signal.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, LockLostError, Redlock, SemaphoreUnavailableError, type Permit } from '../../src/index.js';
import { permitResource } from '../../src/store/keys.js';
import { permitViolations } from '../chaos/checker.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { fresh, sleep } from './util.js';

let servers: TestMasters;
const opened: Redlock[] = [];

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((redlock) => redlock.quit()));
});
afterAll(() => servers?.close());

/** A client with its own connections, as another process would have. */
function client(): Redlock {
  const redlock = new Redlock(servers.connect(), { retryDelay: 40, retryJitter: 20 });
  opened.push(redlock);
  return redlock;
}

interface Held {
  permit: number;
  start: number;
  end: number;
}

/** `clients` contenders, each with its own Redlock, acquire and release (half through using()) for `forMs`. */
async function hammer(name: string, permits: number, clients: number, forMs: number): Promise<Held[]> {
  const held: Held[] = [];
  const stopAt = performance.now() + forMs;
  const ttl = 2_000;
  await Promise.all(
    Array.from({ length: clients }, async (_, index) => {
      const pool = client().semaphore(name, { permits });
      for (let round = 0; performance.now() < stopAt; round++) {
        if ((index + round) % 2 === 0) {
          const permit = await pool.acquire(ttl, { waitTimeout: 20_000 });
          const start = performance.now();
          const validUntil = start + permit.remainingMs();
          await sleep(5 + Math.random() * 20);
          const end = Math.min(validUntil, performance.now());
          held.push({ permit: permit.permit, start, end });
          await permit.release();
        } else {
          await pool.using(
            ttl,
            async (signal, permit) => {
              const start = performance.now();
              await sleep(5 + Math.random() * 20);
              // Guaranteed up to now only if the permit still is: remainingMs() > 0 and no abort.
              if (!signal.aborted && permit.remainingMs() > 0) held.push({ permit: permit.permit, start, end: performance.now() });
            },
            { waitTimeout: 20_000 },
          );
        }
      }
    }),
  );
  return held;
}

describe('semaphore', () => {
  for (const permits of [2, 4]) {
    it(`never lets more than ${permits} of 12 contenders hold at once, and every permit is used`, async () => {
      const held = await hammer(fresh('pool'), permits, 12, 3_000);
      const { maxOverlap, violations } = permitViolations(held, permits);
      expect(violations).toEqual([]);
      expect(maxOverlap).toBeLessThanOrEqual(permits);
      // Every permit was won by someone, and each permit alone was a mutex.
      expect(new Set(held.map((holding) => holding.permit))).toEqual(new Set(Array.from({ length: permits }, (_, index) => index)));
      for (let permit = 0; permit < permits; permit++)
        expect(
          permitViolations(
            held.filter((h) => h.permit === permit),
            1,
          ).violations,
        ).toEqual([]);
      expect(held.length).toBeGreaterThan(permits * 4);
    }, 60_000);
  }

  it('holders() reports what a quorum holds, with the remaining time', async () => {
    const pool = client().semaphore(fresh('holders'), { permits: 4 });
    expect(await pool.holders()).toEqual([]);
    const permits = await Promise.all([pool.acquire(10_000), pool.acquire(10_000), pool.acquire(10_000)]);
    const indices = permits.map((permit) => permit.permit).sort();
    expect(new Set(indices).size).toBe(3);
    const holders = await pool.holders();
    expect(holders.map((holder) => holder.permit)).toEqual(indices);
    for (const holder of holders) {
      expect(holder.remainingMs).toBeGreaterThan(0);
      expect(holder.remainingMs).toBeLessThanOrEqual(10_000);
    }
    // Another client sees the same.
    expect((await client().semaphore(pool.name, { permits: 4 }).holders()).map((holder) => holder.permit)).toEqual(indices);
    await permits[0]!.release();
    expect((await pool.holders()).map((holder) => holder.permit)).toEqual(indices.filter((index) => index !== permits[0]!.permit));
    await Promise.all(permits.map((permit) => permit.release()));
    expect(await pool.holders()).toEqual([]);
  });

  it("holders() reads every member in one round on its ordered path: 'read' votes, and a silent majority rejects by the deadline", async () => {
    const redlock = client();
    const pool = redlock.semaphore(fresh('holders-round'), { permits: 2 });
    const votes: { operation: string; vote: string }[] = [];
    const onVote = (message: unknown) => votes.push(message as { operation: string; vote: string });
    subscribe('quorumlock:vote', onVote);
    try {
      expect(await pool.holders()).toEqual([]);
      expect(votes.filter((vote) => vote.operation === 'read').map((vote) => vote.vote)).toEqual(['done', 'done', 'done', 'done', 'done']);
      await Promise.all(servers.masters.slice(0, 3).map((master) => master.pause()));
      const started = performance.now();
      const error = await pool.holders().then(
        () => undefined,
        (rejected: unknown) => rejected,
      );
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(error).toBeInstanceOf(SemaphoreUnavailableError);
      const silent = (error as SemaphoreUnavailableError).readings.filter((reading) => reading.pttls === undefined);
      expect(silent.map((reading) => reading.error)).toEqual(Array(3).fill(`no answer within ${redlock.settings.nodeTimeout} ms`));
    } finally {
      unsubscribe('quorumlock:vote', onVote);
      await servers.resumeAll();
    }
  });

  it('refuses bad input with typed errors before any network call', async () => {
    // A Redlock whose members do not exist: any call to them would hang or fail differently.
    const redlock = client();
    const codeOf = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return [(error as { code?: string }).code, (error as { parameter?: string }).parameter];
      }
      return undefined;
    };
    expect(codeOf(() => redlock.semaphore('', { permits: 2 }))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'name']);
    expect(codeOf(() => redlock.semaphore(7 as unknown as string, { permits: 2 }))).toEqual(['QUORUMLOCK_ERR_INVALID_ARG_TYPE', 'name']);
    expect(codeOf(() => redlock.semaphore('a{b}', { permits: 2 }))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'name']);
    expect(codeOf(() => redlock.semaphore('x'.repeat(257), { permits: 2 }))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'name']);
    for (const permits of [0, -1, 1.5, 1025, Infinity])
      expect(codeOf(() => redlock.semaphore('s', { permits }))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'permits']);
    expect(codeOf(() => redlock.semaphore('s', { permits: '4' as unknown as number }))).toEqual(['QUORUMLOCK_ERR_INVALID_ARG_TYPE', 'permits']);
    expect(codeOf(() => redlock.semaphore('s', undefined as unknown as { permits: number }))).toEqual(['QUORUMLOCK_ERR_INVALID_ARG_TYPE', 'options']);
    expect(codeOf(() => redlock.semaphore('s', { permits: 2, limit: 2 } as unknown as { permits: number }))).toEqual([
      'QUORUMLOCK_ERR_UNKNOWN_OPTION',
      'limit',
    ]);
    const pool = redlock.semaphore('s', { permits: 2 });
    const rejection = async (promise: Promise<unknown>) => {
      const error = (await promise.catch((caught: unknown) => caught)) as { code?: string; parameter?: string };
      return [error.code, error.parameter];
    };
    expect(await rejection(pool.acquire(0))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'ttl']);
    expect(await rejection(pool.acquire(1_000, { waitTimeout: -1 }))).toEqual(['QUORUMLOCK_ERR_OUT_OF_RANGE', 'waitTimeout']);
    expect(await rejection(pool.acquire(1_000, { permits: 3 } as object))).toEqual(['QUORUMLOCK_ERR_UNKNOWN_OPTION', 'permits']);
    expect(await rejection(pool.using(1_000, 'work' as unknown as () => Promise<void>))).toEqual(['QUORUMLOCK_ERR_INVALID_ARG_TYPE', 'work']);
    expect(await rejection(pool.using(1_000, async () => {}, { reentrant: true } as object))).toEqual(['QUORUMLOCK_ERR_UNKNOWN_OPTION', 'reentrant']);
    // A shared permit would let any number hold it.
    expect(await rejection(pool.acquire(1_000, { shared: true } as object))).toEqual(['QUORUMLOCK_ERR_UNKNOWN_OPTION', 'shared']);
    // Nothing was written: no permit key exists on any master.
    for (const index of [0, 1]) expect(await servers.valuesOf(permitResource('s', index))).toEqual([null, null, null, null, null]);
  });

  it('gives up at waitTimeout when every permit is held, leaving nothing behind', async () => {
    const name = fresh('full');
    const holder = client().semaphore(name, { permits: 2 });
    const held = [await holder.acquire(20_000), await holder.acquire(20_000)];
    const waiter = client().semaphore(name, { permits: 2 });
    const began = performance.now();
    const error = await waiter.acquire(20_000, { waitTimeout: 600, retryCount: Infinity }).catch((caught: unknown) => caught);
    const elapsed = performance.now() - began;
    expect(error).toBeInstanceOf(LockAcquireError);
    expect((error as LockAcquireError).outcome).toBe('taken');
    expect((error as LockAcquireError).attempts.length).toBeGreaterThan(0);
    expect(elapsed).toBeGreaterThanOrEqual(550);
    expect(elapsed).toBeLessThan(5_000);
    // The holders' values are still the only ones stored (a member the acquire did not wait for
    // may not have its copy yet: null there is no leftover).
    for (const permit of held) {
      const stored = await servers.valuesOf(permitResource(name, permit.permit));
      expect(stored.every((value) => value === permit.value || value === null)).toBe(true);
      expect(stored.filter((value) => value === permit.value).length).toBeGreaterThanOrEqual(3);
    }
    await Promise.all(held.map((permit) => permit.release()));
  });

  it('with retryCount 0 on a full semaphore, rejects at once as taken, also after waiting acquires', async () => {
    const name = fresh('no-wait');
    const held = await client().semaphore(name, { permits: 1 }).acquire(20_000);
    const pool = client().semaphore(name, { permits: 1 });
    // One acquire that waited (the pool now skips most blind tries), then retryCount 0 ones.
    await expect(pool.acquire(20_000, { waitTimeout: 400 })).rejects.toBeInstanceOf(LockAcquireError);
    for (let i = 0; i < 4; i++) {
      const error = (await pool.acquire(20_000, { retryCount: 0 }).catch((caught: unknown) => caught)) as LockAcquireError;
      expect(error).toBeInstanceOf(LockAcquireError);
      expect(error.outcome).toBe('taken');
      expect(error.stoppedBecause).toBe('retries exhausted');
    }
    await held.release();
    const permit = await pool.acquire(20_000, { retryCount: 0 });
    expect(permit.permit).toBe(0);
    await permit.release();
  });

  it('stops waiting when the signal aborts, with its reason', async () => {
    const name = fresh('abort');
    const holder = client().semaphore(name, { permits: 1 });
    const held = await holder.acquire(20_000);
    const controller = new AbortController();
    const reason = new Error('shutting down');
    setTimeout(() => controller.abort(reason), 300);
    const began = performance.now();
    await expect(
      client().semaphore(name, { permits: 1 }).acquire(20_000, { waitTimeout: 30_000, retryCount: Infinity, signal: controller.signal }),
    ).rejects.toBe(reason);
    expect(performance.now() - began).toBeLessThan(5_000);
    const stored = await servers.valuesOf(permitResource(name, 0));
    expect(stored.every((value) => value === held.value || value === null)).toBe(true);
    expect(stored.filter((value) => value === held.value).length).toBeGreaterThanOrEqual(3);
    await held.release();
  });

  it('hands a released permit to a waiter, and a lost permit aborts its signal', async () => {
    const name = fresh('lost');
    const pool = client().semaphore(name, { permits: 1 });
    const first = await pool.acquire(20_000);
    const next = client().semaphore(name, { permits: 1 }).acquire(20_000, { waitTimeout: 10_000, retryCount: Infinity });
    await sleep(200);
    await first.release();
    const second: Permit = await next;
    expect(second.permit).toBe(0);
    // The permit's key vanishes on every member (flushed, say): the next extension finds it lost.
    await Promise.all(servers.clients.map((redis) => redis.del(permitResource(name, 0))));
    await expect(second.extend(20_000)).rejects.toMatchObject({ reason: 'lost' });
    expect(second.signal.aborted).toBe(true);
    expect(second.signal.reason).toBeInstanceOf(LockLostError);
  });

  it("using() aborts the work's signal when the permit is lost, and rejects with the LockLostError", async () => {
    const name = fresh('using-lost');
    const pool = client().semaphore(name, { permits: 3 });
    let seen: Permit | undefined;
    const run = pool.using(1_500, async (signal, permit) => {
      seen = permit;
      await Promise.all(servers.clients.map((redis) => redis.del(permitResource(name, permit.permit))));
      // The auto-extension at a third of the ttl finds the key gone.
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return 'done';
    });
    await expect(run).rejects.toBeInstanceOf(LockLostError);
    expect(seen?.released).toBe(true);
  });
});
