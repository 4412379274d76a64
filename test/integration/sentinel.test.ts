/**
 * A Sentinel-managed group as one member, on a real redis-sentinel with a replica that takes
 * over. Replication is asynchronous: the new master may lack a lock the old one granted. The epoch
 * carries the run id of the server that wrote it, so the promoted replica's vote is quarantined.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock, type Lock } from '../../src/index.js';
import { startSentinelGroup, type TestSentinelGroup } from '../harness/topologies.js';
import { client, startTestMasters, trust, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, sleep } from './util.js';

let group: TestSentinelGroup;
let plain: TestMasters;
const opened: Redis[] = [];

/** An ioredis client that finds the group's master through the sentinel, as a service would. */
function viaSentinel(): Redis {
  const redis = new Redis({ sentinels: group.sentinels, name: group.name, retryStrategy: () => 100, sentinelRetryStrategy: () => 100 });
  redis.on('error', () => {});
  opened.push(redis);
  return redis;
}

/** Members: the sentinel group, then two plain masters. */
function memberClients(): Redis[] {
  const masters = plain.masters.map(client);
  opened.push(...masters); // viaSentinel() keeps its own
  return [viaSentinel(), ...masters];
}

beforeAll(async () => {
  [group, plain] = await Promise.all([startSentinelGroup(), startTestMasters(2)]);
  await trust(memberClients());
}, 60_000);

afterAll(async () => {
  for (const redis of opened) redis.disconnect();
  await Promise.all([group?.stop(), plain?.close()]);
});

/** A direct connection to one server of the group (which may be killed later). */
function direct(host: string, port: number): Redis {
  const redis = new Redis({ host, port, retryStrategy: () => null });
  redis.on('error', () => {});
  opened.push(redis);
  return redis;
}

/** The value of `key` on the server at host:port, read directly. */
function valueAt(address: string, key: string): Promise<string | null> {
  const [host, port] = address.split(':');
  return direct(host!, Number(port)).get(key);
}

describe('a Sentinel-managed group as a member', () => {
  it('counts like any master, and is named after its sentinels', async () => {
    const redlock = new Redlock(memberClients(), { retryCount: 0 });
    expect(redlock.members[0]!.id).toBe(`sentinel:${group.name}@${group.sentinels.map((s) => `${s.host}:${s.port}`).join(',')}/0`);
    const resource = fresh('sentinel');
    const lock = await redlock.acquire(resource, 2_000);
    // The group's answer may come after the two plain masters decided the round (a Sentinel
    // member resolves its master first): wait for it.
    await eventually(async () => expect(await valueAt(await group.currentMaster(), resource)).toBe(lock.value));
    await lock.release();
  });

  it('after a failover the promoted replica is quarantined: the lock its old master granted cannot be taken twice', async () => {
    const resource = fresh('failover');
    // A is cut off from p2 (a client that never connects, and fails at once instead of queueing),
    // so its majority is the group's master and p1.
    const p2Unreachable = new Redis({ host: plain.masters[1]!.host, port: plain.masters[1]!.port, lazyConnect: true, enableOfflineQueue: false });
    opened.push(p2Unreachable);
    const [groupA, p1A] = memberClients();
    const a: Lock = await new Redlock([groupA!, p1A!, p2Unreachable], { retryCount: 0 }).acquire(resource, 20_000);
    expect(a.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'error']);

    // Replication is asynchronous: model the write that never reached the replica by deleting it
    // there (the replica is made writable for this alone).
    const replicaAddress = `${group.replica.host}:${group.replica.port}`;
    const replica = direct(group.replica.host, group.replica.port);
    while ((await replica.get(resource)) === null) await sleep(5);
    await replica.config('SET', 'replica-read-only', 'no');
    await replica.del(resource);

    const oldMaster = await group.currentMaster();
    await group.master.kill();
    expect(await group.waitForFailover(oldMaster)).toBe(replicaAddress);

    // B: new clients, as another process would have. Its view of the group is the new master.
    const bClients = memberClients();
    await Promise.all(bClients.map((c) => c.ping()));

    // Without the quarantine: the promoted replica and p2 say yes, and B holds the lock A holds.
    const unsafe = await new Redlock(bClients, { retryCount: 0, quarantine: false }).acquire(resource, 2_000);
    expect(a.remainingMs()).toBeGreaterThan(0);
    expect([unsafe.votes[0]!.vote, unsafe.votes[2]!.vote]).toEqual(['locked', 'locked']);
    await unsafe.release();

    // With it: the epoch on the new master was written by the old one (another run id), so the
    // group's yes does not count until maxLockTtl has passed.
    const refused = await errorOf(new Redlock(bClients, { retryCount: 0 }).acquire(resource, 2_000));
    expect(a.remainingMs()).toBeGreaterThan(0);
    // The group's vote is always heard: p2 says yes, so the round cannot settle without it.
    expect(refused.attempts[0]!.votes[0]!.vote).toBe('quarantined');
    expect(refused.attempts[0]!.votes[0]!.quarantinedForMs).toBeGreaterThan(50_000);
    expect(await valueAt(replicaAddress, resource)).toBeNull(); // rolled back
    await a.release();
  }, 60_000);
});
