/**
 * Found by review of the presence channel: ioredis writes again, after a reconnect, the commands
 * written but not answered when the socket closed (autoResendUnfulfilledCommands, default true;
 * the subscriber is a duplicate of the user's client and keeps that option). A presence SUBSCRIBE
 * in flight when the subscriber connection dropped came back after the waiter had stopped waiting
 * (its UNSUBSCRIBE was skipped: the connection was not ready), and the same reconnect re-sent the
 * waiter's last acquire (a late copy, which re-creates its place and handover request): a release
 * then handed the gone waiter the lock for its whole ttl, on every member. Now every 'ready'
 * unsubscribes the presence channels named on the connection whose waiters no longer wait
 * (waiting/notifications.ts, Subscriber #named).
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '../chaos/proxy.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { eventually, fresh, heldOnEvery, lineLengths, lineOf, presentOn, sleep } from './util.js';

let servers: TestMasters;
let proxies: TcpProxy[] = [];
const { client, quitAll } = redlocksOn(() => servers);
const opened: Redis[] = [];

beforeAll(async () => {
  servers = await startTestMasters(3);
  proxies = await Promise.all(servers.masters.map((master) => TcpProxy.start(master)));
});
afterEach(async () => {
  await quitAll();
  for (const connection of opened.splice(0)) connection.disconnect();
  await servers.heal();
});
afterAll(async () => {
  await Promise.all(proxies.map((proxy) => proxy.close()));
  await servers?.close();
});

const inLine = (resource: string) => lineLengths(servers.clients, resource);

describe('presence survives a reconnect through ioredis re-sending an unanswered SUBSCRIBE', () => {
  it('a waiter that gave up while its subscriber reconnected is not handed the lock for its whole ttl', async () => {
    const resource = fresh('presence-resend');
    const other = fresh('presence-resend-other');
    const holder = client();
    const held = await holder.acquire(resource, 10_000);
    const heldOther = await holder.acquire(other, 10_000);
    await heldOnEvery(servers.clients, resource, held.value);
    await heldOnEvery(servers.clients, other, heldOther.value);

    // The waiter's service reaches the members through proxies (its network), with a documented
    // option (enableOfflineQueue: false) and a short reconnect delay; every other option default.
    const clients = proxies.map((proxy) => {
      const redis = new Redis({ host: '127.0.0.1', port: proxy.port, enableOfflineQueue: false, retryStrategy: () => 300 });
      redis.on('error', () => {});
      return redis;
    });
    opened.push(...clients);
    await Promise.all(clients.map((c) => (c.status === 'ready' ? undefined : new Promise((resolve) => c.once('ready', resolve)))));
    const waiter = client({}, clients);

    // Another acquire of the same Redlock waits meanwhile (a service with concurrent acquires), so
    // its subscriber connections are wanted and reconnect.
    const otherWait = new AbortController();
    const waitingOther = waiter.acquire(other, 30_000, { waitTimeout: 60_000, signal: otherWait.signal }).catch((error: unknown) => error);
    await eventually(async () => expect(await inLine(other)).toEqual([1, 1, 1]), 10_000);
    await sleep(300); // its subscriptions are made: the Redlock listens

    // The network starts to fail: replies stop arriving (the commands still reach the servers).
    for (const proxy of proxies) proxy.hold('toClient');
    const controller = new AbortController();
    const gaveUp = waiter.acquire(resource, 30_000, { waitTimeout: 20_000, signal: controller.signal }).catch((error: unknown) => error);
    // Its first attempt took its place and its presence SUBSCRIBE reached every server: unanswered.
    const waiterId = await eventually(async () => {
      const ids = await Promise.all(servers.clients.map((c) => c.zrange(lineOf(resource), '0', '0')));
      expect(ids.map((id) => id.length)).toEqual([1, 1, 1]);
      const id = ids[0]![0]!;
      expect(await presentOn(servers.clients, id)).toEqual([1, 1, 1]);
      return id;
    });
    // The connections drop; the acquire gives up while they reconnect (its leave cannot be sent).
    for (const proxy of proxies) proxy.retarget(proxy.target);
    for (const proxy of proxies) proxy.release('toClient');
    await eventually(async () => expect(clients.map((c) => c.status === 'ready')).toEqual([false, false, false]), 5_000);
    controller.abort();
    expect(await gaveUp).toMatchObject({ name: 'AbortError' });
    // Reconnected: ioredis re-sends what was unanswered, the presence SUBSCRIBE among it.
    await eventually(async () => expect(clients.map((c) => c.status)).toEqual(['ready', 'ready', 'ready']), 5_000);
    await sleep(500);
    const presence = await presentOn(servers.clients, waiterId);
    await held.release();
    const pttls = await Promise.all(servers.clients.map((c) => c.pttl(resource)));
    const values = await servers.valuesOf(resource);
    otherWait.abort();
    await waitingOther;
    // A waiter that stopped waiting is present nowhere, and is handed nothing for its whole ttl.
    expect({ presence, longHandOver: pttls.map((pttl) => pttl > 9_150) }, JSON.stringify({ values, pttls })).toEqual({
      presence: [0, 0, 0],
      longHandOver: [false, false, false],
    });
    await heldOther.release().catch(() => undefined);
  }, 30_000);
});
