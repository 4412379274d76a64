/**
 * A lock's life on real masters: auto-extension under using(), the lost-lock signal, and release
 * at scope exit.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, LockLostError, Redlock } from '../../src/index.js';
import { systemClock } from '../../src/clock/index.js';
import { contextOf } from '../../src/redlock.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { fresh, sleep } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(() => servers.resumeAll());
afterAll(() => servers?.close());

/** How many members hold `value` under `key` with a positive PTTL right now. */
async function holders(key: string, value: string): Promise<number> {
  const replies = await Promise.all(servers.clients.map((c) => c.multi().get(key).pttl(key).exec()));
  return replies.filter((reply) => reply?.[0]?.[1] === value && Number(reply?.[1]?.[1]) > 0).length;
}

describe('using()', () => {
  it('keeps the lock held on a quorum throughout work that runs 5× the ttl, then releases', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('long-work');
    const ttl = 400;
    const samples: number[] = [];
    let lockValue = '';
    const result = await redlock.using(resource, ttl, async (signal, lock) => {
      lockValue = lock.value;
      for (let elapsed = 0; elapsed < 5 * ttl; elapsed += 40) {
        expect(signal.aborted).toBe(false);
        samples.push(await holders(resource, lock.value));
        await sleep(40);
      }
      return 'done';
    });
    expect(result).toBe('done');
    expect(samples.length).toBeGreaterThanOrEqual(40);
    // Every sample, across many extensions: held on a quorum (in practice on all five).
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(3);
    expect(await holders(resource, lockValue)).toBe(0);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it("aborts the signal at the first extension after a majority lost the keys, and the work's rejection propagates", async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('deleted');
    const ttl = 600;
    let reason: unknown;
    const outcome = redlock.using(resource, ttl, async (signal) => {
      await Promise.all(servers.clients.slice(0, 3).map((c) => c.del(resource)));
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      reason = signal.reason;
      throw new Error('work stopped: ' + (signal.reason as Error).message);
    });
    await expect(outcome).rejects.toThrow(/^work stopped: lost the lock on deleted:\d+: an extension failed/);
    expect(reason).toBeInstanceOf(LockLostError);
    // Lost at the extension (before the validity would have run out), not at expiry.
    expect((reason as LockLostError).reason).toBe('extension failed');
    expect(((reason as LockLostError).cause as { reason: string }).reason).toBe('lost');
  });

  it('aborts with LockLostError at the deadline when a majority stays paused (failed extensions are retried inside the validity)', async () => {
    const redlock = new Redlock(servers.clients, { nodeTimeout: 50 });
    const resource = fresh('paused-majority');
    const outcome = redlock.using(resource, 500, async (signal) => {
      for (const index of [0, 2, 4]) await servers.masters[index]!.pause();
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      // Too few answers is not a loss: the lock is guaranteed until its validity runs out.
      const lost = signal.reason as LockLostError;
      expect(lost.reason).toBe('expired');
      throw lost;
    });
    await expect(outcome).rejects.toBeInstanceOf(LockLostError);
    await servers.resumeAll();
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('rejects with the LockLostError when the work ignores the signal and finishes after the loss', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('ignored');
    const outcome = redlock.using(resource, 300, async () => {
      await Promise.all(servers.clients.map((c) => c.del(resource)));
      await sleep(400); // past the first extension, which fails
      return 'finished unprotected';
    });
    await expect(outcome).rejects.toBeInstanceOf(LockLostError);
  });

  it('releases when the work throws, and stops extending', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('throws');
    await expect(
      redlock.using(resource, 300, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
    await sleep(350); // a watchdog still running would have tried (and failed) to extend by now
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('stops extending after maxExtensions: the lock then runs out and the signal says so', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('bounded');
    let extended = 0;
    const outcome = redlock.using(
      resource,
      300,
      async (signal, lock) => {
        let deadline = lock.remainingMs();
        while (!signal.aborted) {
          await sleep(20);
          if (lock.remainingMs() > deadline + 20) extended++; // the deadline moved: an extension
          deadline = lock.remainingMs();
        }
        throw signal.reason;
      },
      { maxExtensions: 2 },
    );
    await expect(outcome).rejects.toMatchObject({ name: 'LockLostError', reason: 'expired' });
    expect(extended).toBe(2);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('checks its arguments before locking', async () => {
    const redlock = new Redlock(servers.clients, { nodeTimeout: 50 });
    await expect(redlock.using('r', 120, async () => 1)).rejects.toMatchObject({ name: 'RangeError', parameter: 'ttl' });
    await expect(redlock.using('r', 1_000, async () => 1, { extendThreshold: 10 })).rejects.toMatchObject({ name: 'RangeError', parameter: 'extendThreshold' });
    await expect(redlock.using('r', 1_000, 'not a function' as never)).rejects.toMatchObject({ name: 'TypeError', parameter: 'work' });
    await expect(redlock.using('r', 1_000, async () => 1, { maxExtensions: -1 })).rejects.toMatchObject({ name: 'RangeError', parameter: 'maxExtensions' });
    expect(await servers.valuesOf('r')).toEqual(Array(5).fill(null));
  });
});

describe('lock.signal', () => {
  it('aborts with LockLostError("expired") exactly when the validity runs out, not before', async () => {
    const redlock = new Redlock(servers.clients);
    const lock = await redlock.acquire(fresh('expiry'), 200);
    const remainingAtAbort = await new Promise<number>((resolve) => lock.signal.addEventListener('abort', () => resolve(lock.remainingMs()), { once: true }));
    expect(remainingAtAbort).toBe(0);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as LockLostError).reason).toBe('expired');
  });

  it('follows extensions, is not aborted by release, and a lock lost before anyone looked reports it', async () => {
    const redlock = new Redlock(servers.clients);
    const lock = await redlock.acquire(fresh('follows'), 200);
    const signal = lock.signal;
    await sleep(100);
    await lock.extend(400);
    await sleep(200); // past the first deadline
    expect(signal.aborted).toBe(false);
    await lock.release();
    await sleep(250); // past the extended deadline
    expect(signal.aborted).toBe(false);

    const resource = fresh('lost-unwatched');
    const unwatched = await redlock.acquire(resource, 5_000);
    await Promise.all(servers.clients.map((c) => c.del(resource)));
    await expect(unwatched.extend(5_000)).rejects.toMatchObject({ reason: 'lost' });
    expect(unwatched.signal.aborted).toBe(true);
    expect((unwatched.signal.reason as LockLostError).reason).toBe('extension failed');
    await expect(unwatched.extend(5_000)).rejects.toMatchObject({ reason: 'lost' }); // once lost, always lost
  });
});

describe('a Redlock made per job or request, on long-lived clients', () => {
  it('is collected once it is no longer used, with its members and a clock of its own: the clients and what they share keep none of them (about 5 KB each, before)', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const clients = servers.connect();
    try {
      const made = 200;
      let collected = 0;
      const registry = new FinalizationRegistry(() => collected++);
      // A resource held throughout (from after the first job): some jobs wait for it in line
      // (subscribed), give up, and quit.
      const heldResource = fresh('per-job-held');
      let waited = 0;
      // Each made, and some used (a lock taken and released, or a wait in line), in a call of its
      // own: nothing of this test's frame refers to any of them after.
      const job = async (i: number) => {
        // Every other one on a clock of its own (options.clock), which its members keep: the
        // clients must keep neither. The first is one of them, and the first Redlock on these
        // clients (whose epoch books read through the members).
        const clock = i % 2 === 0 ? { ...systemClock } : undefined;
        const redlock = new Redlock(clients, { clock });
        registry.register(redlock, undefined);
        registry.register(contextOf(redlock).members, undefined); // what its locks vote with
        if (clock) registry.register(clock, undefined);
        if (i % 25 === 0) await (await redlock.acquire(fresh('per-job'), 1_000)).release();
        if (i % 25 === 1) {
          const error: unknown = await redlock.acquire(heldResource, 1_000, { retryCount: 2, retryDelay: 20 }).catch((e: unknown) => e);
          if (error instanceof LockAcquireError && error.outcome === 'taken') waited++;
          await redlock.quit();
        }
      };
      await job(0);
      const holder = new Redlock(clients);
      const held = await holder.acquire(heldResource, 30_000);
      const endListeners = () => clients.map((client) => client.listenerCount('end'));
      const before = endListeners();
      for (let i = 1; i < made; i++) await job(i);
      expect(waited).toBe(made / 25);
      await held.release();
      await holder.quit();
      // The Redlocks that waited listened for the end of each client, and stopped at quit() (no
      // more listeners than before them; fewer where a connecting client's own were still there).
      expect(endListeners().map((count, index) => count <= before[index]!)).toEqual(clients.map(() => true));
      const expected = 2 * made + made / 2; // the Redlocks, their members and their own clocks
      for (let turn = 0; turn < 50 && collected < expected; turn++) {
        await sleep(20); // out of the job that made them (a WeakRef keeps its target until then)
        gc();
      }
      expect(collected).toBe(expected);
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});

describe('clients the user quit', () => {
  it("stop an acquire (and a semaphore's) after its first attempt once too many are quit for any retry to win: 'clients closed', nothing left behind", async () => {
    const clients = servers.connect();
    try {
      await Promise.all(clients.map((c) => c.ping()));
      const redlock = new Redlock(clients);
      await (await redlock.acquire(fresh('quit-before'), 1_000)).release();
      // A minority quit: the acquire still wins.
      await Promise.all(clients.slice(0, 2).map((c) => c.quit()));
      await (await redlock.acquire(fresh('quit-minority'), 1_000)).release();
      // A majority quit: the attempt fails, and the default ten retries (with their delays) are not run.
      await clients[2]!.quit();
      const resource = fresh('quit-majority');
      const error = await redlock.acquire(resource, 10_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquireError);
      expect(error).toMatchObject({ stoppedBecause: 'clients closed', outcome: 'unavailable' });
      expect((error as LockAcquireError).attempts).toHaveLength(1);
      expect((error as LockAcquireError).message).toContain('(clients closed)');
      // The members still reachable keep nothing of it.
      expect(await servers.valuesOf(resource)).toEqual([null, null, null, null, null]);
      const pool = redlock.semaphore(fresh('quit-pool'), { permits: 3 });
      await expect(pool.acquire(10_000)).rejects.toMatchObject({ stoppedBecause: 'clients closed' });
    } finally {
      for (const client of clients) client.disconnect();
    }
  });
});
