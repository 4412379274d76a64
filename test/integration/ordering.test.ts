/**
 * Calls to a member reach it in the order they were made (docs/internals.md#auto-pipelining).
 *
 * The hazard: ioredis' auto-pipelining queues commands and flushes them on a later tick, and not
 * while another pipeline of the same client awaits replies. A rollback or release written
 * directly can then reach the member before the acquire it undoes; the release finds nothing,
 * the acquire then sets the key, and the key stays for its whole ttl, blocking the resource.
 * What makes it likely: one member a little slower than the others (its pipelines wait longer
 * for replies) and many concurrent acquires and releases, contended (rollbacks) or not.
 *
 * The test: for a while, against five real masters of which one sits behind a 2 ms latency proxy,
 * 32 workers acquire and release through clients that use ioredis' auto-pipelining, and 32 more
 * through default clients, at the same time; in each group half share a few resources, half have
 * their own. When every worker is done and every connection has run what was sent on it, no lock
 * key may be left on any member. (Before the fix, default clients left keys behind; clients with
 * auto-pipelining sent every call through its queue, one ordered path, and now send none.)
 */
import Redis from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock, systemClock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { fresh } from './util.js';

let servers: TestMasters;
let proxy: TcpProxy;

beforeAll(async () => {
  servers = await startTestMasters(5);
  proxy = await TcpProxy.start(servers.masters[0]!);
  proxy.latencyMs = 2;
});
afterAll(async () => {
  await proxy?.close();
  await servers?.close();
});

const WORKERS = 32;
const RUN_MS = 2_000;
const TTL = 60_000; // an orphan outlives the test by far

/** The first member through the slow proxy, the others direct. */
function clientsFor(options: { enableAutoPipelining?: boolean }): Redis[] {
  const addresses = [{ host: '127.0.0.1', port: proxy.port }, ...servers.masters.slice(1)];
  return addresses.map(({ host, port }) => {
    const client = new Redis({ host, port, ...options });
    client.on('error', () => {});
    return client;
  });
}

interface Tally {
  cycles: number;
  failed: number;
}

/** Acquires and releases `pick()`'s resource until the time is up. */
async function work(redlock: Redlock, pick: () => string, until: number, tally: Tally): Promise<void> {
  while (systemClock.now() < until) {
    try {
      const lock = await redlock.acquire(pick(), TTL, { retryCount: 2, retryDelay: 5, retryJitter: 5 });
      await lock.release();
      tally.cycles++;
    } catch {
      tally.failed++; // contention; what it set was rolled back
    }
  }
}

/** One kind of client: its Redlock, its workers' resources, and what they did. */
async function runKind(options: { enableAutoPipelining?: boolean }, until: number) {
  const clients = clientsFor(options);
  await Promise.all(clients.map((client) => client.ping()));
  const redlock = new Redlock(clients);
  const shared = Array.from({ length: 8 }, () => fresh('order-shared'));
  const own = Array.from({ length: WORKERS / 2 }, () => fresh('order-own'));
  const tally: Tally = { cycles: 0, failed: 0 };
  let turn = 0;
  await Promise.all([
    ...own.map((resource) => work(redlock, () => resource, until, tally)),
    ...own.map(() => work(redlock, () => shared[turn++ % shared.length]!, until, tally)),
  ]);
  // Every release and rollback was sent before its worker went on; a PING on each connection
  // returns once the member has run everything queued ahead of it.
  await Promise.all(clients.map((client) => client.ping()));
  return { clients, redlock, resources: [...shared, ...own], tally };
}

/** How many of `resources` still have a lock key, per member. */
async function leftBehind(resources: string[]): Promise<number[]> {
  await Promise.all(servers.clients.map((client) => client.ping()));
  return Promise.all(servers.clients.map(async (client) => (await Promise.all(resources.map((resource) => client.exists(resource)))).filter(Boolean).length));
}

it(`${WORKERS} workers on auto-pipelining clients and ${WORKERS} on default clients, one member 2 ms slower: no lock key is left behind`, async () => {
  const until = systemClock.now() + RUN_MS;
  const kinds = await Promise.all([runKind({ enableAutoPipelining: true }, until), runKind({}, until)]);
  try {
    const [auto, plain] = await Promise.all(kinds.map((kind) => leftBehind(kind.resources)));
    const report = (label: string, kind: (typeof kinds)[number], left: number[] | undefined) =>
      `${label}: ${kind.tally.cycles} cycles, ${kind.tally.failed} acquires failed, lock keys left per member ${JSON.stringify(left)}`;
    const message = [report('auto-pipelining', kinds[0]!, auto), report('default', kinds[1]!, plain)].join('; ');
    for (const kind of kinds) expect(kind.tally.cycles, message).toBeGreaterThan(100); // the run did exercise the path
    expect({ auto, plain }, message).toEqual({ auto: [0, 0, 0, 0, 0], plain: [0, 0, 0, 0, 0] });
  } finally {
    for (const kind of kinds) {
      await kind.redlock.quit();
      for (const client of kind.clients) client.disconnect();
    }
  }
});
