/**
 * The whole lock family through each client library's adapter, on real masters: ioredis, iovalkey,
 * node-redis 6 (RESP3, its default) and 5 (RESP2, its default), Valkey GLIDE, and a Redlock whose
 * members use three different libraries (a migration). Each takes, extends, waits for (woken by
 * the release: the waiter's timed retry is far later than the test's end), fences and releases a
 * lock, then a shared lock, a semaphore permit and an election.
 */
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencedWrite, Redlock, type MemberClient } from '../../../src/index.js';
import { resetMembers } from '../../../src/testing.js';
import { processBackend } from '../../harness/process.js';
import type { Master, MasterSet } from '../../harness/types.js';
import { connected, fresh } from '../util.js';

let set: MasterSet;
beforeAll(async () => {
  set = await processBackend.start(3);
});
afterAll(() => set?.stop());

/** One library: a client to one master, and how to close it. */
interface Library {
  name: string;
  open(master: Master): Promise<{ client: MemberClient; close(): Promise<unknown> }>;
}

const ioredis: Library = {
  name: 'ioredis',
  async open({ host, port }) {
    const client = new Redis({ host, port });
    return { client, close: () => client.quit() };
  },
};
const iovalkey: Library = {
  name: 'iovalkey',
  async open({ host, port }) {
    const client = new Valkey({ host, port });
    return { client, close: () => client.quit() };
  },
};
const nodeRedis6: Library = {
  name: 'node-redis 6 (RESP3)',
  async open({ host, port }) {
    const client = createClient6({ socket: { host, port } });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: () => client.close() };
  },
};
const nodeRedis5: Library = {
  name: 'node-redis 5 (RESP2)',
  async open({ host, port }) {
    const client = createClient5({ socket: { host, port } });
    client.on('error', () => undefined);
    await client.connect();
    return { client, close: () => Promise.resolve(client.destroy()) };
  },
};
const glide: Library = {
  name: 'Valkey GLIDE',
  async open({ host, port }) {
    const client = await GlideClient.createClient({ addresses: [{ host, port }], requestTimeout: 2000 });
    return { client, close: () => Promise.resolve(client.close()) };
  },
};

const sets: { name: string; libraries: Library[] }[] = [
  ...[ioredis, iovalkey, nodeRedis6, nodeRedis5, glide].map((library) => ({ name: library.name, libraries: [library, library, library] })),
  { name: 'mixed: node-redis 6, ioredis, GLIDE', libraries: [nodeRedis6, ioredis, glide] },
];

describe.each(sets)('$name', ({ libraries }) => {
  let redlock: Redlock;
  let clients: MemberClient[] = [];
  let closes: (() => Promise<unknown>)[] = [];
  beforeAll(async () => {
    const opened = await Promise.all(libraries.map((library, index) => library.open(set.masters[index]!)));
    closes = opened.map(({ close }) => close);
    clients = opened.map(({ client }) => client);
    // retryDelay far beyond the test's timeout: a waiter that gets the lock was woken by the release.
    redlock = new Redlock(
      opened.map(({ client }) => client),
      { retryCount: 5, retryDelay: 60_000, retryJitter: 0 },
    );
    await redlock.trustMembers();
    await connected(redlock);
  });
  afterAll(async () => {
    await redlock?.quit();
    await Promise.all(closes.map((close) => close()));
  });

  it('takes, extends, fences and releases a lock; a waiter is woken by the release', async () => {
    const resource = fresh('family');
    const lock = await redlock.acquire(resource, 10_000, { fencing: true });
    expect(lock.fence).toBeTypeOf('number');
    await lock.extend(20_000);
    expect(lock.remainingMs()).toBeGreaterThan(10_000);
    await expect(redlock.tryAcquire(resource, 10_000)).resolves.toBeNull();
    const waiter = redlock.acquire(resource, 10_000, { fencing: true });
    // The waiter takes its place in line first (its first attempt is refused), then the release wakes it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await lock.release();
    const next = await waiter;
    expect(next.fence! > lock.fence!).toBe(true);
    // The store guarded by the tokens, through the same library: the older holder is turned away.
    const store = clients[0]!;
    expect(await fencedWrite(store, `${resource}:data`, 'from the new holder', next.fence!)).toBe(true);
    expect(await fencedWrite(store, `${resource}:data`, 'from the old holder', lock.fence!)).toBe(false);
    await next.release();
  }, 20_000);

  it('a shared lock, a semaphore permit and an election', async () => {
    const doc = fresh('doc');
    const [a, b] = await Promise.all([redlock.acquire(doc, 10_000, { shared: true }), redlock.acquire(doc, 10_000, { shared: true })]);
    await expect(redlock.tryAcquire(doc, 10_000)).resolves.toBeNull();
    await Promise.all([a.release(), b.release()]);
    const exclusive = await redlock.acquire(doc, 10_000);
    await exclusive.release();

    const pool = redlock.semaphore(fresh('pool'), { permits: 2 });
    const first = await pool.acquire(10_000);
    const second = await pool.acquire(10_000);
    await expect(pool.acquire(10_000, { retryCount: 0 })).rejects.toThrow();
    expect(new Set([first.permit, second.permit]).size).toBe(2);
    expect(await pool.holders()).toHaveLength(2);
    await Promise.all([first.release(), second.release()]);

    const election = redlock.election(fresh('leader'), { ttl: 10_000, id: 'host-a' });
    const leadership = await election.campaign();
    expect(leadership.term).toBeGreaterThan(0);
    await expect(election.leader()).resolves.toMatchObject({ id: 'host-a' });
    await leadership.resign();
  }, 20_000);

  it('quorumlock/testing: resetMembers() wipes the members and declares them new, so the next lock needs no wait', async () => {
    const reports = await resetMembers(clients);
    expect(reports.map((report) => [report.wiped, report.epochs])).toEqual(clients.map(() => [1, 1]));
    const lock = await redlock.acquire(fresh('after-reset'), 10_000, { retryCount: 0 });
    await lock.release();
  });
});
