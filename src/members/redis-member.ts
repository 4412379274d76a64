/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it.
 */
import type { Cluster, Redis } from 'ioredis';
import { keepOutOfAutoPipelining, registerScripts, type ScriptCommands } from '../store/scripts.js';
import type { Logger } from '../options/check.js';
import { serverFacts, whyNotCounting, type ServerFacts } from '../store/server.js';
import { decodeAcquire, decodeFence, NOT_COUNTING, type FenceReply, type Locked, type Refusal } from '../store/protocol.js';
import { allClusterEpochKeys, clusterEpochKey, EPOCH_KEY, lineKeys, type Waiter } from '../waiting/line.js';

interface ClientShape {
  options?: { keyPrefix?: string; host?: string; port?: number; path?: string; db?: number; name?: string; sentinels?: { host?: string; port?: number }[] | null };
  startupNodes?: (string | number | { host?: string; port?: number })[];
  isCluster?: boolean;
}

const address = (node: { host?: string; port?: number }) => `${node.host ?? 'localhost'}:${node.port ?? 6379}`;

/**
 * How votes, logs and duplicate checks name a member: host:port/db, socket/db,
 * sentinel:name@sentinels/db for a Sentinel-managed group, cluster:nodes for a Cluster.
 */
export function memberId(client: MemberClient): string {
  const shape = client as unknown as ClientShape;
  if (Array.isArray(shape.startupNodes)) {
    const nodes = shape.startupNodes.map((node) => (typeof node === 'object' ? address(node) : String(node)));
    return `cluster:${nodes.sort().join(',')}`;
  }
  const options = shape.options ?? {};
  const db = options.db ?? 0;
  if (options.sentinels && options.sentinels.length > 0) {
    return `sentinel:${options.name ?? 'mymaster'}@${options.sentinels.map(address).sort().join(',')}/${db}`;
  }
  return `${options.path ? options.path : address(options)}/${db}`;
}

export type { Locked, Refusal };

export interface AcquireRequest {
  value: string;
  ttlMs: number;
  waiter: Waiter;
  /** 0 = quarantine off. */
  quarantineMs: number;
  fencing: boolean;
}

/** What the server said about itself at its last (re)connect or refresh; undefined until then. */
interface ServerWatch {
  facts: ServerFacts | undefined;
  /** Settles once the first reading succeeded or failed. */
  readonly firstReading: Promise<void>;
  /** Called after every reading (the Redlock checks for duplicate members). */
  readonly listeners: Set<() => void>;
}

/** One watch per client, however many Redlocks share it: one INFO per connect and per refresh. */
const watches = new WeakMap<Redis, ServerWatch>();

/**
 * How often a connected member's INFO is read again: a CONFIG SET of maxmemory-policy, or a
 * REPLICAOF, changes a server without a reconnect. Between readings the scripts still refuse a
 * server that is not a master (acquire.lua), and a failover or resync starts a new epoch there.
 */
const SERVER_REFRESH_MS = 10_000;

/**
 * INFO at connect, at every reconnect and every SERVER_REFRESH_MS: the role, the run id (which
 * identifies a server however it is addressed, for the duplicate check) and the eviction policy.
 * Read once per connection, not per call: no round trip is added to any lock operation.
 * `readFacts` reads them; undefined when the client cannot (then it is taken as a plain master).
 */
function watchServer(client: Redis | Cluster, id: string, logger: Logger, readFacts: (() => Promise<ServerFacts>) | undefined): ServerWatch {
  const key = client as unknown as Redis;
  const known = watches.get(key);
  if (known) return known;
  let settleFirst!: () => void;
  const watch: ServerWatch = { facts: undefined, firstReading: new Promise<void>((resolve) => (settleFirst = resolve)), listeners: new Set() };
  watches.set(key, watch);
  if (readFacts === undefined) {
    settleFirst();
    return watch;
  }
  const read = () => {
    if (client.status !== 'ready') return;
    readFacts()
      .then(
        (facts) => {
          const why = whyNotCounting(facts);
          if (why !== undefined && why !== (watch.facts && whyNotCounting(watch.facts))) logger.warn({ member: id, why }, 'member will not count toward quorum');
          watch.facts = facts;
          for (const listener of watch.listeners) listener();
        },
        (error: Error) => logger.warn({ member: id, error: error.message }, 'could not read the member INFO (ACL: allow +info)'),
      )
      .finally(settleFirst);
  };
  read();
  client.on('ready', read);
  // In the background: the watch must never keep the process alive.
  const refresh = setInterval(read, SERVER_REFRESH_MS);
  refresh.unref();
  client.once('end', () => clearInterval(refresh));
  return watch;
}

/** A single server's facts (a stand-in client without INFO, the drift simulator's, has none). */
function serverReader(client: Redis): (() => Promise<ServerFacts>) | undefined {
  return typeof client.info === 'function' ? () => client.info().then(serverFacts) : undefined;
}

/**
 * A Cluster's facts, from every master node: one node that may evict lock keys makes the whole
 * member not count (any resource's slot may be on it). Run ids are not used: a Cluster's
 * duplicates are caught by address (memberId), and its nodes' roles by the scripts.
 */
function clusterReader(cluster: Cluster): () => Promise<ServerFacts> {
  return () =>
    Promise.all(cluster.nodes('master').map((node) => node.info().then(serverFacts))).then((nodes) => {
      const evicting = nodes.find((facts) => whyNotCounting(facts) !== undefined);
      return { ...(evicting ?? { replid: '', role: 'master', maxmemory: 0, maxmemoryPolicy: 'noeviction', version: nodes[0]?.version }), runId: '' };
    });
}

/**
 * What a member can be: an ioredis client (a single master, or a Sentinel-managed group), or an
 * ioredis Cluster. Both offer what quorumlock uses (defineCommand, duplicate, events).
 */
export type MemberClient = Redis | Cluster;

/** Calls per socket write in a burst (#call). Each of our calls is 1 to 3 buffers for ioredis. */
const CORK_BATCH = 256;

export class Member {
  readonly id: string;
  /**
   * An ioredis Cluster: it routes each call to the node owning its first key's slot, and keeps
   * one epoch per slot (clusterEpochKey), since a script may only touch keys of one slot.
   */
  readonly isCluster: boolean;
  /** The client's keyPrefix: on a cluster, slots are those of the prefixed keys. */
  readonly keyPrefix: string;
  readonly #client: Redis & ScriptCommands;

  readonly #server: ServerWatch;
  /** Set by the Redlock when another of its members is the same server (by run id). */
  #duplicateOf: string | undefined;
  /** A single server's connection, whose socket #call corks for a tick; not a Cluster's. */
  readonly #canCork: boolean;
  /** Per epoch key: the epoch (its id) last seen past a quarantine of `quarantineMs`. */
  readonly #settled = new Map<string, { id: string; quarantineMs: number }>();

  constructor(member: MemberClient, logger: Logger) {
    // Typed as a Redis from here on: a Cluster has every method used below (the role watch,
    // the only Redis-only part, is skipped for clusters).
    const client = member as Redis;
    this.id = memberId(client);
    this.isCluster = (client as ClientShape).isCluster === true;
    this.keyPrefix = (client as ClientShape).options?.keyPrefix ?? '';
    this.#client = registerScripts(client);
    // One ordered path for our calls, whatever the user's enableAutoPipelining says (see #call).
    keepOutOfAutoPipelining(client);
    // A Cluster routes each call to its node's connection itself: nothing of ours to cork.
    this.#canCork = !this.isCluster;
    // ioredis sends a cluster's writes to the slot's master itself: its INFO is read per master node.
    this.#server = watchServer(member, this.id, logger, this.isCluster ? clusterReader(member as Cluster) : serverReader(client));
  }

  /** The epoch hash for a call on `firstKey`: one per member, or one per slot on a cluster. */
  #epochKey(firstKey: string): string {
    return this.isCluster ? clusterEpochKey(this.keyPrefix + firstKey) : EPOCH_KEY;
  }

  /**
   * `keys` (from lineKeys(), plus the epoch key when `withEpoch`) as this member needs them: the
   * same for a single server; on a cluster, named so that all land in the slot of the first.
   */
  #keysHere(keys: readonly string[], withEpoch: boolean): readonly string[] {
    if (!this.isCluster) return keys;
    const resources = keys.slice(0, (keys.length - (withEpoch ? 1 : 0)) / 3);
    const here = lineKeys(resources, this.keyPrefix);
    if (withEpoch) here.push(this.#epochKey(resources[0]!));
    return here;
  }

  /** The socket corked for the current tick (see #call), if any, and the calls written into it. */
  #corked: { cork(): void; uncork(): void } | undefined;
  #corkedCalls = 0;

  /**
   * Sends one of our scripts. Every call takes the same path, a direct write on the client's
   * connection, so calls reach the member in the order they were made: a rollback or release is
   * always written after the acquire it undoes (src/quorum/release.ts relies on it). An earlier
   * version wrote the first call of a tick directly and later ones through ioredis'
   * auto-pipelining queue, which flushes later and not while another batch awaits replies: a
   * direct release then overtook its own acquire and left the key behind (realities.md).
   * Batching stays, in order: the first call in a tick corks the socket and the end of the tick
   * uncorks it, so the tick's calls share one write syscall.
   */
  #call<T>(script: keyof ScriptCommands, args: (string | number)[]): Promise<T> {
    // libuv writes at most 1024 buffers per writev: a burst of thousands of calls in one corked
    // tick would go out a thousand per event-loop turn. Flushing every CORK_BATCH calls keeps a
    // burst one write per batch, all in this tick, still in call order.
    if (this.#corked !== undefined && ++this.#corkedCalls >= CORK_BATCH) {
      this.#corkedCalls = 0;
      this.#corked.uncork();
      this.#corked.cork();
    }
    if (this.#corked === undefined && this.#canCork) {
      const stream = (this.#client as { stream?: { cork(): void; uncork(): void; writable?: boolean } }).stream;
      if (stream && typeof stream.cork === 'function' && stream.writable && this.#client.status === 'ready') {
        stream.cork();
        this.#corked = stream;
        this.#corkedCalls = 0;
        process.nextTick(() => {
          this.#corked = undefined;
          stream.uncork();
        });
      }
    }
    return (this.#client[script] as (...args: (string | number)[]) => Promise<T>)(...args);
  }

  /** @internal The keys were set (Locked), or why not (Refusal). `keys` from acquireKeys(), computed once per round. */
  async acquire(keys: readonly string[], request: AcquireRequest): Promise<Locked | Refusal> {
    const { value, ttlMs, waiter, quarantineMs, fencing } = request;
    keys = this.#keysHere(keys, true);
    const epochKey = keys[keys.length - 1]!;
    const known = this.#settled.get(epochKey);
    const settled = known !== undefined && known.quarantineMs === quarantineMs ? known.id : '';
    const reply = await this.#call<number | unknown[]>('quorumlockAcquire', [keys.length, ...keys, value, ttlMs, waiter.id, waiter.ticket, waiter.leaseMs, quarantineMs, fencing ? 1 : 0, settled]);
    const answer = decodeAcquire(reply, settled, fencing);
    if ('why' in answer) return answer;
    // A client that was still connecting ran our call before its INFO ('ready' fires after
    // ioredis flushed its queues): wait for that reading before this yes may count.
    if (this.#server.facts === undefined) await this.#server.firstReading;
    // Past its quarantine: remember the epoch, so the script can skip reading the time next time.
    if (answer.quarantinedForMs === 0 && answer.epoch !== undefined) this.#settled.set(epochKey, { id: answer.epoch, quarantineMs });
    const why = answer.notCounting ?? this.notCounting;
    return why === undefined ? answer : { ...answer, quarantinedForMs: NOT_COUNTING, notCounting: why };
  }

  /**
   * Why this member's yes must not count in any round, or undefined when it may: it is not a
   * master, may evict lock keys (whyNotCounting), or is the same server as another member.
   */
  get notCounting(): string | undefined {
    if (this.#duplicateOf !== undefined) return `the same server as ${this.#duplicateOf}`;
    return this.#server.facts && whyNotCounting(this.#server.facts);
  }

  /** @internal The server's run id at its last reading (undefined before the first, or on a Cluster). */
  get serverId(): string | undefined {
    return this.#server.facts?.runId || undefined;
  }

  /** @internal The Redlock marks a member that is another member's server under another address. */
  markDuplicate(of: string | undefined): void {
    this.#duplicateOf = of;
  }

  /** @internal Calls `listener` after every reading of the server's INFO. */
  onServerFacts(listener: () => void): void {
    this.#server.listeners.add(listener);
  }

  /**
   * @internal Raises the fence counters of `resources` to `token`, in the epoch `epoch` ('' for a
   * propose to a member not heard in the acquire round); a sync with `floor` also repairs an
   * incomplete epoch (fence.lua).
   */
  async fence(resources: readonly string[], value: string, token: number, mode: 'propose' | 'sync', epoch: string, floor?: number): Promise<FenceReply> {
    const reply = await this.#call<unknown[]>('quorumlockFence', [resources.length + 1, ...resources, this.#epochKey(resources[0]!), value, token, mode, epoch, floor ?? '']);
    return decodeFence(reply);
  }

  /**
   * @internal Declares this member's current epoch brand new (trust.lua 'new'): ends its
   * quarantine whatever ttl callers use, absent fence counters read as 0. Resolves with the
   * quarantine ms (of `quarantineMs`) that were left. On a cluster, for every slot's epoch.
   */
  trust(quarantineMs: number): Promise<number> {
    return this.#onEveryEpoch((key) => this.#call<number>('quorumlockTrust', [1, key, 'new', quarantineMs]));
  }

  /** @internal Raises the fence counter of the current epoch to at least `floor` and trusts it (trust.lua 'floor'). */
  restoreFencing(floor: number): Promise<number> {
    return this.#onEveryEpoch((key) => this.#call<number>('quorumlockTrust', [1, key, 'floor', floor]));
  }

  /** The largest of `run` on the member's epoch key, or on every slot's on a cluster. */
  async #onEveryEpoch(run: (key: string) => Promise<number>): Promise<number> {
    if (!this.isCluster) return run(EPOCH_KEY);
    return Math.max(...(await Promise.all(allClusterEpochKeys().map(run))));
  }

  /** The role this member reported at its last (re)connect or refresh: 'master', 'slave', ... */
  get role(): string | undefined {
    return this.#server.facts?.role;
  }

  /**
   * @internal Renews our keys' expiry to `ttlMs` if every one still holds `value`: 'extended'.
   * Otherwise nothing changes, and the reply says why (extend.lua's status code): 'gone', a key
   * no longer exists here (expired, evicted, deleted, or forgotten in a restart or flush);
   * 'taken', a key holds another value. An unknown code rejects: it is never read as a yes.
   */
  async extend(resources: readonly string[], value: string, ttlMs: number): Promise<'extended' | 'gone' | 'taken'> {
    const status = await this.#call<number>('quorumlockExtend', [resources.length, ...resources, value, ttlMs]);
    if (status === 1) return 'extended';
    if (status === 0) return 'gone';
    if (status === -1) return 'taken';
    throw new Error(`quorumlock: unexpected reply from the extend script: ${String(status)}`);
  }

  /** @internal How many of the keys held `value` and were deleted; the first waiter in line is told. `keys` from lineKeys(). */
  release(keys: readonly string[], value: string): Promise<number> {
    return this.#call('quorumlockRelease', [keys.length, ...this.#keysHere(keys, false), value]);
  }

  /** @internal Gives up a place in line. `keys` from lineKeys(). */
  leave(keys: readonly string[], waiterId: string): Promise<number> {
    return this.#call('quorumlockLeave', [keys.length, ...this.#keysHere(keys, false), waiterId]);
  }

  /** @internal A new connection with the client's options, for SUBSCRIBE; its owner must close it. */
  subscriber(): Redis {
    // Re-subscribing after a reconnect is the subscriber's own job (waiting/notifications.ts), with
    // every promise handled: ioredis' autoResubscribe leaves its SUBSCRIBE unhandled.
    return this.#client.duplicate({ autoResubscribe: false });
  }

  /** @internal Calls `listener` once when the user's client has ended for good (they quit it). */
  onEnd(listener: () => void): void {
    this.#client.once('end', listener);
  }
}
