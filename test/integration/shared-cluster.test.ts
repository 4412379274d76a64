/**
 * Shared locks with Redis Cluster members (three local clusters of 3 masters, quorum two): the
 * readers key lives in its lock key's slot (companionKey), so every script runs on one node, also
 * under a keyPrefix, and readers and writers exclude each other as on plain masters.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { fresh, clusterTrust } from './util.js';

let clusters: TestCluster[];
const opened: Cluster[] = [];

function connect(cluster: TestCluster, keyPrefix?: string): Cluster {
  const client = new Cluster(cluster.startupNodes, { keyPrefix, clusterRetryStrategy: () => 100, redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  opened.push(client);
  return client;
}

beforeAll(async () => {
  clusters = await Promise.all([startCluster(), startCluster(), startCluster()]);
  const results = await new Redlock(clusters.map((cluster) => connect(cluster))).trustMembers(clusterTrust);
  expect(results.every((result) => result.trusted)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await Promise.all((clusters ?? []).map((cluster) => cluster.stop()));
});

describe('shared locks on Cluster members', () => {
  it.each([{ keyPrefix: undefined }, { keyPrefix: 'app:' }])(
    'readers share, a writer waits for them, tokens ordered (keyPrefix $keyPrefix)',
    async ({ keyPrefix }) => {
      // A generous nodeTimeout: a new Cluster client's first call waits for its slot map.
      const redlock = () =>
        new Redlock(
          clusters.map((cluster) => connect(cluster, keyPrefix)),
          { retryCount: 0, nodeTimeout: 1_000 },
        );
      const [a, b, writer] = [redlock(), redlock(), redlock()];
      // Under a keyPrefix the epoch hashes are the prefixed ones: brand new, declared so.
      if (keyPrefix) expect((await a.trustMembers(clusterTrust)).every((result) => result.trusted)).toBe(true);
      // Two resources of one slot (a hash tag), as a multi-resource lock on a Cluster needs.
      const tag = fresh('cluster-shared');
      const resources = [`{${tag}}:x`, `{${tag}}:y`];
      const r1 = await a.acquire(resources, 5_000, { shared: true, fencing: true });
      const r2 = await b.acquire(resources, 5_000, { shared: true, fencing: true });
      expect([r1.shared, r2.shared]).toEqual([true, true]);
      expect(r2.fence).toBeGreaterThan(r1.fence!);
      expect(await writer.tryAcquire(resources, 5_000)).toBeNull();
      await r1.extend(5_000);
      await Promise.all([r1.release(), r2.release()]);
      const w = await writer.acquire(resources, 5_000, { fencing: true });
      expect(w.fence).toBeGreaterThan(r2.fence!);
      expect(await a.tryAcquire(resources, 5_000, { shared: true })).toBeNull();
      await w.release();
      const again = await a.tryAcquire(resources, 5_000, { shared: true });
      expect(again?.shared).toBe(true);
      await again!.release();
    },
  );
});
