/**
 * A member that is a Redis Cluster. ioredis routes each call to the node that owns its first
 * key's slot; a script may only touch keys of that one slot. So every key of a call is named to
 * land in the first lock key's slot (companionKey, with the client's keyPrefix), and the member
 * keeps one epoch per slot (clusterEpochKey): a slot that moves to a new node, or a node that
 * restarts, starts a new epoch for its slots only.
 */
import type { Cluster } from 'ioredis';
import { allClusterEpochKeys, clusterEpochKey, resourceKeys } from '../store/keys.js';
import { serverFacts, whyNotCounting, type ServerFacts } from '../store/server.js';
import type { Topology } from './topology.js';

/**
 * The facts of every master node: one node that may evict lock keys makes the whole member not
 * count (any resource's slot may be on it). Run ids are not used: a Cluster's duplicates are
 * caught by address (memberId), and its nodes' roles by the scripts.
 */
function clusterFacts(cluster: Cluster): Promise<ServerFacts> {
  return Promise.all(cluster.nodes('master').map((node) => node.info().then(serverFacts))).then((nodes) => {
    const evicting = nodes.find((facts) => whyNotCounting(facts) !== undefined);
    const first = nodes[0];
    const facts = evicting ?? {
      role: 'master',
      maxmemory: 0,
      maxmemoryPolicy: 'noeviction',
      version: first?.version,
      engine: first?.engine,
      engineVersion: first?.engineVersion,
    };
    // No identity: a Cluster is many processes (its duplicates are caught by address).
    return { ...facts, runId: '', replid: '' };
  });
}

/** The run ids of the Cluster's master nodes, once its client knows them (it is ready). */
async function masterProcesses(cluster: Cluster): Promise<ReadonlySet<string>> {
  if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
  const ids = await Promise.all(cluster.nodes('master').map((node) => node.info('server').then((info) => serverFacts(info).runId)));
  return new Set(ids);
}

export function clusterTopology(cluster: Cluster, keyPrefix: string): Topology {
  return {
    keysOf: (resources) => resourceKeys(resources, keyPrefix),
    epochKeyOf: (resources) => clusterEpochKey(keyPrefix + resources[0]!),
    keysAndEpochOf: (resources) => [...resourceKeys(resources, keyPrefix), clusterEpochKey(keyPrefix + resources[0]!)],
    everyEpochKey: allClusterEpochKeys,
    readFacts: () => clusterFacts(cluster),
    // ioredis writes each call on its node's connection itself: nothing of ours to cork.
    oneSocket: false,
    processes: () => masterProcesses(cluster),
  };
}
