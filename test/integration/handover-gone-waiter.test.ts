/**
 * A release hands the lock over only to a waiter that still waits (docs/handover.md): its
 * Redlock holds a subscription to the waiter's presence channel (keys.ts, presenceChannel) from
 * the first refusal of its acquire to the end of its wait, and the release checks it (PUBSUB NUMSUB: _keys.lua,
 * listening). Found by review: when the check was on the Redlock's listener channel (shared by
 * its waiters, subscribed after a wait ends), a waiter that stopped waiting while its place
 * survived on a member (its leave could not be sent; or a late copy of one of its attempts
 * re-created the place after its leave) was handed the lock for its whole ttl, and nobody took
 * that value back. Here it is handed nothing: the key lives no longer than the place's lease.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { contextOf } from '../../src/redlock.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { eventually, fresh, hearsReleases, heldOnEvery, lineLengths, lineOf, requestsOf } from './util.js';

let servers: TestMasters;
const { client, quitAll } = redlocksOn(() => servers);
const opened: Redis[] = [];

beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterEach(async () => {
  await quitAll();
  for (const connection of opened.splice(0)) connection.disconnect();
  await servers.heal();
});
afterAll(() => servers?.close());

const inLine = (resource: string) => lineLengths(servers.clients, resource);

/** The default lease of a place in line: max(1 s, 3 × (200 + 100 + 50)) ms (waiting/line.ts). */
const DEFAULT_LEASE_MS = 1_050;

describe('a waiter that stopped waiting is not handed the lock for its whole ttl', () => {
  it('gave up while its leave could not be sent (enableOfflineQueue: false, reconnecting): the resource is free again within its lease', async () => {
    const resource = fresh('gone-waiter-leave-lost');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    // The waiter's service: enableOfflineQueue false (a documented, supported option), slow to reconnect.
    const clients = servers.masters.map((master) => {
      const redis = new Redis({ host: master.host, port: master.port, enableOfflineQueue: false, retryStrategy: () => 500 });
      redis.on('error', () => {});
      return redis;
    });
    opened.push(...clients);
    await Promise.all(clients.map((c) => (c.status === 'ready' ? undefined : new Promise((resolve) => c.once('ready', resolve)))));
    const controller = new AbortController();
    const gaveUp = client({}, clients)
      .acquire(resource, 30_000, { waitTimeout: 20_000, signal: controller.signal })
      .catch((error: unknown) => error);
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1]);
      expect(await hearsReleases(servers.clients, resource)).toEqual([true, true, true]);
    });
    // Its command connections drop for a moment (its subscriber connections stay): it gives up
    // now, and its leave cannot be sent.
    for (const c of clients) c.disconnect(true);
    controller.abort();
    expect(await gaveUp).toMatchObject({ name: 'AbortError' });
    await holder.release();
    const pttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    const values = await servers.valuesOf(resource);
    // Not its 30 s ttl, which nobody would take back (its acquire is over).
    expect(
      pttls.every((pttl) => pttl <= DEFAULT_LEASE_MS),
      JSON.stringify({ values, pttls }),
    ).toBe(true);
  });

  it('left, then a late copy of one of its attempts re-created its place: not handed the lock for its whole ttl', async () => {
    const resource = fresh('gone-waiter-late-copy');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    const waiter = client({ retryDelay: 3_000, retryJitter: 0 });
    const controller = new AbortController();
    const gaveUp = waiter.acquire(resource, 30_000, { waitTimeout: 20_000, signal: controller.signal }).catch((error: unknown) => error);
    await eventually(async () => {
      expect(await inLine(resource)).toEqual([1, 1, 1]);
      expect(await hearsReleases(servers.clients, resource)).toEqual([true, true, true]);
    });
    // What its attempts sent: its place and its handover request on each member.
    const sent = await Promise.all(
      servers.clients.map(async (c) => {
        const entry = Object.entries(await c.hgetall(requestsOf(resource)))[0];
        if (entry === undefined) return undefined;
        const [id, request] = entry;
        const [value, ttl, quarantine, stamp] = request.split(' ') as [string, string, string, string];
        const ticket = Number(await c.zscore(lineOf(resource), id));
        return { id, value, ttl: Number(ttl), quarantine: Number(quarantine), stamp, ticket };
      }),
    );
    controller.abort();
    expect(await gaveUp).toMatchObject({ name: 'AbortError' });
    await eventually(async () => expect(await inLine(resource)).toEqual([0, 0, 0])); // it left
    // A copy of its last attempt, held on a delayed link (or re-sent after a reconnect), runs now
    // on each member, in the same epoch: as the attempt's own run would.
    const members = contextOf(waiter).members;
    await Promise.all(
      members.map((member, index) => {
        const s = sent[index];
        if (s === undefined) return undefined;
        return member.acquire([resource], {
          value: `late-copy-${index}`,
          ttlMs: s.ttl,
          waiter: { id: s.id, ticket: s.ticket, leaseMs: 9_150 },
          quarantineMs: s.quarantine,
          fencing: false,
          handover: { value: s.value, stamp: s.stamp, abandoned: '' },
        });
      }),
    );
    if (sent.every(Boolean)) expect(await inLine(resource)).toEqual([1, 1, 1]);
    await holder.release();
    const pttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    const values = await servers.valuesOf(resource);
    // Not the gone waiter's 30 s ttl, with nobody left to take it back.
    expect(
      pttls.every((pttl) => pttl <= 9_150),
      JSON.stringify({ values, pttls }),
    ).toBe(true);
  });
});
