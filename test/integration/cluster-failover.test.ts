/**
 * A Redis Cluster member with replicas, across failovers. A promoted replica carries the old
 * master's epochs (replicated, with the old master's run id), but not necessarily its last writes
 * (replication is asynchronous): its slots must be quarantined for maxLockTtl, and only its slots.
 */
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { clusterEpochKey, slotOf } from '../../src/store/keys.js';
import type { Master } from '../harness/index.js';
import { startCluster, type TestCluster } from '../harness/topologies.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, fresh, sleep, clusterTrust } from './util.js';

let cluster: TestCluster;
let plain: TestMasters;
/** Member 0: the cluster (3 masters, 3 replicas), through one ioredis Cluster client. */
let member: Cluster;
const opened: Redis[] = [];

/** A plain connection to one node; READONLY, so a replica answers reads of its own slots. */
async function direct(node: { host: string; port: number }): Promise<Redis> {
  const redis = new Redis({ host: node.host, port: node.port, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  opened.push(redis);
  await redis.call('READONLY');
  return redis;
}

async function runIdOf(node: Redis): Promise<string> {
  return /run_id:(\w+)/.exec(await node.info('server'))![1]!;
}

/** Retries `check` every 100 ms until it returns true, for at most `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** A new resource name in a slot that `master` serves now. */
async function resourceOn(master: Master): Promise<string> {
  for (;;) {
    const name = fresh('failover');
    if ((await cluster.masterOfSlot(slotOf(name))) === master) return name;
  }
}

/**
 * Waits until `replica` is the master of `resource`'s slot: it says so (ROLE), the cluster agrees
 * (waitForOk), and the ioredis client routes there (it follows MOVED, or refreshes its slot map
 * after a dead node's errors).
 */
async function waitForPromotion(replica: Master, resource: string): Promise<void> {
  const node = await direct(replica);
  await until(`${replica.port} promoted`, async () => ((await node.call('ROLE')) as unknown[])[0] === 'master');
  await cluster.waitForOk();
  expect((await cluster.masterOfSlot(slotOf(resource))).port).toBe(replica.port);
  // A write through the client that lands on the promoted node.
  const probe = `{${resource}}:probe`;
  await until('the client routes to the promoted node', async () => {
    await member.set(probe, 'routed', 'PX', 10_000);
    return (await node.get(probe)) === 'routed';
  });
  await member.del(probe);
}

/**
 * Acquire on the cluster member alone, so its vote is always heard: refused as 'quarantined',
 * retried while the client still reaches the old node ('unavailable').
 */
async function expectQuarantined(resource: string): Promise<void> {
  const alone = new Redlock([member], { retryCount: 0, nodeTimeout: 500 });
  let refused = await errorOf(alone.acquire(resource, 2_000));
  for (let i = 0; i < 50 && refused.outcome === 'unavailable'; i++) {
    await sleep(100);
    refused = await errorOf(alone.acquire(resource, 2_000));
  }
  expect(refused.outcome, refused.message).toBe('quarantined');
  const [vote] = refused.attempts[0]!.votes;
  expect(vote!.vote).toBe('quarantined');
  expect(vote!.quarantinedForMs).toBeGreaterThan(50_000); // maxLockTtl, 60 000 by default
  expect(vote!.quarantinedForMs).toBeLessThanOrEqual(60_000);
  expect(await member.exists(resource)).toBe(0); // rolled back
}

/** The cluster member alone locks `resource` and its vote counts. */
async function expectLocked(resource: string): Promise<void> {
  const lock = await new Redlock([member], { retryCount: 0, nodeTimeout: 500 }).acquire(resource, 2_000);
  expect(lock.votes.map((vote) => vote.vote)).toEqual(['locked']);
  expect(await member.get(resource)).toBe(lock.value);
  await lock.release();
  expect(await member.exists(resource)).toBe(0);
}

/**
 * The replica holds the master's epoch for `resource`'s slot: the same hash, with the master's
 * run id, not its own. That is what the promoted replica must not take for its own.
 */
async function expectReplicatedEpoch(master: Master, replica: Master, resource: string): Promise<string> {
  const [onMaster, onReplica] = await Promise.all([direct(master), direct(replica)]);
  expect(await onMaster.call('WAIT', '1', '5000')).toBe(1); // the replica has all the master wrote
  const masterRunId = await runIdOf(onMaster);
  expect(await onMaster.hget(clusterEpochKey(resource), 'run_id')).toBe(masterRunId);
  expect(await onReplica.hgetall(clusterEpochKey(resource))).toEqual(await onMaster.hgetall(clusterEpochKey(resource)));
  expect(await runIdOf(onReplica)).not.toBe(masterRunId);
  return masterRunId;
}

/** After the quarantined acquire: the promoted node wrote a new epoch for the slot, under its own run id. */
async function expectNewEpoch(promoted: Master, resource: string, oldRunId: string): Promise<void> {
  const node = await direct(promoted);
  const runId = await runIdOf(node);
  expect(runId).not.toBe(oldRunId);
  expect(await node.hget(clusterEpochKey(resource), 'run_id')).toBe(runId);
}

/** With two plain masters beside it, the quorum (2 of 3) still locks: the cluster's vote just does not count. */
async function expectQuorumWithoutCluster(resource: string): Promise<void> {
  const redlock = new Redlock([member, ...plain.clients], { retryCount: 0, nodeTimeout: 500 });
  const lock = await redlock.acquire(resource, 2_000);
  const [clusterVote, ...others] = lock.votes.map((vote) => vote.vote);
  expect(others).toEqual(['locked', 'locked']);
  // The round is decided by the two plain masters; the cluster may not have been waited for.
  expect(['quarantined', 'pending']).toContain(clusterVote);
  await lock.release();
}

beforeAll(async () => {
  // ~3 s. startTestMasters() already declares its masters trusted (trust()).
  [cluster, plain] = await Promise.all([startCluster(3, { replicasPerMaster: 1 }), startTestMasters(2)]);
  expect(cluster.nodes).toHaveLength(3);
  expect(cluster.replicas).toHaveLength(3);
  member = new Cluster(cluster.startupNodes, { clusterRetryStrategy: () => 100, redisOptions: { maxRetriesPerRequest: 1 } });
  member.on('error', () => {}); // the killed master refuses reconnects: expected here
  const results = await new Redlock([member]).trustMembers(clusterTrust);
  expect(results.every((result) => result.trusted)).toBe(true);
}, 60_000);

afterAll(async () => {
  member?.disconnect();
  for (const redis of opened) redis.disconnect();
  await Promise.all([cluster?.stop(), plain?.close()]);
});

describe('a cluster member whose replica takes over a slot', () => {
  it("CLUSTER FAILOVER (manual, graceful): the promoted replica's slots are quarantined for maxLockTtl, the other masters' are not", async () => {
    const [master, other] = cluster.nodes as [Master, Master];
    const [resource, untouched] = [await resourceOn(master), await resourceOn(other)];
    const replica = await cluster.replicaOf(master.port);
    expect(cluster.replicas).toContain(replica);

    await expectLocked(resource);
    await expectLocked(untouched);
    const oldRunId = await expectReplicatedEpoch(master, replica, resource);

    // Promoted within ~100 ms; the whole cluster agrees after 0.5-1 s.
    expect(await (await direct(replica)).call('CLUSTER', 'FAILOVER')).toBe('OK');
    await waitForPromotion(replica, resource);
    // The old master is the new one's replica now.
    expect((await cluster.replicaOf(replica.port)).port).toBe(master.port);

    await expectQuarantined(resource);
    await expectNewEpoch(replica, resource, oldRunId);
    await expectLocked(untouched); // another master's slots: still counted
    await expectQuorumWithoutCluster(resource);
  }, 60_000);

  it('a killed master (SIGKILL), replaced by its replica automatically: the same', async () => {
    // Not the master of the first case (a replica now), nor its replica (a master now).
    const [, other, master] = cluster.nodes as [Master, Master, Master];
    const [resource, untouched] = [await resourceOn(master), await resourceOn(other)];
    const replica = await cluster.replicaOf(master.port);

    await expectLocked(resource);
    const oldRunId = await expectReplicatedEpoch(master, replica, resource);

    await master.kill();
    // cluster-node-timeout 2000: flagged failing after ~2 s, then the replica's election; it
    // serves the slot 3.5-4 s after the kill.
    await waitForPromotion(replica, resource);

    await expectQuarantined(resource);
    await expectNewEpoch(replica, resource, oldRunId);
    await expectLocked(untouched);
    await expectQuorumWithoutCluster(resource);
  }, 60_000);
});
