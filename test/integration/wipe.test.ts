/**
 * Test suites that wipe Redis between tests (issue 14): a wipe deletes the members' epoch
 * markers, and every member then sits out the restart quarantine. `quorumlock/testing`'s
 * resetMembers() wipes and re-declares the members brand new, so the next lock succeeds at once.
 * On real masters and on a real Redis Cluster (3 masters).
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { resetMembers } from '../../src/testing.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, fresh, clusterTrust } from './util.js';

/** The quarantine would outlast any test: a lock that succeeds did not wait it out. */
const options = { maxLockTtl: 60_000, retryCount: 0 } as const;

/** KEYS * then one DEL of them all: what node-redlock's own suite does between tests. */
async function keysThenDel(client: Redis): Promise<void> {
  const keys = await client.keys('*');
  if (keys.length > 0) await client.del(...keys);
}

describe('single masters', () => {
  let servers: TestMasters;
  beforeAll(async () => {
    servers = await startTestMasters(3);
  });
  afterAll(() => servers?.close());

  it('without the helper, a wipe (KEYS * + DEL, or FLUSHALL) leaves every member quarantined', async () => {
    const redlock = new Redlock(servers.clients, options);
    await (await redlock.acquire(fresh('before-wipe'), 1_000)).release();
    await Promise.all(servers.clients.map(keysThenDel));
    const error = await errorOf(redlock.acquire(fresh('after-del'), 1_000));
    expect(error.outcome).toBe('quarantined');
    // The round is decided once a quorum is out of reach: a late answer may still be pending.
    const votes = error.attempts[0]!.votes.map((vote) => vote.vote);
    expect(votes.filter((vote) => vote === 'quarantined').length).toBeGreaterThanOrEqual(2);
    expect(votes.every((vote) => vote === 'quarantined' || vote === 'pending')).toBe(true);

    await resetMembers(servers.clients, { wipe: false }); // back to trusted, for the next case
    await Promise.all(servers.clients.map((client) => client.flushall()));
    expect((await errorOf(redlock.acquire(fresh('after-flushall'), 1_000))).outcome).toBe('quarantined');
  });

  it('resetMembers() wipes (FLUSHDB) and declares the members brand new: the next lock succeeds at once, also for a Redlock made before', async () => {
    const before = new Redlock(servers.clients, options);
    await Promise.all(servers.clients.map((client) => client.set('user:data', 'x')));
    const reports = await resetMembers(servers.clients);
    expect(reports.map(({ wiped, epochs }) => ({ wiped, epochs }))).toEqual(Array(3).fill({ wiped: 1, epochs: 1 }));
    expect(await servers.valuesOf('user:data')).toEqual([null, null, null]);
    const lock = await before.acquire(fresh('after-reset'), 1_000);
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(2);
    expect(lock.votes.some((vote) => vote.vote === 'quarantined')).toBe(false);
    await lock.release();
    // Fencing starts afresh too: absent counters read as 0 and trusted in a brand-new epoch.
    const fenced = await new Redlock(servers.clients, options).acquire(fresh('fenced'), 1_000, { fencing: true });
    expect(fenced.fence).toBe(1);
    await fenced.release();
  });

  it('with { wipe: false } after a wipe of your own (KEYS * + DEL), the same', async () => {
    const redlock = new Redlock(servers.clients, options);
    await Promise.all(servers.clients.map(keysThenDel));
    await resetMembers(servers.clients, { wipe: false });
    await (await redlock.acquire(fresh('own-wipe'), 1_000)).release();
  });

  it('refuses with NODE_ENV=production, and outside a test runner unless { outsideTests: true }', async () => {
    const saved = { env: { ...process.env }, argv: process.argv };
    try {
      process.env.NODE_ENV = 'production';
      await expect(resetMembers(servers.clients, { outsideTests: true })).rejects.toThrow(/NODE_ENV=production/);
      await expect(resetMembers(servers.clients, { outsideTests: true })).rejects.toMatchObject({ code: 'QUORUMLOCK_ERR_TESTING_ONLY' });
      for (const name of ['NODE_ENV', 'VITEST', 'JEST_WORKER_ID', 'NODE_TEST_CONTEXT', 'MOCHA_WORKER_ID']) delete process.env[name];
      process.argv = [process.argv[0]!, '/srv/app/server.js'];
      await expect(resetMembers(servers.clients)).rejects.toThrow(/only under a test runner/);
      await expect(resetMembers(servers.clients)).rejects.toMatchObject({ code: 'QUORUMLOCK_ERR_TESTING_ONLY' });
      await servers.clients[0]!.set('user:kept', 'x');
      expect(await servers.clients[0]!.get('user:kept')).toBe('x'); // nothing was wiped
      await resetMembers(servers.clients, { outsideTests: true });
      expect(await servers.clients[0]!.get('user:kept')).toBe(null);
    } finally {
      process.env = saved.env;
      process.argv = saved.argv;
    }
  });
});

describe('a Redis Cluster member', () => {
  let cluster: TestCluster;
  const opened: (Cluster | Redis)[] = [];
  const connect = () => {
    const client = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
    client.on('error', () => {});
    opened.push(client);
    return client;
  };

  beforeAll(async () => {
    cluster = await startCluster();
  }, 60_000);
  afterAll(async () => {
    for (const client of opened) client.disconnect();
    await cluster?.stop();
  });

  it('KEYS * + one DEL on a node fails with CROSSSLOT once trusted (epoch keys in every slot); FLUSHDB per node + resetMembers locks at once', async () => {
    const member = connect();
    const redlock = new Redlock([member], options);
    const timings: Record<string, number> = {};
    let started = performance.now();
    await redlock.trustMembers(clusterTrust);
    timings.trustMembers = performance.now() - started;
    await (await redlock.acquire(fresh('{app}:before'), 1_000)).release();

    // The pattern that cannot work on a cluster node: its keys span many slots.
    const node = new Redis({ host: cluster.nodes[0]!.host, port: cluster.nodes[0]!.port });
    opened.push(node);
    const keys = await node.keys('*');
    expect(keys.length).toBeGreaterThan(5_000); // ~16384 / 3 epoch markers
    await expect(node.del(...keys)).rejects.toThrow(/CROSSSLOT/);

    // The documented wipe: per node. Without the helper: quarantined.
    await Promise.all(member.nodes('master').map((master) => master.flushdb()));
    expect((await errorOf(redlock.acquire(fresh('{app}:wiped'), 1_000))).outcome).toBe('quarantined');

    // resetMembers: wipe per node and declare every slot's epoch brand new.
    started = performance.now();
    const [report] = await resetMembers(member);
    timings.resetMembers = performance.now() - started;
    expect(report).toMatchObject({ wiped: 3, epochs: 16_384 });
    const lock = await redlock.acquire(fresh('{app}:after'), 1_000);
    expect(lock.votes[0]!.vote).toBe('locked');
    await lock.release();
    // Every slot, not only the one just used: a resource on each node locks at once.
    for (const resource of ['a', 'b', 'c', 'd', 'e', 'f']) await (await redlock.acquire(fresh(resource), 1_000)).release();

    // Between tests: only the slots a test wrote to (here one fenced lock) are declared again;
    // untouched brand-new markers are kept. Fencing starts from 0 again there.
    const fenced = await redlock.acquire(fresh('{app}:fenced'), 1_000, { fencing: true });
    await fenced.release();
    await member.set('{app}:user-data', 'x');
    started = performance.now();
    const [again] = await resetMembers(member);
    timings.resetBetweenTests = performance.now() - started;
    expect(again).toMatchObject({ wiped: 3, epochs: 1 });
    expect(await member.get('{app}:user-data')).toBe(null);
    const refenced = await redlock.acquire(fresh('{app}:fenced'), 1_000, { fencing: true });
    expect(refenced.fence).toBe(1);
    await refenced.release();
    console.log(
      `cluster of 3 masters: trustMembers ${timings.trustMembers!.toFixed(0)} ms, resetMembers after FLUSHDB ${timings.resetMembers!.toFixed(0)} ms, between tests ${timings.resetBetweenTests!.toFixed(0)} ms`,
    );
  });

  it('under a keyPrefix, the same', async () => {
    const member = new Cluster(cluster.startupNodes, { keyPrefix: 'suite:', redisOptions: { maxRetriesPerRequest: 1 } });
    member.on('error', () => {});
    opened.push(member);
    const redlock = new Redlock([member], options);
    await member.set('data', 'x');
    await resetMembers(member);
    expect(await member.get('data')).toBe(null);
    for (const resource of ['a', 'b', 'c']) await (await redlock.acquire(fresh(resource), 1_000, { fencing: true })).release();
    const [again] = await resetMembers(member);
    expect(again!.epochs).toBeGreaterThanOrEqual(1);
    expect(again!.epochs).toBeLessThanOrEqual(3);
    await (await redlock.acquire(fresh('after'), 1_000)).release();
  });
});
