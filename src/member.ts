/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it.
 */
import type { Cluster, Redis } from 'ioredis';
import { keepOutOfAutoPipelining, registerScripts, type ScriptCommands } from './lua/scripts.js';
import type { Logger } from './options.js';
import { allClusterEpochKeys, clusterEpochKey, EPOCH_KEY, lineKeys, type Waiter } from './waiting/line.js';

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

/** What the acquire script says when it does not lock: why, for how long, and our place in line. */
export interface Refusal {
  /** 'taken': held by another owner; 'queued': free, but kept for an earlier waiter. */
  why: 'taken' | 'queued';
  /** The longest remaining PTTL among the held keys; undefined when none is held. */
  heldForMs: number | undefined;
  /** 0-based place in line; undefined when not in line. */
  place: number | undefined;
}

/** The keys were set on this member. */
export interface Locked {
  /** > 0: the member's data is younger than the quarantine (or it is not a master): its yes does not count. */
  quarantinedForMs: number;
  /** With fencing: the highest fence counter of the resources here, and whether that reading is trusted. */
  fence?: { highest: number; trusted: boolean };
}

export interface AcquireRequest {
  value: string;
  ttlMs: number;
  waiter: Waiter;
  /** 0 = quarantine off. */
  quarantineMs: number;
  fencing: boolean;
}

/** One role watch per client, however many Redlocks share it: one listener, one ROLE per connect. */
const roles = new WeakMap<Redis, { current: string | undefined }>();

/** ROLE at connect and at every reconnect: a member may come back as a replica. */
function watchRole(client: Redis, id: string, logger: Logger): { current: string | undefined } {
  const known = roles.get(client);
  if (known) return known;
  const role: { current: string | undefined } = { current: undefined };
  roles.set(client, role);
  const check = () => {
    client.role().then(
      (reply) => {
        const current = String((reply as unknown[])[0]);
        if (current !== 'master' && current !== role.current) logger.warn({ member: id, role: current }, 'member is not a master: it will not count toward quorum');
        role.current = current;
      },
      (error: Error) => logger.debug({ member: id, error: error.message }, 'could not read the member role'),
    );
  };
  if (client.status === 'ready') check();
  client.on('ready', check);
  return role;
}

/**
 * What a member can be: an ioredis client (a single master, or a Sentinel-managed group), or an
 * ioredis Cluster. Both offer what quorumlock uses (defineCommand, duplicate, events).
 */
export type MemberClient = Redis | Cluster;

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

  readonly #role: { current: string | undefined };
  /** A single server's connection, whose socket #call corks for a tick; not a Cluster's. */
  readonly #canCork: boolean;
  /** Per epoch key: the epoch (its `since`) last seen past a quarantine of `quarantineMs`. */
  readonly #settled = new Map<string, { since: string; quarantineMs: number }>();
  /** Any positive number marks a non-master as quarantined; it has no end while the role lasts. */
  readonly #roleQuarantine = Number.MAX_SAFE_INTEGER;

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
    // ioredis sends a cluster's writes to the slot's master itself; ROLE would ask a random node.
    this.#role = this.isCluster ? { current: undefined } : watchRole(client, this.id, logger);
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

  /** The socket corked for the current tick (see #call), if any. */
  #corked: { uncork(): void } | undefined;

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
    if (this.#corked === undefined && this.#canCork) {
      const stream = (this.#client as { stream?: { cork?: () => void; uncork(): void; writable?: boolean } }).stream;
      if (stream && typeof stream.cork === 'function' && stream.writable && this.#client.status === 'ready') {
        stream.cork();
        this.#corked = stream;
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
    const settled = known !== undefined && known.quarantineMs === quarantineMs ? known.since : '';
    const reply = await this.#call<number | unknown[]>('quorumlockAcquire', [keys.length, ...keys, value, ttlMs, waiter.id, waiter.ticket, waiter.leaseMs, quarantineMs, fencing ? 1 : 0, settled]);
    // A replica that accepts writes (replica-read-only no) must never count: its key can vanish
    // in a resync, and a failover hands its data, not ours, to the new master.
    const role = this.#role.current;
    const replica = role !== undefined && role !== 'master' ? this.#roleQuarantine : 0;
    if (reply === 1) return { quarantinedForMs: replica };
    const [status, a, b, c, since] = reply as [number, number, number, number, string | undefined];
    // Past its quarantine: remember the epoch, so the script can skip reading the time next time.
    if (status === 1 && since !== undefined) this.#settled.set(epochKey, { since, quarantineMs });
    if (status === 1 || status === 3) {
      const locked: Locked = { quarantinedForMs: Math.max(a!, replica) };
      if (fencing) locked.fence = { highest: b!, trusted: c === 1 };
      return locked;
    }
    return { why: status === 0 ? 'taken' : 'queued', heldForMs: a! >= 0 ? a : undefined, place: b! >= 0 ? b : undefined };
  }

  /** @internal Raises the fence counters of a lock we hold to `token`: {raised, highest before, trusted}. */
  async fence(resources: readonly string[], value: string, token: number, mode: 'propose' | 'sync'): Promise<{ raised: boolean; highest: number; trusted: boolean }> {
    const [raised, highest, trusted] = await this.#call<[number, number, number]>('quorumlockFence', [resources.length + 1, ...resources, this.#epochKey(resources[0]!), value, token, mode]);
    return { raised: raised === 1, highest, trusted: trusted === 1 };
  }

  /**
   * @internal Declares this member brand new: ends its quarantine, absent fence counters read as
   * 0. Resolves with the quarantine ms that were left. On a cluster, for every slot's epoch.
   */
  async trust(quarantineMs: number): Promise<number> {
    if (!this.isCluster) return this.#call('quorumlockTrust', [1, EPOCH_KEY, quarantineMs]);
    const left = await Promise.all(allClusterEpochKeys().map((key) => this.#call<number>('quorumlockTrust', [1, key, quarantineMs])));
    return Math.max(...left);
  }

  /** The role this member reported at its last (re)connect: 'master', 'slave', ... */
  get role(): string | undefined {
    return this.#role.current;
  }

  /** @internal 1 when every key still held `value` and now expires in `ttlMs`, 0 otherwise. */
  extend(resources: readonly string[], value: string, ttlMs: number): Promise<number> {
    return this.#call('quorumlockExtend', [resources.length, ...resources, value, ttlMs]);
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
    return this.#client.duplicate();
  }

  /** @internal Calls `listener` once when the user's client has ended for good (they quit it). */
  onEnd(listener: () => void): void {
    this.#client.once('end', listener);
  }
}
