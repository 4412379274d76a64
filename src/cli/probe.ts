/** Reads one member's state for `status` and `members`: never writes, never prints a lock value. */
import { performance } from 'node:perf_hooks';
import { Cluster } from './library.js';
import type { MemberClient } from './members.js';
import { EPOCH_FIELDS, EPOCH_KEY } from '../store/keys.js';
import { serverFacts, serverIdentity, whyNotCounting } from '../store/server.js';
import { probeCluster } from './probe-cluster.js';
import { epochOf, lockOf, message, msOf, readLock, unreachable, type MemberProbe, type ProbeOptions } from './readings.js';

export async function probe(client: MemberClient, member: string, options: ProbeOptions): Promise<MemberProbe> {
  if (client instanceof Cluster) return probeCluster(client, member, options);
  let started: number;
  try {
    // The first PING waits for the connection; the second is the round trip.
    await client.ping();
    started = performance.now();
    await client.ping();
  } catch (error) {
    void options.pinged?.();
    return unreachable(member, error, options);
  }
  const result: MemberProbe = { member, reachable: true, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
  await options.pinged?.();
  try {
    // Server state for the report on this one-off client (readings.ts, readLock, says why the lock read is not a round).
    const [time, epoch, info, lock] = await Promise.all([
      client.time(),
      client.hmget(EPOCH_KEY, ...EPOCH_FIELDS),
      client.info(),
      options.resource === undefined ? Promise.resolve(undefined) : readLock(client, options.resource),
    ]);
    const facts = serverFacts(info);
    result.role = facts.role;
    const why = whyNotCounting(facts);
    if (why !== undefined) result.notCounting = why;
    const server = serverIdentity(facts);
    if (server !== undefined) result.server = server;
    result.epoch = epochOf(epoch, facts, msOf(time), options.maxLockTtl, options.fromRestart);
    if (options.info) result.version = facts.version;
    if (lock !== undefined) result.lock = lockOf(lock);
  } catch (error) {
    result.error = message(error);
  }
  return result;
}

/** A reachable master that answered everything: counts toward the quorum. */
export function healthy(probe: MemberProbe): boolean {
  return probe.reachable && probe.error === undefined && probe.role === 'master' && probe.notCounting === undefined;
}
