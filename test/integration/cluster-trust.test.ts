/**
 * Issue 21, found by review: a trust on a Cluster member whose node restarts empty while the call
 * is under way. A Cluster client does not become 'ready' again when one node reconnects, and a
 * node restarted empty has no epoch hash (a fresh epoch): ioredis Cluster re-sends the unanswered
 * epoch read to the node once it is back. On 5a64be4 the new process's epoch was trusted and a
 * second holder got in. Now the call reads the run ids of the Cluster's master nodes when it
 * begins, and refuses an epoch of any other process (src/members/redis-member.ts, #onEveryEpoch).
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock, type Lock } from '../../src/index.js';
import { clusterEpochKey, slotOf } from '../../src/store/keys.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { fresh, sleep } from './util.js';

let cluster: TestCluster;
let servers: TestMasters;
const opened: (Cluster | Redis)[] = [];
function connectCluster(): Cluster {
  const client = new Cluster(cluster.startupNodes, { clusterRetryStrategy: () => 100, retryDelayOnClusterDown: 500 });
  client.on('error', () => {});
  opened.push(client);
  return client;
}

beforeAll(async () => {
  [cluster, servers] = await Promise.all([startCluster(), startTestMasters(2)]);
  const results = await new Redlock([connectCluster(), ...servers.clients], { maxLockTtl: 60_000 }).trustMembers({ timeoutMs: 30_000 });
  expect(results.every((result) => result.trusted)).toBe(true);
}, 90_000);
afterAll(async () => {
  for (const client of opened) client.disconnect();
  await Promise.all([cluster?.stop(), servers?.close()]);
});

it('a Cluster node restarted empty during trustMembers() is not trusted, and no second holder gets in', { timeout: 90_000 }, async () => {
  const resource = fresh('cluster-trust');
  const holder = await new Redlock([connectCluster(), ...servers.connect()], { retryCount: 0 }).acquire(resource, 30_000);
  await servers.clients[0]!.del(resource); // the lock rests on the cluster and m1
  const operatorClients = [connectCluster(), ...servers.connect()];
  await Promise.all(operatorClients.map((client) => client.ping()));
  const operator = new Redlock(operatorClients, { maxLockTtl: 60_000 });
  const node = await cluster.masterOfSlot(slotOf(resource));
  await node.pause();
  const trusting = operator.trustMembers({ timeoutMs: 30_000 });
  await sleep(300); // the reads are written; the paused node's wait in its socket
  await node.restart(); // killed while paused, back empty with its slots (nodes.conf kept)
  const report = await trusting;
  await cluster.waitForOk();
  const direct = new Redis({ host: node.host, port: node.port });
  direct.on('error', () => {});
  opened.push(direct);
  expect(await direct.hget(clusterEpochKey(resource), 'genesis')).toBeNull();
  const secondClients = [connectCluster(), ...servers.connect()];
  await Promise.all(secondClients.map((client) => client.ping()));
  const second = await new Redlock(secondClients, { retryCount: 0 }).acquire(resource, 5_000).catch((error: unknown) => error);
  const overlap = !(second instanceof Error);
  if (overlap) await (second as Lock).release();
  await holder.release().catch(() => undefined);
  expect(report[0]!.trusted).toBe(false);
  expect(overlap).toBe(false);
});
