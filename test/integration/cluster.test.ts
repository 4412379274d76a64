/**
 * Redis Cluster members, on real local clusters: the design's "three clusters, quorum two". Each
 * member is an ioredis Cluster of 3 masters; each of its calls runs on the node owning the slot.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { clusterEpochKey, companionKey, slotOf } from '../../src/store/keys.js';
import { commandNames } from '../../src/clients/ioredis.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { errorOf, eventually, expectFencesRise, fresh, refusedAsEvicting, sleep, clusterTrust, whileEvicting } from './util.js';

let clusters: TestCluster[];
let members: Cluster[];
const opened: (Cluster | Redis)[] = [];

function connect(cluster: TestCluster, options: { keyPrefix?: string; lazyConnect?: boolean; enableAutoPipelining?: boolean } = {}): Cluster {
  const client = new Cluster(cluster.startupNodes, { ...options, clusterRetryStrategy: () => 100, redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {}); // killed nodes refuse reconnects: expected here
  opened.push(client);
  return client;
}

/** A plain connection to the node of `cluster` that owns `key`'s slot. */
async function nodeOf(cluster: Cluster, key: string): Promise<Redis> {
  const slot = slotOf(key);
  const shards = (await cluster.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
  const [, , [host, port]] = shards.find(([from, to]) => from <= slot && slot <= to)!;
  const node = new Redis({ host, port });
  opened.push(node);
  return node;
}

beforeAll(async () => {
  clusters = await Promise.all([startCluster(), startCluster(), startCluster()]);
  members = clusters.map((cluster) => connect(cluster));
  const results = await new Redlock(members, { maxLockTtl: 60_000 }).trustMembers(clusterTrust);
  expect(results.every((result) => result.trusted)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await Promise.all((clusters ?? []).map((cluster) => cluster.stop()));
});

describe('three clusters as members, quorum two', () => {
  it('a cluster with a node that may evict lock keys does not count (INFO of every master node)', async () => {
    const node = new Redis({ host: clusters[0]!.nodes[0]!.host, port: clusters[0]!.nodes[0]!.port });
    opened.push(node);
    await whileEvicting(node, members, async () => {
      // A new cluster client's first call waits for its slots and every master's INFO: 500 ms, not
      // 50, for that under a busy suite (the claim is the vote's reason, not its timing).
      const redlock = new Redlock([connect(clusters[0]!), members[1]!], { retryCount: 0, nodeTimeout: 500 });
      await refusedAsEvicting(redlock, fresh('evicting-node'));
      expect(redlock.members[0]!.notCounting).toMatch(/allkeys-lru/);
    });
  });

  it('trustMembers() writes an epoch for every one of the 16384 slots of each cluster', async () => {
    for (const cluster of clusters) {
      let epochs = 0;
      for (const node of cluster.nodes) {
        const redis = new Redis({ host: node.host, port: node.port });
        opened.push(redis);
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', 'quorumlock:epoch:*', 'COUNT', 1000);
          epochs += keys.length;
          cursor = next;
        } while (cursor !== '0');
      }
      expect(epochs).toBe(16384);
    }
  });

  it('locks, extends and releases; the key lives on the node owning its slot, beside its epoch', async () => {
    const redlock = new Redlock(members, { retryCount: 0 });
    const resource = fresh('orders');
    const lock = await redlock.acquire(resource, 2_000);
    expect(lock.votes.map((vote) => vote.vote).filter((vote) => vote === 'locked').length).toBeGreaterThanOrEqual(2);
    for (const cluster of members) {
      const node = await nodeOf(cluster, resource);
      expect(await node.get(resource)).toBe(lock.value);
      expect(await node.hget(clusterEpochKey(resource), 'since')).not.toBeNull();
    }
    await lock.extend(5_000);
    const pttl = await Promise.all(members.map((cluster) => cluster.pttl(resource)));
    for (const ms of pttl) expect(ms).toBeGreaterThan(2_000);
    await lock.release();
    expect(await Promise.all(members.map((cluster) => cluster.exists(resource)))).toEqual([0, 0, 0]);
  });

  it('computes slots as the server does (CLUSTER KEYSLOT), and locks awkward names without CROSSSLOT', async () => {
    const names = ['a{b', 'a}b', '{}', 'x{}{y}', '{a}{b}', 'a{b}c', 'ключ', '🔒', '{{a}}'];
    const node = await nodeOf(members[0]!, 'anything');
    for (const name of names) {
      expect(slotOf(name), name).toBe(await node.cluster('KEYSLOT', name));
      expect(await node.cluster('KEYSLOT', companionKey(name, 'quorumlock:line')), name).toBe(slotOf(name));
    }
    const redlock = new Redlock(members, { retryCount: 0 });
    for (const name of names) {
      const lock = await redlock.acquire(name, 2_000);
      expect(
        lock.votes.every((vote) => vote.vote === 'locked' || vote.vote === 'pending'),
        name,
      ).toBe(true);
      await lock.release();
    }
  });

  it('multi-resource locks: a shared hash tag locks all or nothing; different slots are refused before any I/O', async () => {
    const redlock = new Redlock(members, { retryCount: 0 });
    const tag = fresh('batch');
    const lock = await redlock.acquire([`{${tag}}:a`, `{${tag}}:b`, `{${tag}}:c`], 2_000);
    expect(await members[1]!.mget(`{${tag}}:a`, `{${tag}}:b`, `{${tag}}:c`)).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();

    // Clients that never connected: the refusal must come before anything is sent.
    const idle = clusters.map((cluster) => connect(cluster, { lazyConnect: true }));
    const refusing = new Redlock(idle, { retryCount: 0 });
    const error = await refusing.acquire(['foo', 'bar'], 2_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RangeError);
    expect(error).toMatchObject({ parameter: 'resources', message: expect.stringMatching(/"foo" is in slot 12182, "bar" in slot 5061.*shared hash tag/) });
    await expect(refusing.tryAcquire(['foo', 'bar'], 2_000)).rejects.toBeInstanceOf(RangeError);
    await expect(refusing.using(['foo', 'bar'], 2_000, async () => 1)).rejects.toBeInstanceOf(RangeError);
    expect(idle.map((client) => client.status)).toEqual(['wait', 'wait', 'wait']);
  });

  it('works under a keyPrefix: the prefixed keys and their lines share a slot', async () => {
    const prefixed = clusters.map((cluster) => connect(cluster, { keyPrefix: 'app:' }));
    const redlock = new Redlock(prefixed, { retryCount: 0 });
    await redlock.trustMembers(clusterTrust); // the prefixed epochs are other keys
    const resource = fresh('prefixed');
    const lock = await redlock.acquire(resource, 2_000);
    // Decided at a quorum of 2: the third member may run the call a moment later (seen once in CI).
    await eventually(async () => expect(await members[2]!.get(`app:${resource}`)).toBe(lock.value));
    await lock.release();
    // release() resolves at a quorum: the third member runs it when it gets to it.
    await eventually(async () => expect(await members[2]!.exists(`app:${resource}`)).toBe(0));
  });

  it("works on clients with ioredis' enableAutoPipelining, which would batch script calls by their key count", async () => {
    const pipelining = clusters.map((cluster) => connect(cluster, { enableAutoPipelining: true }));
    // Connected first, and a roomy nodeTimeout: what is tested is the batching, not how fast new
    // cluster clients connect on a loaded CI machine (one attempt each; it failed once in CI).
    await Promise.all(pipelining.map((client) => client.ping()));
    const redlock = new Redlock(pipelining, { retryCount: 0, nodeTimeout: 500 });
    // Many resources at once, spread over every node: ioredis batches what is sent in one tick.
    const resources = Array.from({ length: 60 }, () => fresh('pipelined'));
    expect(new Set(resources.map((name) => slotOf(name) >> 12)).size).toBeGreaterThan(2);
    const locks = await Promise.all(resources.map((name) => redlock.acquire(name, 2_000)));
    for (const lock of locks) expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(2);
    await Promise.all(locks.map((lock) => lock.release()));
    // The user's own commands still go through ioredis' auto-pipelining: only ours are left out.
    expect(pipelining[0]!.options.autoPipeliningIgnoredCommands).toEqual(
      expect.arrayContaining([commandNames.quorumlockAcquire, commandNames.quorumlockRelease]),
    );
    expect(await Promise.all(resources.map((name) => pipelining[0]!.exists(name)))).toEqual(resources.map(() => 0));
  });

  it('fencing tokens increase across clients', async () => {
    // Connected first: what is tested is the tokens, not how fast new cluster clients connect
    // (their first call also reads the slot's epoch).
    await expectFencesRise(fresh('fenced'), async () => {
      const clients = clusters.map((cluster) => connect(cluster));
      await Promise.all(clients.map((client) => client.ping()));
      return new Redlock(clients, { retryCount: 0, nodeTimeout: 500 });
    });
  });

  it('wakes a waiter by the release (cluster pub/sub), not by its retry timer', async () => {
    const resource = fresh('handoff');
    const holder = await new Redlock(members).acquire(resource, 10_000);
    const waiterRedlock = new Redlock(
      clusters.map((cluster) => connect(cluster)),
      { retryDelay: 5_000, retryJitter: 0 },
    );
    const started = performance.now();
    const waiting = waiterRedlock.acquire(resource, 2_000, { waitTimeout: 20_000 });
    await sleep(300); // the waiter is refused once and joins the line
    await holder.release();
    const lock = await waiting;
    // By timer it could not have come back before retryDelay (5 s).
    expect(performance.now() - started).toBeLessThan(4_000);
    await lock.release();
    await waiterRedlock.quit();
  });
});

describe('faults inside one cluster', () => {
  it("a dead node costs its cluster the vote for that node's slots only; a restarted node is quarantined, its neighbours are not", async () => {
    const redlock = new Redlock(members, { retryCount: 0, nodeTimeout: 200, maxLockTtl: 60_000 });
    // Two resources on different nodes of cluster 0.
    const shards = (await members[0]!.cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const [victimFrom, victimTo, [, victimPort]] = shards[0]!;
    let onVictim = '';
    let elsewhere = '';
    for (let i = 0; !onVictim || !elsewhere; i++) {
      const name = `fault:${i}`;
      const slot = slotOf(name);
      if (slot >= victimFrom && slot <= victimTo) onVictim ||= name;
      else elsewhere ||= name;
    }
    const victim = clusters[0]!.nodes.find((node) => node.port === victimPort)!;

    await victim.kill();
    const withoutNode = await redlock.acquire(onVictim, 2_000);
    expect(withoutNode.votes[0]!.vote).not.toBe('locked');
    expect(withoutNode.votes.slice(1).map((vote) => vote.vote)).toEqual(['locked', 'locked']);
    await withoutNode.release();

    await victim.restart(); // empty, rejoins with its slots
    await clusters[0]!.waitForOk();
    // Cluster 0 alone, so its vote is always heard (a round settles without waiting for it).
    const alone = new Redlock([members[0]!], { retryCount: 0, nodeTimeout: 200, maxLockTtl: 60_000 });
    let refused = await errorOf(alone.acquire(onVictim, 2_000));
    // ioredis may still hold the dead connection for a moment: retry until the node answers.
    for (let i = 0; i < 50 && refused.outcome !== 'quarantined'; i++) {
      await sleep(100);
      refused = await errorOf(alone.acquire(onVictim, 2_000));
    }
    expect(refused.outcome).toBe('quarantined');
    expect(refused.attempts[0]!.votes[0]!.quarantinedForMs).toBeGreaterThan(50_000);
    expect(await members[0]!.exists(onVictim)).toBe(0); // rolled back

    const neighbour = await alone.acquire(elsewhere, 2_000);
    expect(neighbour.votes.map((vote) => vote.vote)).toEqual(['locked']);
    await neighbour.release();
  }, 60_000);
});
