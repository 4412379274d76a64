/**
 * `quorumlock/testing`: helpers for test suites, never for production.
 *
 * A suite that wipes Redis between tests (FLUSHALL, FLUSHDB, or KEYS * then DEL) also deletes
 * each member's epoch marker, and quorumlock then reads every member as one that restarted empty
 * and may have forgotten locks: each sits out the restart quarantine (maxLockTtl, 60 s by
 * default) and every acquire fails 'quarantined'. That is the safety feature working; in a test
 * suite nothing can have been forgotten that matters. resetMembers() wipes the members and
 * declares them brand new (what `redlock.trustMembers()` does), so the next lock succeeds at once.
 *
 * Unsafe anywhere else: it deletes every key of each member's database, and declaring members
 * brand new hides the very hazard the quarantine guards against (docs/testing.md, "Suites that
 * wipe Redis"). It refuses to run with NODE_ENV=production, and outside a test runner unless told.
 */
import type { Cluster, Redis } from 'ioredis';
import { connectionOf, type Connection, type MemberClient } from './clients/index.js';
import { scriptCommand, type ScriptCommand } from './clients/ioredis.js';
import { ResetMembersError, TestingOnlyError } from './errors.js';
import { clusterTopology } from './members/cluster.js';
import { serverTopology } from './members/redis-member.js';
import { isUntouchedGenesis, slotOf } from './store/keys.js';
import { decodeEpoch, trustArgs } from './store/protocol.js';
import { serverFacts } from './store/server.js';
import type { ScriptName } from './store/scripts.js';

export interface ResetOptions {
  /**
   * Delete every key first: FLUSHDB on the client's database, on a Cluster on every master node
   * (a Cluster wipe must go node by node: a `DEL` of keys from many slots fails with CROSSSLOT).
   * Default true. false: only re-declare members you wiped yourself.
   */
  wipe?: boolean;
  /**
   * Run although no test runner was detected (NODE_ENV=test, vitest, jest, node --test, mocha).
   * For a test set-up of your own; it still refuses with NODE_ENV=production.
   */
  outsideTests?: boolean;
}

export interface ResetReport {
  /** The member, named as Redlock names it (host:port/db, cluster:nodes, ...). */
  member: string;
  /** Servers wiped: 1, or a Cluster's master nodes; 0 with `wipe: false`. */
  wiped: number;
  /** Epoch markers declared brand new: 1, or 16384 on a Cluster (one per hash slot). */
  epochs: number;
}

/** Whether a test runner seems to run this process. */
function underTestRunner(): boolean {
  const env = process.env;
  return (
    env.NODE_ENV === 'test' ||
    env.VITEST !== undefined ||
    env.JEST_WORKER_ID !== undefined ||
    env.NODE_TEST_CONTEXT !== undefined ||
    env.MOCHA_WORKER_ID !== undefined ||
    process.argv.some((arg) => /(^|[\\/])(_?mocha|jest|vitest|ava|tap)(\.js)?$/.test(arg))
  );
}

function refuseOutsideTests(options: ResetOptions): void {
  if (process.env.NODE_ENV === 'production')
    throw new TestingOnlyError(
      'quorumlock/testing: resetMembers() refuses to run with NODE_ENV=production: it deletes every key and disables the restart quarantine',
    );
  if (!options.outsideTests && !underTestRunner())
    throw new TestingOnlyError(
      'quorumlock/testing: resetMembers() deletes every key of the members and declares them brand new, so it runs only under a test runner (NODE_ENV=test, vitest, jest, node --test, mocha); pass { outsideTests: true } for a test set-up of your own, never in production',
    );
}

/** A Cluster's slot map is only known once it is ready: wait for it (connect it when lazy). */
async function ready(client: Connection): Promise<void> {
  if (client.state === 'ready') return;
  if (client.state === 'ended') throw new ResetMembersError(client.id, 'was closed (quit or disconnect)');
  if (client.state === 'waiting') {
    await client.connect();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const onReady = () => {
      client.off('end', onEnd);
      client.off('ready', onReady);
      resolve();
    };
    const onEnd = () => {
      client.off('end', onEnd);
      client.off('ready', onReady);
      reject(new ResetMembersError(client.id, 'ended before it was ready'));
    };
    client.on('ready', onReady);
    client.on('end', onEnd);
  });
}

/** Sends `name args` on one node's own connection (a Cluster's nodes apply no keyPrefix: SCAN returns full names). */
function raw<T>(node: Redis, name: string, args: (string | number)[]): Promise<T> {
  return node.call(name, ...args) as Promise<T>;
}

/** A pipeline on one node's connection (unprefixed, as raw()). */
function rawPipeline(node: Redis, name: string, keys: readonly string[]): Promise<[Error | null, unknown][]> {
  const pipeline = node.pipeline();
  for (const key of keys) pipeline.call(name, key);
  return pipeline.exec().then((replies) => replies ?? []);
}

/** Every key of one node, by SCAN. */
async function keysOf(node: Redis): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await raw<[string, string[]]>(node, 'scan', [cursor, 'COUNT', 1000]);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/**
 * One master node of a Cluster: deletes every key but the epoch markers (when wiping), and says
 * which markers must be declared again: all but those still brand new and untouched in this
 * node's current lineage (a lock with fencing, a restart or a failover since the last reset).
 */
async function resetNode(node: Redis, markers: ReadonlySet<string>, wiping: boolean): Promise<{ kept: Set<string> }> {
  const facts = serverFacts(await raw<string>(node, 'info', []));
  const keys = await keysOf(node);
  const found = keys.filter((key) => markers.has(key));
  const hashes = await rawPipeline(node, 'hgetall', found);
  const kept = new Set<string>();
  hashes.forEach(([error, reply], index) => {
    if (error) throw error;
    const hash = Array.isArray(reply)
      ? Object.fromEntries(Array.from({ length: reply.length / 2 }, (_, at) => [reply[2 * at], reply[2 * at + 1]]))
      : (reply as Record<string, string>);
    if (isUntouchedGenesis(hash, facts.runId, facts.replid)) kept.add(found[index]!);
  });
  // A wipe deletes the rest, used markers too: their fence counters start again from 0, as after
  // a FLUSHDB. (Without a wipe, used markers keep their counters and are only declared again.)
  if (wiping)
    for (const [error] of await rawPipeline(
      node,
      'unlink',
      keys.filter((key) => !kept.has(key)),
    ))
      if (error) throw error;
  return { kept };
}

/**
 * trust.lua 'new' on `keys` (epoch markers, as the client names them), one pipeline per master
 * node: each epoch is read (epoch.lua) and the trust bound to it (src/lua/_bound.lua), as every
 * write is; the wipe that came before was answered first, so the epoch read is the new one.
 */
async function declareNew(connection: Connection, client: MemberClient, keys: readonly string[]): Promise<void> {
  // The quarantine given only sizes the reply ('ms that were left'): genesis ends it for any ttl.
  const args = trustArgs('new', 0);
  if (!connection.isCluster) {
    await Promise.all(
      keys.map(async (key) => connection.script('quorumlockTrust', [key], [decodeEpoch(await connection.script('quorumlockEpoch', [key], [])).id, ...args])),
    );
    return;
  }
  if (connection.library !== 'ioredis')
    throw new ResetMembersError(connection.id, `is a ${connection.library} Cluster: resetMembers() resets ioredis and iovalkey Clusters only`);
  const cluster = client as unknown as Cluster;
  const prefix = connection.keyPrefix;
  const byNode = new Map<string, string[]>();
  for (const key of keys) {
    const node = cluster.slots[slotOf(prefix + key)]?.[0] ?? '';
    let group = byNode.get(node);
    if (!group) byNode.set(node, (group = []));
    group.push(key);
  }
  const inPipeline = async (group: readonly string[], call: (pipelined: ScriptCommand, key: string, index: number) => void, name: ScriptName) => {
    const pipeline = cluster.pipeline() as unknown as { exec(): Promise<[Error | null, unknown][] | null> };
    const command = scriptCommand(pipeline, name);
    group.forEach((key, index) => call(command, key, index));
    const replies = (await pipeline.exec()) ?? [];
    for (const [error] of replies) if (error) throw error;
    return replies.map(([, reply]) => reply);
  };
  await Promise.all(
    [...byNode.values()].map(async (group) => {
      const epochs = (await inPipeline(group, (read, key) => void read(1, key), 'quorumlockEpoch')).map((reply) => decodeEpoch(reply).id);
      await inPipeline(group, (trust, key, index) => void trust(1, key, epochs[index]!, ...args), 'quorumlockTrust');
    }),
  );
}

/** One member: a server (FLUSHDB, one marker) or a Cluster (node by node, 16384 markers). */
async function resetMember(client: MemberClient, wiping: boolean): Promise<ResetReport> {
  const connection = connectionOf(client);
  await ready(connection);
  if (!connection.isCluster) {
    // The wipe is answered before the marker is written: a FLUSHDB still queued (an
    // auto-pipelined client) must not run after it and delete it again.
    if (wiping) await connection.command(['FLUSHDB']);
    const keys = serverTopology(connection).everyEpochKey();
    await declareNew(connection, client, keys);
    return { member: connection.id, wiped: wiping ? 1 : 0, epochs: keys.length };
  }
  // A Cluster: a wipe must go node by node (a DEL of keys from many slots fails with CROSSSLOT).
  // Markers still brand new and untouched are kept, so a reset between tests re-declares only
  // the slots a test used with fencing, not all 16384 (about 20 µs of server time each).
  if (connection.library !== 'ioredis')
    throw new ResetMembersError(connection.id, `is a ${connection.library} Cluster: resetMembers() resets ioredis and iovalkey Clusters only`);
  const prefix = connection.keyPrefix;
  const keys = clusterTopology(connection).everyEpochKey();
  const markers = new Set(keys.map((key) => prefix + key));
  const masters = (client as unknown as Cluster).nodes('master');
  if (masters.length === 0) throw new ResetMembersError(connection.id, 'has no master node');
  const kept = new Set<string>();
  for (const node of await Promise.all(masters.map((master) => resetNode(master, markers, wiping)))) for (const key of node.kept) kept.add(key);
  const stale = keys.filter((key) => !kept.has(prefix + key));
  await declareNew(connection, client, stale);
  return { member: connection.id, wiped: wiping ? masters.length : 0, epochs: stale.length };
}

/**
 * For test suites only: wipes each member (FLUSHDB; on a Redis Cluster, on every master node) and
 * declares it brand new, as `redlock.trustMembers()` does, so that the next lock succeeds at once
 * instead of failing 'quarantined' for maxLockTtl. Pass the same clients your Redlock uses; call
 * it between tests (e.g. in `beforeEach`). A Redlock made before keeps working: its members see
 * the new, trusted epoch on their next call.
 *
 * Never in production: it deletes every key in those databases, and a member declared brand new
 * after losing data while locks were held would grant those locks twice. Refused with
 * NODE_ENV=production, and outside a test runner unless `{ outsideTests: true }`.
 */
export async function resetMembers(clients: MemberClient | readonly MemberClient[], options: ResetOptions = {}): Promise<ResetReport[]> {
  refuseOutsideTests(options);
  const list: readonly MemberClient[] = Array.isArray(clients) ? clients : [clients as MemberClient];
  return Promise.all(list.map((client) => resetMember(client, options.wipe !== false)));
}
