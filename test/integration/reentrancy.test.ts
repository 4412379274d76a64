/**
 * Reentrancy (`{ reentrant: true }`, a Redlock with maxReentrancy > 0) on three real masters: a
 * nested acquire inside a using() of the same resources returns at once with no command sent, shares
 * the outer lock, cannot release or outlive it, and nests only so deep.
 */
import type Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, LockLostError, Redlock, errorCodes, type Lock } from '../../src/index.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, fresh, scriptCalls } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

/** Script calls on all members (INFO commandstats): every acquire, extend or release is one per member. */
const scriptsRun = async (clients: Redis[]) => (await Promise.all(clients.map(scriptCalls))).reduce((sum, calls) => sum + calls, 0);

/** Whatever `promise` rejects with (undefined if it resolves). */
const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error as Error & Record<string, unknown>,
  );

describe('reentrant acquire inside using()', () => {
  it('returns a nested handle at once, with no command to any member, sharing the outer lock', async () => {
    const redlock = new Redlock(servers.clients, { maxReentrancy: 4 });
    const resource = fresh('reenter');
    await redlock.using(
      resource,
      5_000,
      async (signal, outer) => {
        const before = await scriptsRun(servers.clients);
        const nested = await redlock.acquire(resource, 5_000, { reentrant: true });
        const inner = await redlock.using(
          resource,
          5_000,
          async (innerSignal, innerLock) => {
            expect(innerSignal).toBe(signal);
            expect(innerLock.fence).toBe(outer.fence);
            return innerLock.remainingMs();
          },
          { reentrant: true },
        );
        // The INFO calls themselves are the only commands: 3 before, 3 now.
        expect(await scriptsRun(servers.clients)).toBe(before);
        expect(inner).toBeGreaterThan(0);
        expect(nested.signal).toBe(signal);
        const outerLeft = outer.remainingMs();
        expect(nested.remainingMs()).toBeLessThanOrEqual(outerLeft);
        expect(nested.value).toBe(outer.value);

        // Its release ends the nested handle only: the outer lock stays held on the members.
        const released = await nested.release();
        expect(released.freed).toBe(false);
        expect(nested.held).toBe(false);
        expect(outer.held).toBe(true);
        expect(await servers.valuesOf(resource)).toEqual(Array(3).fill(outer.value));
      },
      { reentrant: true },
    );
    expect(await servers.valuesOf(resource)).toEqual(Array(3).fill(null));
  });

  it('finds the outer lock across timers and promise chains started inside the work, and not outside it', async () => {
    const redlock = new Redlock(servers.clients, { maxReentrancy: 2, retryCount: 0 });
    const resource = fresh('context');
    let fromTimer: Lock | undefined;
    await redlock.using(resource, 5_000, async () => {
      fromTimer = await new Promise<Lock>((resolve, reject) => {
        setTimeout(() => void redlock.acquire(resource, 5_000, { reentrant: true }).then(resolve, reject), 20);
      });
    });
    expect(fromTimer?.released).toBe(true); // the outer using() released: the nested handle ended with it
    expect(fromTimer?.remainingMs()).toBe(0);

    // Another async context (a concurrent task) does not hold it: its reentrant acquire is a real
    // acquire, refused while the first task holds the resource.
    let release!: () => void;
    const holding = redlock.using(resource, 5_000, () => new Promise<void>((resolve) => (release = resolve)));
    await expect.poll(() => servers.valuesOf(resource).then((values) => values.filter(Boolean).length)).toBe(3);
    const other = await errorOf(redlock.acquire(resource, 5_000, { reentrant: true }));
    expect(other).toBeInstanceOf(LockAcquireError);
    expect((other as LockAcquireError).outcome).toBe('taken');
    release();
    await holding;
  });

  it('a nested handle cannot outlive the outer lock: once the outer is lost, it reads 0 and a new nested acquire is refused', async () => {
    const redlock = new Redlock(servers.clients, { maxReentrancy: 2 });
    const resource = fresh('outlive');
    const error = await caught(
      redlock.using(resource, 1_000, async (signal, outer) => {
        const nested = await redlock.acquire(resource, 1_000, { reentrant: true });
        // Lost: the keys gone on every member; the next extension finds it so.
        await Promise.all(servers.clients.map((client) => client.del(resource)));
        await outer.extend(1_000).catch(() => undefined);
        expect(signal.aborted).toBe(true);
        expect(nested.signal.aborted).toBe(true);
        expect(nested.held).toBe(outer.held);
        const refused = await caught(redlock.acquire(resource, 1_000, { reentrant: true }));
        expect(refused).toMatchObject({ code: errorCodes.QUORUMLOCK_ERR_REENTRANCY });
        expect(refused!.message).toMatch(/no longer held \(lost or expired\)/);
      }),
    );
    expect(error).toBeInstanceOf(LockLostError);
  });

  it('nests at most maxReentrancy deep, with a coded error naming the depth and the limit', async () => {
    const redlock = new Redlock(servers.clients, { maxReentrancy: 2 });
    const resource = fresh('depth');
    const depths: number[] = [];
    const error = await caught(
      redlock.using(resource, 5_000, () =>
        redlock.using(
          resource,
          5_000,
          () => {
            depths.push(1);
            return redlock.using(
              resource,
              5_000,
              async () => {
                depths.push(2);
                await redlock.acquire(resource, 5_000, { reentrant: true }); // a third level
              },
              { reentrant: true },
            );
          },
          { reentrant: true },
        ),
      ),
    );
    expect(depths).toEqual([1, 2]);
    expect(error).toMatchObject({ code: errorCodes.QUORUMLOCK_ERR_REENTRANCY, depth: 3, resources: [resource] });
    expect(error!.message).toMatch(/would nest 3 deep, more than maxReentrancy \(2\)/);
    expect(await servers.valuesOf(resource)).toEqual(Array(3).fill(null));
  });

  it('a fenced nested acquire inside an unfenced lock is refused (it would have no token); inside a fenced one it gets the outer token', async () => {
    // Issue 21, defect 6: it returned a handle whose fence was undefined, with no error.
    const redlock = new Redlock(servers.clients, { maxReentrancy: 4 });
    const resource = fresh('fenced-nested');
    await redlock.using(resource, 5_000, async (_, outer) => {
      expect(outer.fence).toBeUndefined();
      const before = await scriptsRun(servers.clients);
      const refused = await caught(redlock.acquire(resource, 5_000, { reentrant: true, fencing: true }));
      expect(refused).toMatchObject({ code: errorCodes.QUORUMLOCK_ERR_REENTRANCY, resources: [resource], depth: 1 });
      expect(refused!.message).toMatch(/fenced acquire of .* inside an unfenced lock/);
      let ran = false;
      const viaUsing = await caught(redlock.using(resource, 5_000, async () => void (ran = true), { reentrant: true, fencing: true }));
      expect(viaUsing).toMatchObject({ code: errorCodes.QUORUMLOCK_ERR_REENTRANCY });
      expect(ran).toBe(false);
      // Refused before any command, and the outer lock is untouched.
      expect(await scriptsRun(servers.clients)).toBe(before);
      expect(outer.held).toBe(true);
      // Unfenced nested acquires still nest.
      expect((await redlock.acquire(resource, 5_000, { reentrant: true })).value).toBe(outer.value);
    });
    await redlock.using(
      resource,
      5_000,
      async (_, outer) => {
        expect(outer.fence).toEqual(expect.any(Number));
        const nested = await redlock.acquire(resource, 5_000, { reentrant: true, fencing: true });
        expect(nested.fence).toBe(outer.fence);
      },
      { fencing: true },
    );
  });

  it('the same resources in another order are the same lock; a different set is a different lock', async () => {
    const redlock = new Redlock(servers.clients, { maxReentrancy: 2, retryCount: 0 });
    const [a, b] = [fresh('set-a'), fresh('set-b')];
    await redlock.using([a, b], 5_000, async (_, outer) => {
      const nested = await redlock.acquire([b, a], 5_000, { reentrant: true });
      expect(nested.value).toBe(outer.value);
      // [a] alone is not the lock this context holds: a real acquire, refused (held by us).
      expect(await errorOf(redlock.acquire(a, 5_000, { reentrant: true }))).toBeInstanceOf(LockAcquireError);
    });
  });

  it('without maxReentrancy, reentrant: true is refused before any command, naming the setting; a bad value is a typed error', async () => {
    const redlock = new Redlock(servers.clients);
    const resource = fresh('off');
    const before = await scriptsRun(servers.clients);
    expect(await caught(redlock.acquire(resource, 5_000, { reentrant: true }))).toMatchObject({
      code: errorCodes.QUORUMLOCK_ERR_REENTRANCY,
      message: expect.stringMatching(/needs a Redlock made with maxReentrancy > 0/),
    });
    expect(await caught(redlock.acquire(resource, 5_000, { reentrant: 'yes' as unknown as boolean }))).toMatchObject({
      code: errorCodes.QUORUMLOCK_ERR_INVALID_ARG_TYPE,
      parameter: 'reentrant',
    });
    expect(await scriptsRun(servers.clients)).toBe(before);
    expect(() => new Redlock(servers.clients, { maxReentrancy: 1001 })).toThrow(/maxReentrancy must be an integer from 0 to 1000/);
    expect(() => new Redlock(servers.clients, { maxReentrancy: -1 })).toThrow(RangeError);
  });
});
