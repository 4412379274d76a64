/**
 * Probing a Redis Cluster member for `status` and `members`: every master node directly, and the
 * epoch of each slot judged against the node that owns it. Never writes, never prints a value.
 */
import type { Cluster, Redis } from 'ioredis';
import { allClusterEpochKeys, clusterEpochKey, EPOCH_FIELDS, slotOf } from '../store/keys.js';
import { within } from './members.js';
import { serverFacts } from '../store/server.js';
import { epochOf, lockOf, message, msOf, readLock, unreachable, type EpochState, type MemberProbe, type ProbeOptions, type State } from './readings.js';

/**
 * Resolves once the Cluster knows its slots (it is 'ready'); rejects at its first error (every
 * seed node failed: a Cluster would queue commands and retry for ever) or after `ms`.
 */
function connected(cluster: Cluster, ms: number): Promise<void> {
  if (cluster.status === 'ready') return Promise.resolve();
  let onReady: () => void = () => {};
  let onError: (error: Error) => void = () => {};
  const settled = new Promise<void>((resolve, reject) => {
    onReady = resolve;
    onError = reject;
  });
  cluster.once('ready', onReady);
  cluster.once('error', onError);
  if (cluster.status === 'wait') cluster.connect().catch(() => {}); // a lazyConnect client
  return within(settled, ms, 'cluster').finally(() => {
    cluster.off('ready', onReady);
    cluster.off('error', onError);
  });
}

/** CLUSTER SLOTS: [from, to, [host, port, id, ...], ...replicas]. */
type SlotsReply = [number, number, [string, number, string?, ...unknown[]], ...unknown[]][];

/** What one node said about the epochs of the slots it owns. */
interface NodeRead {
  address: string;
  slots: number[];
  info?: string;
  epochs?: EpochState[];
  /** Per slot read: an error (MOVED during a migration, …), or undefined. */
  errors?: (string | undefined)[];
  error?: string;
}

const addressOf = (node: Redis) => `${node.options.host}:${node.options.port}`;

/**
 * A cluster member. Every master node is asked directly, on the cluster's own connection to it:
 * its PING round trip (latency: the slowest node's), CLUSTER INFO (role 'master' when each says
 * cluster_state:ok), and, for the slots CLUSTER SLOTS says it owns, the slot epochs, judged
 * against that node's run id and clock. The lock (status) is read through the cluster's routing.
 */
export async function probeCluster(cluster: Cluster, member: string, options: ProbeOptions): Promise<MemberProbe> {
  const timeoutMs = options.timeoutMs ?? 1000;
  try {
    await connected(cluster, 2 * timeoutMs);
  } catch (error) {
    void options.pinged?.();
    return unreachable(member, error, options);
  }
  let pinged = false;
  const donePinging = () => {
    if (pinged) return Promise.resolve();
    pinged = true;
    return options.pinged?.() ?? Promise.resolve();
  };
  const result: MemberProbe = { member, reachable: true };
  try {
    await within(
      (async () => {
        // Each node's connection and server state, for the report: node by node, not a round (readings.ts, readLock).
        const resource = options.resource;
        const masters = cluster.nodes('master');
        const connections = new Map(cluster.nodes('all').map((node) => [addressOf(node), node]));
        // Any node's map will do (a paused node's would only come late); each node's own state.
        const shards = Promise.any(masters.map((node) => node.cluster('SLOTS') as unknown as Promise<SlotsReply>));
        const states = Promise.allSettled(masters.map((node) => node.cluster('INFO') as Promise<string>));
        const lock = resource === undefined ? Promise.resolve(undefined) : readLock(cluster, resource);
        lock.catch(() => {}); // read below, after the rest
        // Round trips first, while nothing else is in flight: each node's second PING (the first
        // waits for its connection). A node that does not answer is not read further.
        const rtts = await Promise.allSettled(
          masters.map(async (node) => {
            await node.ping();
            const started = performance.now();
            await node.ping();
            return performance.now() - started;
          }),
        );
        await donePinging();
        const down = new Map<string, string>();
        masters.forEach((node, index) => {
          const rtt = rtts[index]!;
          if (rtt.status === 'rejected') down.set(addressOf(node), message(rtt.reason));
        });

        const wanted = resource === undefined ? undefined : slotOf(resource);
        const keys = resource === undefined ? allClusterEpochKeys() : [];
        const keyOf = (slot: number) => (resource === undefined ? keys[slot]! : clusterEpochKey(resource));
        const reading = shards.then(async (reply) => {
          // Per owning node (host:port), its slots, in order; slots no node serves stay out.
          const owned = new Map<string, number[]>();
          let covered = 0;
          for (const [from, to, [host, port]] of reply) {
            const address = `${host}:${port}`;
            const slots = owned.get(address) ?? [];
            for (let slot = from; slot <= to; slot++) if (wanted === undefined || slot === wanted) slots.push(slot);
            covered += to - from + 1;
            if (slots.length > 0) owned.set(address, slots);
          }
          const reads = await Promise.all(
            [...owned].map(([address, slots]): NodeRead | Promise<NodeRead> => {
              const error = down.get(address);
              return error === undefined ? readNode(connections.get(address), address, slots, keyOf, options.maxLockTtl) : { address, slots, error };
            }),
          );
          return { reads, covered, owned };
        });

        const [infos, held, { reads, covered, owned }] = await Promise.all([states, Promise.allSettled([lock]), reading]);
        // The latency of the nodes read (for a resource, its slot's node): the slowest's.
        const answered = rtts.flatMap((rtt, index) => (rtt.status === 'fulfilled' && owned.has(addressOf(masters[index]!)) ? [rtt.value] : []));
        if (answered.length > 0) result.latencyMs = Math.round(Math.max(...answered) * 100) / 100;
        const errors: string[] = [];
        const clusterStates = infos.flatMap((info) => (info.status === 'fulfilled' ? [/^cluster_state:(\w+)/m.exec(info.value)?.[1] ?? 'unknown'] : []));
        const bad = clusterStates.find((state) => state !== 'ok');
        if (clusterStates.length > 0) result.role = bad === undefined ? 'master' : `cluster_state:${bad}`;
        // A node whose slots were read reports its own failure below; for a resource, no other matters.
        masters.forEach((node, index) => {
          const failed = infos[index]!;
          if (failed.status === 'rejected' && wanted === undefined && !owned.has(addressOf(node)))
            errors.push(`node ${addressOf(node)}: ${message(failed.reason)}`);
        });
        const [heldReply] = held;
        if (heldReply.status === 'rejected') errors.push(`GET/PTTL/ZRANGEBYSCORE ${resource}: ${message(heldReply.reason)}`);
        else if (heldReply.value !== undefined) result.lock = lockOf(heldReply.value);

        if (wanted === undefined && covered < 16384) errors.push(`${16384 - covered} slots are served by no node`);
        if (wanted !== undefined && owned.size === 0) errors.push(`slot ${wanted} is served by no node`);
        for (const read of reads) {
          if (read.error) errors.push(`node ${read.address}: ${read.error}`);
          const failed = read.errors?.filter((error) => error !== undefined) ?? [];
          if (failed.length > 0) errors.push(`node ${read.address}: ${failed.length} slot epochs unreadable (${failed[0]})`);
        }
        if (options.info) result.version = reads.map((read) => read.info && serverFacts(read.info).version).find((version) => version !== undefined);
        if (wanted !== undefined) {
          const epoch = reads[0]?.epochs?.[0];
          if (epoch) result.epoch = { ...epoch, slot: wanted };
        } else {
          const epoch = summarize(reads, 16384 - covered);
          if (epoch) result.epoch = epoch;
        }
        if (errors.length > 0) result.error = errors.join('; ');
      })(),
      // A backstop only: every command has its own timeout, and the other members' round trips
      // (pinged) are bounded by theirs.
      8 * timeoutMs,
      'cluster',
    );
  } catch (error) {
    void donePinging();
    result.error = error instanceof AggregateError ? `no node answered CLUSTER SLOTS (${message(error.errors[0])})` : message(error);
  }
  return result;
}

/** INFO, TIME and the slots' epoch hashes from one node, in one pipeline. */
async function readNode(node: Redis | undefined, address: string, slots: number[], keyOf: (slot: number) => string, maxLockTtl: number): Promise<NodeRead> {
  if (node === undefined) return { address, slots, error: 'the cluster client has no connection to it' };
  try {
    const pipeline = node.pipeline().info().time();
    for (const slot of slots) pipeline.hmget(keyOf(slot), ...EPOCH_FIELDS);
    const replies = (await pipeline.exec()) ?? [];
    const [[infoError, info], [timeError, time]] = replies as [[Error | null, string], [Error | null, string[]]];
    if (infoError ?? timeError) throw infoError ?? timeError;
    const server = serverFacts(info);
    const now = msOf(time);
    const epochs: EpochState[] = [];
    const errors: (string | undefined)[] = [];
    for (const [error, fields] of replies.slice(2) as [Error | null, (string | null)[]][]) {
      errors.push(error ? error.message : undefined);
      if (!error) epochs.push(epochOf(fields, server, now, maxLockTtl));
    }
    return { address, slots, info, epochs, errors };
  } catch (error) {
    return { address, slots, error: message(error) };
  }
}

const WORST: readonly State[] = ['none', 'stale', 'quarantined', 'trusted'];

/** Every slot's epoch in one: the worst state, the youngest age, the longest and shortest quarantine left. */
function summarize(reads: readonly NodeRead[], unserved: number): EpochState | undefined {
  const slots: NonNullable<EpochState['slots']> = { trusted: 0, quarantined: 0, stale: 0, none: 0, unreadable: unserved };
  let ageMs: number | undefined;
  let leftMs: number | undefined;
  let shortestLeftMs: number | undefined;
  let genesis = true;
  for (const read of reads) {
    slots.unreadable += read.slots.length - (read.epochs?.length ?? 0);
    for (const epoch of read.epochs ?? []) {
      slots[epoch.state]++;
      genesis &&= epoch.genesis;
      if (epoch.ageMs !== undefined) ageMs = Math.min(ageMs ?? Infinity, epoch.ageMs);
      if (epoch.leftMs !== undefined) {
        leftMs = Math.max(leftMs ?? 0, epoch.leftMs);
        shortestLeftMs = Math.min(shortestLeftMs ?? Infinity, epoch.leftMs);
      }
    }
  }
  const state = WORST.find((candidate) => slots[candidate] > 0);
  if (state === undefined) return undefined; // no slot could be read
  return {
    state,
    ...(ageMs === undefined ? {} : { ageMs }),
    ...(leftMs === undefined ? {} : { leftMs }),
    genesis,
    slots: shortestLeftMs === undefined ? slots : { ...slots, shortestLeftMs },
  };
}
