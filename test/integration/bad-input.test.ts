/**
 * Bad input through the public API is refused before anything goes on the wire: the clients here
 * are lazyConnect, so any command would make them connect, and after every refused call each one
 * must still be in status 'wait'. A positive control on the same masters shows that a valid call
 * through the same kind of client does connect and lock.
 */
import Redis from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentRangeError, ArgumentTypeError, QuorumlockError, Redlock, type RedlockOptions } from '../../src/index.js';
import { Lock } from '../../src/lock/lock.js';
import { contextOf } from '../../src/redlock.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { heldOnEvery } from './util.js';

let servers: TestMasters;
const opened: Redis[] = [];

/** One lazyConnect client per master: 'wait' until the first command is sent. */
function lazyClients(): Redis[] {
  const clients = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, lazyConnect: true }));
  opened.push(...clients);
  return clients;
}

beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(async () => {
  for (const client of opened) client.disconnect();
  await servers?.close();
});

const statuses = (clients: readonly Redis[]) => clients.map((client) => client.status);

/** The error a call rejected with; fails if it threw synchronously instead or resolved. */
async function rejectionOf(call: () => Promise<unknown>): Promise<Error & { parameter?: string }> {
  let promise: Promise<unknown> | undefined;
  expect(() => {
    promise = call();
  }).not.toThrow();
  const outcome = await promise!.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error('expected a rejection, but the call resolved');
  return outcome.error as Error & { parameter?: string };
}

describe('bad input never reaches the network', () => {
  let clients: Redis[];
  let redlock: Redlock;

  beforeAll(() => {
    clients = lazyClients();
    redlock = new Redlock(clients);
  });

  it('constructing a Redlock sends nothing', () => {
    expect(redlock.members).toHaveLength(3);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it.each<{ label: string; members: (clients: Redis[]) => unknown[]; options?: Record<string, unknown>; kind: typeof TypeError; parameter: string }>([
    { label: 'retryCount -1', members: (c) => c, options: { retryCount: -1 }, kind: RangeError, parameter: 'retryCount' },
    { label: 'retryDelay -1', members: (c) => c, options: { retryDelay: -1 }, kind: RangeError, parameter: 'retryDelay' },
    { label: 'retryJitter -5', members: (c) => c, options: { retryJitter: -5 }, kind: RangeError, parameter: 'retryJitter' },
    { label: 'nodeTimeout 0', members: (c) => c, options: { nodeTimeout: 0 }, kind: RangeError, parameter: 'nodeTimeout' },
    { label: 'driftFactor 0.5', members: (c) => c, options: { driftFactor: 0.5 }, kind: RangeError, parameter: 'driftFactor' },
    { label: 'no members', members: () => [], kind: RangeError, parameter: 'members' },
    { label: 'the same client twice', members: (c) => [c[0], c[1], c[0]], kind: RangeError, parameter: 'members[2]' },
    { label: 'a non-client member', members: (c) => [c[0], { port: 6379 }], kind: TypeError, parameter: 'members[1]' },
  ])('new Redlock: $label throws at once', ({ members, options, kind, parameter }) => {
    let error: unknown;
    try {
      new Redlock(members(clients) as Redis[], options as RedlockOptions);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(kind);
    expect(error).toMatchObject({ parameter, message: expect.stringContaining(`quorumlock: ${parameter} `) });
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  // `as never`: the types already forbid these; the checks are for callers the types cannot reach.
  it.each<{ label: string; call: (redlock: Redlock) => Promise<unknown>; kind: typeof TypeError; parameter: string; says: string }>([
    { label: 'acquire: ttl 0', call: (r) => r.acquire('r', 0), kind: RangeError, parameter: 'ttl', says: 'an integer from 54 to 60000 ms' },
    { label: 'acquire: ttl 1.5', call: (r) => r.acquire('r', 1.5), kind: RangeError, parameter: 'ttl', says: 'got 1.5' },
    { label: "acquire: ttl '1000'", call: (r) => r.acquire('r', '1000' as never), kind: TypeError, parameter: 'ttl', says: 'got "1000"' },
    { label: 'acquire: ttl 2 ** 31', call: (r) => r.acquire('r', 2 ** 31), kind: RangeError, parameter: 'ttl', says: 'got 2147483648' },
    {
      label: 'acquire: ttl 53 <= nodeTimeout + drift',
      call: (r) => r.acquire('r', 53),
      kind: RangeError,
      parameter: 'ttl',
      says: 'nodeTimeout + drift (50 + 3 ms)',
    },
    { label: 'acquire: resources []', call: (r) => r.acquire([], 1_000), kind: RangeError, parameter: 'resources', says: 'got an empty array' },
    { label: "acquire: resources ''", call: (r) => r.acquire('', 1_000), kind: TypeError, parameter: 'resources', says: 'must be a non-empty string' },
    { label: "acquire: resources ['a', 'a']", call: (r) => r.acquire(['a', 'a'], 1_000), kind: RangeError, parameter: 'resources[1]', says: 'repeats "a"' },
    { label: 'acquire: resources [1]', call: (r) => r.acquire([1] as never, 1_000), kind: TypeError, parameter: 'resources[0]', says: 'got 1' },
    {
      label: 'acquire: retryCount -1',
      call: (r) => r.acquire('r', 1_000, { retryCount: -1 }),
      kind: RangeError,
      parameter: 'retryCount',
      says: 'an integer >= 0',
    },
    {
      label: 'acquire: retryDelay -1',
      call: (r) => r.acquire('r', 1_000, { retryDelay: -1 }),
      kind: RangeError,
      parameter: 'retryDelay',
      says: 'a number >= 0',
    },
    {
      label: 'acquire: retryJitter NaN',
      call: (r) => r.acquire('r', 1_000, { retryJitter: Number.NaN }),
      kind: TypeError,
      parameter: 'retryJitter',
      says: 'got NaN',
    },
    {
      label: 'acquire: waitTimeout 0',
      call: (r) => r.acquire('r', 1_000, { waitTimeout: 0 }),
      kind: RangeError,
      parameter: 'waitTimeout',
      says: 'a number > 0',
    },
    { label: 'acquire: waitTimeout -1', call: (r) => r.acquire('r', 1_000, { waitTimeout: -1 }), kind: RangeError, parameter: 'waitTimeout', says: 'got -1' },
    {
      label: 'acquire: signal {}',
      call: (r) => r.acquire('r', 1_000, { signal: {} as never }),
      kind: TypeError,
      parameter: 'signal',
      says: 'must be an AbortSignal',
    },
    { label: 'acquire: options null', call: (r) => r.acquire('r', 1_000, null as never), kind: TypeError, parameter: 'options', says: 'must be an object' },
    {
      label: 'tryAcquire: options a string',
      call: (r) => r.tryAcquire('r', 1_000, 'oops' as never),
      kind: TypeError,
      parameter: 'options',
      says: 'got "oops"',
    },
    { label: 'tryAcquire: options null', call: (r) => r.tryAcquire('r', 1_000, null as never), kind: TypeError, parameter: 'options', says: 'got null' },
    { label: 'tryAcquire: ttl -1', call: (r) => r.tryAcquire('r', -1), kind: RangeError, parameter: 'ttl', says: 'got -1' },
    {
      label: 'tryAcquire: resources undefined',
      call: (r) => r.tryAcquire(undefined as never, 1_000),
      kind: TypeError,
      parameter: 'resources',
      says: 'got undefined',
    },
    {
      label: 'tryAcquire: signal an AbortController',
      call: (r) => r.tryAcquire('r', 1_000, { signal: new AbortController() as never }),
      kind: TypeError,
      parameter: 'signal',
      says: 'must be an AbortSignal',
    },
  ])('$label rejects with $kind.name', async ({ call, kind, parameter, says }) => {
    const error = await rejectionOf(() => call(redlock));
    expect(error).toBeInstanceOf(kind);
    expect(error).not.toBeInstanceOf(kind === TypeError ? RangeError : TypeError);
    expect(error.constructor).toBe(kind === TypeError ? ArgumentTypeError : ArgumentRangeError);
    expect(error).toBeInstanceOf(QuorumlockError);
    expect(error.parameter).toBe(parameter);
    expect(error.message).toContain(parameter);
    expect(error.message).toContain(says);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  // Options carried over from node-redlock (or mistyped) are refused, not ignored, and say what to use.
  it.each<{ label: string; call: (redlock: Redlock) => Promise<unknown>; parameter: string; says: string[] }>([
    {
      label: 'acquire: a typo (retryCont)',
      call: (r) => r.acquire('r', 1_000, { retryCont: 3 } as never),
      parameter: 'retryCont',
      says: ['is not an option of acquire() (did you mean retryCount?)', 'its options are retryCount, retryDelay'],
    },
    {
      label: "acquire: node-redlock v5's automaticExtensionThreshold",
      call: (r) => r.acquire('r', 1_000, { automaticExtensionThreshold: 500 } as never),
      parameter: 'automaticExtensionThreshold',
      says: ['acquire() does not extend by itself', 'extendThreshold'],
    },
    {
      label: 'acquire: a constructor setting per call (nodeTimeout)',
      call: (r) => r.acquire('r', 1_000, { nodeTimeout: 10 } as never),
      parameter: 'nodeTimeout',
      says: ['is a new Redlock() option'],
    },
    {
      label: "using: node-redlock v5's automaticExtensionThreshold",
      call: (r) => r.using('r', 1_000, async () => undefined, { automaticExtensionThreshold: 500 } as never),
      parameter: 'automaticExtensionThreshold',
      says: ['extendThreshold ms (default ttl / 3)'],
    },
    {
      label: 'using: an unknown option, even with a valid one beside it',
      call: (r) => r.using('r', 1_000, async () => undefined, { extendThreshold: 300, lockTimeout: 1_000 } as never),
      parameter: 'lockTimeout',
      says: ["is redis-semaphore's", 'second argument'],
    },
    {
      label: 'tryAcquire: retryCount (one attempt)',
      call: (r) => r.tryAcquire('r', 1_000, { retryCount: 3 } as never),
      parameter: 'retryCount',
      says: ['tryAcquire() makes one attempt; use acquire() to retry'],
    },
  ])('$label rejects with QUORUMLOCK_ERR_UNKNOWN_OPTION', async ({ call, parameter, says }) => {
    const error = (await rejectionOf(() => call(redlock))) as TypeError & { parameter: string; code: string };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe('QUORUMLOCK_ERR_UNKNOWN_OPTION');
    expect(error.parameter).toBe(parameter);
    expect(error.message.startsWith(`quorumlock: ${parameter} is not an option of `)).toBe(true);
    for (const text of says) expect(error.message).toContain(text);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it("new Redlock with node-redlock v5's automaticExtensionThreshold throws, pointing to using()", () => {
    let error: (TypeError & { parameter?: string; code?: string }) | undefined;
    try {
      new Redlock(clients, { automaticExtensionThreshold: 500 } as RedlockOptions);
    } catch (thrown) {
      error = thrown as TypeError;
    }
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ parameter: 'automaticExtensionThreshold', code: 'QUORUMLOCK_ERR_UNKNOWN_OPTION' });
    expect(error!.message).toContain('quorumlock extends automatically inside using()');
    expect(error!.message).toContain('extendThreshold');
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it("using() in node-redlock v5's order (settings, then routine) says which order quorumlock takes", async () => {
    const v5Order = redlock.using as unknown as (resources: string[], ttl: number, settings: object, routine: () => Promise<void>) => Promise<void>;
    const error = (await rejectionOf(() => v5Order.call(redlock, ['r'], 1_000, { retryCount: 2 }, async () => undefined))) as TypeError & { parameter: string };
    expect(error).toBeInstanceOf(TypeError);
    expect(error.parameter).toBe('work');
    expect(error.message).toContain("quorumlock's order is using(resources, ttl, work, options) (node-redlock v5 passes settings before the routine)");
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it('lock.extend with a bad ttl rejects without sending anything', async () => {
    const lock = new Lock(contextOf(redlock), {
      id: 'forged',
      resources: ['r'],
      value: 'not-a-real-value',
      deadline: redlock.settings.clock.now() + 10_000,
      votes: [],
      fence: undefined,
    });
    for (const [ttl, kind] of [
      [0, RangeError],
      [1.5, RangeError],
      [53, RangeError],
      [2 ** 31, RangeError],
      [Number.NaN, TypeError],
      ['1000', TypeError],
    ] as const) {
      const error = await rejectionOf(() => lock.extend(ttl as number));
      expect(error, `extend(${String(ttl)})`).toBeInstanceOf(kind);
      expect(error.parameter).toBe('ttl');
    }
    expect(lock.remainingMs()).toBeGreaterThan(9_000);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it('an already-aborted signal rejects with its reason, also before any network call', async () => {
    const reason = new Error('cancelled before we started');
    await expect(redlock.acquire('r', 1_000, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await expect(redlock.tryAcquire('r', 1_000, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });

  it('left nothing on any master', async () => {
    // Only the epoch marker that trusting the new masters wrote (README, "Restart quarantine").
    expect(await Promise.all(servers.clients.map((client) => client.keys('*')))).toEqual([['quorumlock:epoch'], ['quorumlock:epoch'], ['quorumlock:epoch']]);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);
  });
});

describe('positive control: the same kind of clients, valid input', () => {
  it('connects and locks; extend with a bad ttl then rejects and leaves the lock as it was', async () => {
    const clients = lazyClients();
    const redlock = new Redlock(clients);
    expect(statuses(clients)).toEqual(['wait', 'wait', 'wait']);

    const ttl = 5_000;
    const lock = await redlock.acquire('bad-input:control', ttl);
    expect(lock.remainingMs()).toBeGreaterThan(0);
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(redlock.quorum);
    // Every client was sent the acquire (stragglers are not waited for, but they were sent to).
    for (const status of statuses(clients)) expect(status).not.toBe('wait');
    // Every master gets the key: a member whose epoch was still being read when the acquire was
    // made is sent it once the read returns, which can be after a PING sent now (util.ts).
    await heldOnEvery(servers.clients, 'bad-input:control', lock.value);

    const before = lock.remainingMs();
    // 60000.5 would stretch the keys to a minute if it were sent; it must not be.
    for (const bad of [0, 60_000.5, 2 ** 31]) {
      const error = await rejectionOf(() => lock.extend(bad));
      expect(error, `extend(${bad})`).toBeInstanceOf(RangeError);
      expect(error.parameter).toBe('ttl');
    }
    const after = lock.remainingMs();
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(before);
    expect(before - after).toBeLessThan(250);
    const pttls = await Promise.all(servers.clients.map((client) => client.pttl('bad-input:control')));
    for (const pttl of pttls) {
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(ttl);
    }

    // The lock is still usable: a valid extend goes through, then release frees it everywhere.
    await lock.extend(8_000);
    expect(lock.remainingMs()).toBeGreaterThan(before);
    const released = await lock.release();
    expect(released.freed).toBe(true);
    expect(await servers.valuesOf('bad-input:control')).toEqual([null, null, null]);
  });
});
