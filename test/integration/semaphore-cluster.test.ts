/**
 * Semaphores whose members are Redis Clusters (three local clusters of 3 masters, quorum two): the
 * permit keys of one semaphore share the name's hash tag, so the read that lists them is one
 * pipeline to one node, and each permit's lock runs there like any lock; with a keyPrefix too.
 */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { permitResource, slotOf } from '../../src/store/keys.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { fresh, clusterTrust } from './util.js';

let clusters: TestCluster[];
const opened: Cluster[] = [];

function connect(cluster: TestCluster, keyPrefix?: string): Cluster {
  const client = new Cluster(cluster.startupNodes, { ...(keyPrefix ? { keyPrefix } : {}), clusterRetryStrategy: () => 100 });
  client.on('error', () => {});
  opened.push(client);
  return client;
}

beforeAll(async () => {
  clusters = await Promise.all([startCluster(), startCluster(), startCluster()]);
  const results = await new Redlock(
    clusters.map((cluster) => connect(cluster)),
    { maxLockTtl: 60_000 },
  ).trustMembers(clusterTrust);
  expect(results.every((result) => result.trusted)).toBe(true);
}, 60_000);

afterAll(async () => {
  for (const client of opened) client.disconnect();
  await Promise.all((clusters ?? []).map((cluster) => cluster.stop()));
});

describe('semaphore on Redis Cluster members', () => {
  it('all permit keys of a semaphore are in one slot', () => {
    const slots = new Set(Array.from({ length: 16 }, (_, index) => slotOf(permitResource('gpu-slots', index))));
    expect(slots.size).toBe(1);
  });

  for (const keyPrefix of [undefined, 'app:', '{app}:']) {
    it(`acquires every permit, reports holders and refuses one more${keyPrefix ? ` (keyPrefix ${keyPrefix})` : ''}`, async () => {
      const redlock = new Redlock(clusters.map((cluster) => connect(cluster, keyPrefix)));
      // A keyPrefix names other epoch keys (the prefixed slots'): brand new, declared so.
      if (keyPrefix) expect((await redlock.trustMembers(clusterTrust)).every((result) => result.trusted)).toBe(true);
      const pool = redlock.semaphore(fresh('cluster-pool'), { permits: 3 });
      const permits = await Promise.all([pool.acquire(10_000), pool.acquire(10_000), pool.acquire(10_000)]);
      expect(permits.map((permit) => permit.permit).sort()).toEqual([0, 1, 2]);
      expect((await pool.holders()).map((holder) => holder.permit)).toEqual([0, 1, 2]);
      const refused = await pool.acquire(10_000, { retryCount: 0 }).catch((error: unknown) => error);
      expect(refused).toMatchObject({ code: 'QUORUMLOCK_ERR_ACQUIRE', outcome: 'taken' });
      await Promise.all(permits.map((permit) => permit.release()));
      expect(await pool.holders()).toEqual([]);
      await pool.using(10_000, async (signal, permit) => {
        expect(signal.aborted).toBe(false);
        expect(permit.permit).toBeGreaterThanOrEqual(0);
      });
      await redlock.quit();
    });
  }
});
