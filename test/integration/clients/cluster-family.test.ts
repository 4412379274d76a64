/**
 * Cluster members of every library that has a Cluster client, in one Redlock on three real Redis
 * Clusters: an iovalkey Cluster, a Valkey GLIDE GlideClusterClient and a node-redis 6 Cluster.
 * Locks whose keys land on every node of each cluster, fencing, a waiter woken by the release, a
 * shared lock; and one master that may evict makes its whole member not count.
 */
import { GlideClusterClient } from '@valkey/valkey-glide';
import { Cluster as ValkeyCluster } from 'iovalkey';
import { Redis } from 'ioredis';
import { createCluster } from 'redis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock, type MemberClient } from '../../../src/index.js';
import { startCluster, type TestCluster } from '../../harness/topologies.js';
import { connected, fresh, refusedAsEvicting, clusterTrust, whileEvicting } from '../util.js';

let clusters: TestCluster[];
let members: MemberClient[];
const closes: (() => unknown)[] = [];

beforeAll(async () => {
  clusters = await Promise.all([startCluster(), startCluster(), startCluster()]);
  const [a, b, c] = clusters as [TestCluster, TestCluster, TestCluster];
  const valkey = new ValkeyCluster([{ host: a.nodes[0]!.host, port: a.nodes[0]!.port }]);
  valkey.on('error', () => undefined);
  const glide = await GlideClusterClient.createClient({ addresses: [{ host: b.nodes[0]!.host, port: b.nodes[0]!.port }], requestTimeout: 2000 });
  const nodeRedis = createCluster({ rootNodes: [{ url: `redis://${c.nodes[0]!.host}:${c.nodes[0]!.port}` }] });
  nodeRedis.on('error', () => undefined);
  await nodeRedis.connect();
  closes.push(
    () => valkey.disconnect(),
    () => glide.close(),
    () => nodeRedis.destroy(),
  );
  members = [valkey, glide, nodeRedis];
  await new Redlock(members).trustMembers(clusterTrust);
}, 60_000);

afterAll(async () => {
  for (const close of closes.splice(0)) await Promise.resolve(close()).catch(() => undefined);
  await Promise.all((clusters ?? []).map((cluster) => cluster.stop()));
});

it('locks keys on every node of each Cluster, fences, wakes a waiter by the release, and shares', async () => {
  const redlock = await connected(new Redlock(members, { retryDelay: 60_000, retryJitter: 0 }));
  try {
    // Twelve resources: their slots spread over the three nodes of each cluster.
    const resources = Array.from({ length: 12 }, () => fresh('cluster-family'));
    const held = await Promise.all(resources.map((resource) => redlock.acquire(resource, 10_000, { fencing: true })));
    for (const lock of held) expect(lock.fence).toBeGreaterThan(0);
    const waiter = redlock.acquire(resources[0]!, 10_000, { fencing: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await Promise.all(held.map((lock) => lock.release()));
    const next = await waiter; // within the test's timeout: woken, not its 60 s retry
    expect(next.fence! > held[0]!.fence!).toBe(true);
    await next.release();
    const [r1, r2] = await Promise.all([redlock.acquire(resources[1]!, 10_000, { shared: true }), redlock.acquire(resources[1]!, 10_000, { shared: true })]);
    await expect(redlock.tryAcquire(resources[1]!, 10_000)).resolves.toBeNull();
    await Promise.all([r1.release(), r2.release()]);
  } finally {
    await redlock.quit();
  }
}, 30_000);

it('one master of the GLIDE Cluster that may evict makes that member not count', async () => {
  const node = clusters[1]!.nodes[2]!;
  const admin = new Redis({ host: node.host, port: node.port });
  try {
    await whileEvicting(admin, members, async () => {
      // A new client (its member reads every master's INFO when it connects; a connected one would
      // see the change at its next 10 s reading, while each grant's eviction count guards meanwhile).
      const glide = await GlideClusterClient.createClient({ addresses: [{ host: node.host, port: node.port }], requestTimeout: 2000 });
      closes.push(() => glide.close());
      const redlock = await connected(new Redlock([glide, members[0]!], { retryCount: 0 }));
      try {
        await refusedAsEvicting(redlock, fresh('evicting-node'));
      } finally {
        await redlock.quit();
      }
    });
  } finally {
    admin.disconnect();
  }
}, 60_000);
