/**
 * A new Redlock's first round (quorum/round.ts, members/hearing.ts), on five real masters, three of
 * them behind TCP proxies that add latency to every chunk, each way. The first call on a member
 * waits for the connection (on fresh clients) and for the epoch read its write is bound to, and
 * only then is written: round trips longer than nodeTimeout together, each shorter. Such a member
 * is slow, not down, and must not be timed out; one that answers nothing still is, at nodeTimeout.
 */
import Redis from 'ioredis';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { TcpProxy } from '../chaos/proxy.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, fresh } from './util.js';

let servers: TestMasters;
let proxies: TcpProxy[];

beforeAll(async () => {
  servers = await startTestMasters(5);
  proxies = await Promise.all([0, 1, 2].map((i) => TcpProxy.start(servers.masters[i]!)));
});
afterEach(async () => {
  for (const proxy of proxies) proxy.latencyMs = 0;
  await servers.resumeAll();
});
afterAll(async () => {
  await Promise.all(proxies?.map((proxy) => proxy.close()) ?? []);
  await servers?.close();
});

/** New clients: masters 0-2 through the proxies, 3 and 4 directly. */
function freshClients(): Redis[] {
  const clients = [
    ...proxies.map((proxy) => new Redis({ host: '127.0.0.1', port: proxy.port })),
    ...servers.masters.slice(3).map((master) => new Redis({ host: master.host, port: master.port })),
  ];
  for (const client of clients) client.on('error', () => {});
  return clients;
}

/** freshClients(), connected. */
async function newClients(): Promise<Redis[]> {
  const clients = freshClients();
  await Promise.all(clients.map((client) => client.ping()));
  return clients;
}

/**
 * A new Redlock on `clients` takes a lock at once (tryAcquire), every member counted: the slow
 * ones too, none timed out. Closes the clients.
 */
async function winsAtOnce(clients: Redis[], nodeTimeout: number, resource: string): Promise<void> {
  try {
    const redlock = new Redlock(clients, { nodeTimeout, retryCount: 0 });
    const lock = await redlock.tryAcquire(resource, 10_000);
    expect(lock).not.toBeNull();
    expect(lock!.votes.filter((vote) => vote.vote === 'timeout')).toEqual([]);
    await lock!.release();
    await redlock.quit();
  } finally {
    for (const client of clients) client.disconnect();
  }
}

// A round trip through a proxy takes 2 × 55 ms: within nodeTimeout (200 ms), while the epoch
// read and the acquire behind it take 220 ms. Wide margins on both sides for a busy machine.
const LATENCY_MS = 55;
const NODE_TIMEOUT_MS = 200;

describe("a new Redlock's first round", () => {
  it('waits for members whose epoch read and acquire together outlast nodeTimeout, each answer in time', async () => {
    const clients = await newClients();
    for (const proxy of proxies) proxy.latencyMs = LATENCY_MS;
    // At once, as a one-off job does: its members' epochs are being read (since the Redlock was made).
    await winsAtOnce(clients, NODE_TIMEOUT_MS, fresh('first-round'));
  });

  it("waits for fresh clients still connecting: the connection's ready check, the epoch read and the acquire outlast nodeTimeout together", async () => {
    // A one-off job: clients made and the lock taken at once. Through the proxies (80 ms each way)
    // ioredis' handshake and ready check take about 2.2 round trips (~350 ms), the epoch read one
    // more (~510 ms), the acquire one more (~670 ms). Each answer comes within 430 ms of the one
    // before, and the whole within the attempt's budget (430 + max(430, 300) ms): only the ready
    // check counted as a sign of life lets the proxied members count (the epoch read's answer
    // alone comes after their first deadline).
    for (const proxy of proxies) proxy.latencyMs = 80;
    await winsAtOnce(freshClients(), 430, fresh('first-round-fresh'));
  });

  it('times out members that show no sign of life at nodeTimeout, not at the attempt budget', async () => {
    const clients = await newClients();
    try {
      await Promise.all(servers.masters.slice(0, 3).map((master) => master.pause()));
      const redlock = new Redlock(clients, { nodeTimeout: NODE_TIMEOUT_MS, retryCount: 0 });
      const error = await errorOf(redlock.acquire(fresh('first-round-paused'), 10_000));
      // One attempt may take nodeTimeout + max(nodeTimeout, retryDelay + jitter) = 500 ms; the
      // paused members are timed out at 200 ms: the attempt fails then, well short of the budget.
      expect(error.outcome).toBe('unavailable');
      expect(error.attempts).toHaveLength(1);
      expect(error.attempts[0]!.votes.slice(0, 3).map((vote) => vote.vote)).toEqual(['timeout', 'timeout', 'timeout']);
      expect(error.attempts[0]!.elapsedMs).toBeLessThan(NODE_TIMEOUT_MS + 150);
      await servers.resumeAll();
      await redlock.quit();
    } finally {
      for (const client of clients) client.disconnect();
    }
  });

  it("does not take 'ready' without a ready check for an answer: fronts that accept and close, with a client that asks nothing at connect, still time out at nodeTimeout", async () => {
    // A proxy or TLS terminator whose server is gone: it accepts each connection and closes it.
    // Without a ready check or a handshake, ioredis fires 'ready' on every reconnect without
    // hearing from any server, and re-sends our unanswered call each time.
    const fronts = await Promise.all(
      [0, 1, 2].map(
        () =>
          new Promise<Server>((resolve) => {
            const front = createServer((socket) => setTimeout(() => socket.destroy(), 5));
            front.listen(0, '127.0.0.1', () => resolve(front));
          }),
      ),
    );
    const options = { enableReadyCheck: false, disableClientInfo: true, protocol: 2, retryStrategy: () => 10, maxRetriesPerRequest: null } as const;
    const clients = [
      ...fronts.map((front) => new Redis({ host: '127.0.0.1', port: (front.address() as AddressInfo).port, ...options })),
      ...servers.masters.slice(3).map((master) => new Redis({ host: master.host, port: master.port, ...options })),
    ];
    for (const client of clients) client.on('error', () => {});
    try {
      await Promise.all(clients.slice(3).map((client) => client.ping()));
      let readies = 0;
      clients[0]!.on('ready', () => readies++);
      const redlock = new Redlock(clients, { nodeTimeout: NODE_TIMEOUT_MS, retryCount: 0 });
      const error = await errorOf(redlock.acquire(fresh('first-round-fronts'), 10_000));
      // The premise: 'ready' came, again and again, with no server behind it.
      expect(readies).toBeGreaterThan(1);
      expect(error.attempts[0]!.votes.slice(0, 3).map((vote) => vote.vote)).toEqual(['timeout', 'timeout', 'timeout']);
      expect(error.attempts[0]!.elapsedMs).toBeLessThan(NODE_TIMEOUT_MS + 150);
      await redlock.quit();
    } finally {
      for (const client of clients) client.disconnect();
      for (const front of fronts) front.close();
    }
  });
});

describe("reads on fresh clients still connecting (a one-off probe: election.leader(), a semaphore's holders())", () => {
  it('wait for members that show life, as an acquire does: every member is heard, none timed out', async () => {
    // As the fresh-clients acquire above: through the proxies the ready check answers at about
    // 350 ms and the read, written after it, at about 510 ms; each within 430 ms of the last.
    for (const proxy of proxies) proxy.latencyMs = 80;
    const votes: string[] = [];
    const onVote = (message: unknown) => {
      const { operation, vote } = message as { operation: string; vote: string };
      if (operation === 'read') votes.push(vote);
    };
    subscribe('quorumlock:vote', onVote);
    const reads: [string, (redlock: Redlock) => Promise<unknown>][] = [
      ['leader', (redlock) => redlock.election(fresh('first-read-election'), { ttl: 10_000 }).leader()],
      ['holders', (redlock) => redlock.semaphore(fresh('first-read-pool'), { permits: 2 }).holders()],
    ];
    try {
      for (const [name, read] of reads) {
        votes.length = 0;
        const clients = freshClients();
        const redlock = new Redlock(clients, { nodeTimeout: 430 });
        try {
          // Vacant, and free: what a quorum says. Before, the three proxied members were cut at
          // 430 ms from the start and too few answered (LeaderUnknownError, SemaphoreUnavailableError).
          expect(await read(redlock), name).toEqual(name === 'leader' ? null : []);
          expect(votes, name).toEqual(Array(5).fill('done'));
        } finally {
          await redlock.quit();
          for (const client of clients) client.disconnect();
        }
      }
    } finally {
      unsubscribe('quorumlock:vote', onVote);
    }
  });
});
