/**
 * A member that is a Redis Cluster. Its client routes each call to the node that owns its first
 * key's slot; a script may only touch keys of that one slot. So every key of a call is named to
 * land in the first lock key's slot (companionKey, with the client's keyPrefix), and the member
 * keeps one epoch per slot (clusterEpochKey): a slot that moves to a new node, or a node that
 * restarts, starts a new epoch for its slots only.
 */
import type { Connection } from '../clients/index.js';
import { allClusterEpochKeys, clusterEpochKey, resourceKeys } from '../store/keys.js';
import { serverFacts, whyNotCounting, type ServerFacts } from '../store/server.js';
import type { Topology } from './topology.js';

/**
 * The facts of every master node: one node that may evict lock keys makes the whole member not
 * count (any resource's slot may be on it). Run ids are not used: a Cluster's duplicates are
 * caught by address (memberId), and its nodes' roles by the scripts.
 */
function clusterFacts(masters: NonNullable<Connection['masters']>): Promise<ServerFacts> {
  return masters().then((infos) => {
    const nodes = infos.map(serverFacts);
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
async function masterProcesses(masters: NonNullable<Connection['masters']>): Promise<ReadonlySet<string>> {
  return new Set((await masters('server')).map((info) => serverFacts(info).runId));
}

export function clusterTopology(cluster: Connection): Topology {
  const { keyPrefix, masters } = cluster;
  if (masters === undefined) throw new Error(`quorumlock: the ${cluster.library} adapter cannot list ${cluster.id}'s master nodes`);
  return {
    keysOf: (resources) => resourceKeys(resources, keyPrefix),
    epochKeyOf: (resources) => clusterEpochKey(keyPrefix + resources[0]!),
    everyEpochKey: allClusterEpochKeys,
    readFacts: () => clusterFacts(masters),
    // The client writes each call on its node's connection itself: nothing of ours to cork.
    oneSocket: false,
    processes: () => masterProcesses(masters),
  };
}
