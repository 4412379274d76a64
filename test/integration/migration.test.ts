/**
 * Coming from node-redlock v5 (@sesamecare-oss/redlock, its maintained fork, is a devDependency):
 * the differences docs/migration.md lists, shown on real masters. A thin shim maps v5-style calls
 * onto quorumlock, as a codebase in the middle of a migration would; where quorumlock behaves
 * differently on purpose, the test says so.
 */
import { Redlock as V5Redlock, type Settings as V5Settings } from '@sesamecare-oss/redlock';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LockAcquireError, LockLostError, Redlock, type Lock, type UsingOptions } from '../../src/index.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { fresh } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

type V5Routine<T> = (signal: AbortSignal & { error?: Error }, context: { lock: Lock; extensions: number }) => Promise<T>;

/**
 * What a migration shim does: v5's using(resources, duration, settings?, routine) order, its
 * automaticExtensionThreshold as quorumlock's extendThreshold, signal.error as signal.reason, and
 * its routine context ({ lock, extensions }) from quorumlock's (signal, lock).
 */
function v5Shim(redlock: Redlock) {
  return {
    acquire: (resources: string[], duration: number, settings?: Partial<V5Settings>) =>
      redlock.acquire(resources, duration, settings && { retryCount: settings.retryCount, retryDelay: settings.retryDelay, retryJitter: settings.retryJitter }),
    using<T>(resources: string[], duration: number, settingsOrRoutine: Partial<V5Settings> | V5Routine<T>, maybeRoutine?: V5Routine<T>): Promise<T> {
      const [settings, routine] = typeof settingsOrRoutine === 'function' ? [{}, settingsOrRoutine] : [settingsOrRoutine, maybeRoutine!];
      const options: UsingOptions = {};
      if (settings.retryCount !== undefined) options.retryCount = settings.retryCount;
      if (settings.automaticExtensionThreshold !== undefined) options.extendThreshold = settings.automaticExtensionThreshold;
      return redlock.using(
        resources,
        duration,
        (signal, lock) => {
          // v5 code reads signal.error; quorumlock's signal is a standard AbortSignal with `reason`.
          Object.defineProperty(signal, 'error', { get: () => (signal.aborted ? (signal.reason as Error) : undefined), configurable: true });
          return routine(signal, { lock, extensions: 0 });
        },
        options,
      );
    },
  };
}

it('during a rolling migration, node-redlock v5 and quorumlock exclude each other on the same resource names', async () => {
  const v5 = new V5Redlock(servers.clients, { retryCount: 0 });
  const redlock = new Redlock(servers.clients, { retryCount: 0 });
  const resource = fresh('migrating');

  const held = await v5.acquire([resource], 5_000);
  expect(await redlock.tryAcquire(resource, 5_000)).toBeNull();
  await held.release();
  // v5 rejects a second release (no quorum deleted anything); quorumlock's resolves (below).
  await expect(held.release()).rejects.toThrow(/quorum/);

  const lock = await redlock.acquire(resource, 5_000);
  await expect(v5.acquire([resource], 5_000)).rejects.toThrow(/quorum/);
  await lock.release();
  const again = await v5.acquire([resource], 5_000);
  await again.release();
});

it('v5-style using() through the shim: settings first, automaticExtensionThreshold as extendThreshold, extended past the ttl', async () => {
  const shim = v5Shim(new Redlock(servers.clients, { retryCount: 0 }));
  const resource = fresh('shimmed');
  // A wide margin (1 s) between the extension and the deadline: a busy machine's late timers must not lose the lock.
  const result = await shim.using([resource], 2_000, { retryCount: 2, automaticExtensionThreshold: 1_000 }, async (signal, { lock }) => {
    const firstDeadlineAt = Date.now() + lock.remainingMs();
    // Work until past the first deadline: only extensions keep the lock.
    while (Date.now() < firstDeadlineAt + 200) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(signal.aborted).toBe(false);
    expect(lock.held).toBe(true);
    return 'done';
  });
  expect(result).toBe('done');
  expect(await servers.valuesOf(resource)).toEqual([null, null, null]); // released at the end
});

it('a lost lock: signal.reason (v5: signal.error) is a LockLostError, and using() rejects with it where v5 resolves', async () => {
  const shim = v5Shim(new Redlock(servers.clients, { retryCount: 0 }));
  const resource = fresh('lost-under-using');
  let seenError: Error | undefined;
  const outcome = shim
    // The extension comes ~500 ms in, the deadline ~3 s in: it, not the expiry, finds the loss.
    .using([resource], 3_000, { automaticExtensionThreshold: 2_500 }, async (signal) => {
      // Someone deletes the keys everywhere: the next extension finds them gone.
      await Promise.all(servers.clients.map((client) => client.del(resource)));
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      seenError = signal.error; // v5 code keeps working through the shim
      return 'finished anyway';
    })
    .then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
  const settled = await outcome;
  expect(seenError).toBeInstanceOf(LockLostError);
  expect((seenError as LockLostError).lostBecause).toBe('gone');
  expect(settled).toEqual({ error: seenError });
});

it('durations above maxLockTtl are refused before anything is sent; raising maxLockTtl allows them', async () => {
  const redlock = new Redlock(servers.clients, { retryCount: 0 });
  await expect(redlock.acquire(fresh('long'), 120_000)).rejects.toThrow(/raise maxLockTtl/);
  const longer = new Redlock(servers.clients, { retryCount: 0, maxLockTtl: 120_000 });
  const lock = await longer.acquire(fresh('long'), 120_000);
  expect(lock.remainingMs()).toBeGreaterThan(100_000);
  await lock.release();
});

it('a refused acquire is a LockAcquireError saying who holds it (v5: ExecutionError), and extend() keeps the same handle (v5: a new Lock)', async () => {
  const redlock = new Redlock(servers.clients, { retryCount: 1, retryDelay: 10 });
  const resource = fresh('refused');
  const lock = await redlock.acquire(resource, 5_000);
  const error = await redlock.acquire(resource, 5_000).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(LockAcquireError);
  expect(error).toMatchObject({ outcome: 'taken', code: 'QUORUMLOCK_ERR_ACQUIRE' });
  expect((error as LockAcquireError).attempts).toHaveLength(2);
  expect(await lock.extend(5_000)).toBe(lock);
  expect((await lock.release()).freed).toBe(true);
  expect((await lock.release()).freed).toBe(true); // v5: a second release() rejects (no quorum of deletions)
});

it('v5 code passing its own settings to quorumlock directly is told what to use instead', async () => {
  expect(() => new Redlock(servers.clients, { automaticExtensionThreshold: 500 } as never)).toThrow(/quorumlock extends automatically inside using\(\)/);
  const redlock = new Redlock(servers.clients);
  const v5Order = redlock.using as unknown as (r: string[], d: number, s: object, f: () => Promise<void>) => Promise<void>;
  await expect(v5Order.call(redlock, [fresh('order')], 1_000, { retryCount: 1 }, async () => undefined)).rejects.toThrow(
    "quorumlock's order is using(resources, ttl, work, options) (node-redlock v5 passes settings before the routine)",
  );
});
