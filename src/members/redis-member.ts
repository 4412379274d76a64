/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it. What differs by topology
 * (keys, epochs, server facts) is in members/server.ts and members/cluster.ts; here is what all
 * share: the scripts, one ordered path for our calls, and the server watch.
 */
import { Command, type Redis } from 'ioredis';
import { nextTick } from 'node:process';
import type { Logger } from '../options/settings.js';
import { BINDABLE, keepOutOfAutoPipelining, registerScripts, scriptCommand, type Bindable, type ScriptCommand, type ScriptName } from '../store/scripts.js';
import { bindingOf, type ScriptBinding } from './binding.js';
import {
  acquireArgs,
  decodeAcquire,
  decodeExtend,
  decodeFence,
  decodeLeaderRead,
  extendArgs,
  fenceArgs,
  isShared,
  leaveArgs,
  NOT_COUNTING,
  releaseArgs,
  readLeaderArgs,
  trustArgs,
  writeLeaderArgs,
  type AcquireRequest,
  type ExtendReply,
  type FenceReply,
  type LeaderReading,
  type Locked,
  type Refusal,
} from '../store/protocol.js';
import { leaderRecordKey, readersKeysIn } from '../store/keys.js';
import { clusterTopology } from './cluster.js';
import { isClusterClient, keyPrefixOf, memberId, type MemberClient } from './id.js';
import type { Member } from './member.js';
import { serverTopology } from './server.js';
import type { Topology } from './topology.js';
import { watchServer, type ServerWatch } from './watch.js';
import { serverIdentity, whyNotCounting } from '../store/server.js';

/** Calls per socket write in a burst (#call). Each of our calls is 1 to 3 buffers for ioredis. */
const CORK_BATCH = 256;

export class RedisMember implements Member {
  readonly id: string;
  /** An ioredis Cluster (members/cluster.ts). */
  readonly isCluster: boolean;
  /** The client's keyPrefix: on a cluster, slots are those of the prefixed keys. */
  readonly keyPrefix: string;
  readonly #client: Redis;
  /** Our scripts' commands on the client (registerScripts), by script. */
  readonly #commands = new Map<ScriptName, ScriptCommand>();
  readonly #topology: Topology;
  readonly #server: ServerWatch;
  /** Bound copies of the scripts that read the run id, when this member's server allows them (binding.ts). */
  readonly #binding: ScriptBinding;
  /** Set by the Redlock when another of its members is the same server (by run id). */
  #duplicateOf: string | undefined;
  /** Per epoch key: the epoch (its id) last seen past a quarantine of `quarantineMs`. */
  readonly #settled = new Map<string, { id: string; quarantineMs: number }>();

  constructor(client: MemberClient, logger: Logger) {
    this.id = memberId(client);
    this.isCluster = isClusterClient(client);
    this.keyPrefix = keyPrefixOf(client);
    this.#commandOptions = { replyEncoding: 'utf8', keyPrefix: this.keyPrefix || undefined };
    this.#topology = isClusterClient(client) ? clusterTopology(client, this.keyPrefix) : serverTopology(client);
    // Typed as a Redis from here on: a Cluster has every method used below.
    this.#client = client as Redis;
    registerScripts(this.#client);
    // One ordered path for our calls, whatever the user's enableAutoPipelining says (see #call).
    keepOutOfAutoPipelining(client as Redis);
    this.#server = watchServer(client, this.id, logger, this.#topology.readFacts);
    this.#binding = bindingOf(client as Redis, this.#server, this.id, logger, this.#topology.oneSocket && this.#topology.readFacts !== undefined);
  }

  /** Options of our EVALSHA commands: the same for every call. */
  readonly #commandOptions: { replyEncoding: 'utf8'; keyPrefix: string | undefined };

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
  #call<T>(script: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<T> {
    // libuv writes at most 1024 buffers per writev: a burst of thousands of calls in one corked
    // tick would go out a thousand per event-loop turn. Flushing every CORK_BATCH calls keeps a
    // burst one write per batch, all in this tick, still in call order.
    if (this.#corked !== undefined && ++this.#corkedCalls >= CORK_BATCH) {
      this.#corkedCalls = 0;
      this.#corked.uncork();
      this.#corked.cork();
    }
    if (this.#corked === undefined && this.#topology.oneSocket) {
      const stream = (this.#client as { stream?: { cork(): void; uncork(): void; writable?: boolean } }).stream;
      if (stream && typeof stream.cork === 'function' && stream.writable && this.#client.status === 'ready') {
        stream.cork();
        this.#corked = stream;
        this.#corkedCalls = 0;
        nextTick(() => {
          this.#corked = undefined;
          stream.uncork();
        });
      }
    }
    const sha = script in BINDABLE ? this.#binding.shaFor(script as Bindable) : undefined;
    // Arguments as strings: what ioredis would make of numbers anyway, one conversion fewer each.
    if (sha === undefined) {
      let command = this.#commands.get(script);
      if (command === undefined) this.#commands.set(script, (command = scriptCommand(this.#client, script)));
      return command(String(keys.length), ...keys, ...args) as Promise<T>;
    }
    // A bound copy: by EVALSHA only, never EVAL (binding.ts). The same write path as every other
    // call (sendCommand is what the script commands end in), so the order of calls is kept.
    const command = new Command('evalsha', [sha, String(keys.length), ...keys, ...args], this.#commandOptions);
    return (this.#client.sendCommand(command) as Promise<T>).catch((error: Error) => {
      if (error.message.includes('NOSCRIPT')) this.#binding.missing(sha);
      throw error;
    });
  }

  async acquire(resources: readonly string[], request: AcquireRequest): Promise<Locked | Refusal> {
    const epochKey = this.#topology.epochKeyOf(resources);
    const known = this.#settled.get(epochKey);
    const settled = known !== undefined && known.quarantineMs === request.quarantineMs ? known.id : '';
    const script = isShared(request.value) ? 'quorumlockAcquireShared' : 'quorumlockAcquire';
    const reply = await this.#call<number | unknown[]>(script, this.#topology.keysAndEpochOf(resources), acquireArgs(request, settled));
    const answer = decodeAcquire(reply, settled, request.fencing);
    if ('why' in answer) return answer;
    // A client that was still connecting ran our call before its INFO ('ready' fires after
    // ioredis flushed its queues): wait for that reading before this yes may count.
    if (this.#server.facts === undefined) await this.#server.firstReading;
    // Past its quarantine: remember the epoch, so the script can skip reading the time next time.
    if (answer.quarantinedForMs === 0 && answer.epoch !== undefined) this.#settled.set(epochKey, { id: answer.epoch, quarantineMs: request.quarantineMs });
    const why = answer.notCounting ?? this.notCounting;
    return why === undefined ? answer : { ...answer, quarantinedForMs: NOT_COUNTING, notCounting: why };
  }

  get notCounting(): string | undefined {
    if (this.#duplicateOf !== undefined) return `the same server as ${this.#duplicateOf}`;
    return this.#server.facts && whyNotCounting(this.#server.facts);
  }

  extend(resources: readonly string[], value: string, ttlMs: number): Promise<ExtendReply> {
    if (isShared(value)) return this.#call<number>('quorumlockExtendShared', this.#topology.keysOf(resources), extendArgs(value, ttlMs)).then(decodeExtend);
    return this.#call<number>('quorumlockExtend', resources, extendArgs(value, ttlMs)).then(decodeExtend);
  }

  release(resources: readonly string[], value: string, leaving?: string, abandoned?: string): Promise<number> {
    return this.#call('quorumlockRelease', this.#topology.keysAndEpochOf(resources), releaseArgs(value, leaving, abandoned));
  }

  leave(resources: readonly string[], waiterId: string, abandoned?: string): Promise<number> {
    return this.#call('quorumlockLeave', this.#topology.keysAndEpochOf(resources), leaveArgs(waiterId, abandoned));
  }

  /**
   * Whether a yes of this member may count now, as acquire() would decide it for its answer:
   * its server facts are read and nothing rules it out (a hand-over, quorum/handover.ts).
   */
  get countsNow(): boolean {
    return this.#server.facts !== undefined && this.notCounting === undefined;
  }

  async fence(resources: readonly string[], value: string, token: number, mode: 'propose' | 'sync', epoch: string, floor?: number): Promise<FenceReply> {
    const reply = await this.#call<unknown[]>(
      'quorumlockFence',
      // A shared value holds by its reader entries: fence.lua checks those (the last n of keysOf).
      isShared(value)
        ? [...resources, ...readersKeysIn(this.#topology.keysOf(resources), resources.length), this.#topology.epochKeyOf(resources)]
        : [...resources, this.#topology.epochKeyOf(resources)],
      fenceArgs(value, token, mode, epoch, floor),
    );
    return decodeFence(reply);
  }

  // --- for the Redlock, the CLI and the waiting line; not part of the algorithm's Member ---------

  /** Elections (src/election/): writes the leader record of `resource` if its lock holds `value` here (election.lua). */
  writeLeader(resource: string, value: string, term: number, id: string): Promise<boolean> {
    return this.#call<number>('quorumlockElection', [resource, leaderRecordKey(resource, this.keyPrefix)], writeLeaderArgs(value, term, id)).then(
      (reply) => reply === 1,
    );
  }

  /** Elections: the leader record of `resource` as this member has it, with its lock key's PTTL (election.lua). */
  readLeader(resource: string): Promise<LeaderReading> {
    return this.#call<unknown>('quorumlockElection', [resource, leaderRecordKey(resource, this.keyPrefix)], readLeaderArgs()).then(decodeLeaderRead);
  }

  /**
   * Declares this member's current epoch brand new (trust.lua 'new'): ends its quarantine
   * whatever ttl callers use, absent fence counters read as 0. Resolves with the quarantine ms
   * (of `quarantineMs`) that were left. On a cluster, for every slot's epoch.
   */
  trust(quarantineMs: number): Promise<number> {
    return this.#onEveryEpoch('new', quarantineMs);
  }

  /** Raises the fence counter of the current epoch to at least `floor` and trusts it (trust.lua 'floor'). */
  restoreFencing(floor: number): Promise<number> {
    return this.#onEveryEpoch('floor', floor);
  }

  /** The largest reply of trust.lua on every epoch hash of the member. */
  async #onEveryEpoch(mode: 'new' | 'floor', n: number): Promise<number> {
    const replies = await Promise.all(this.#topology.everyEpochKey().map((key) => this.#call<number>('quorumlockTrust', [key], trustArgs(mode, n))));
    return Math.max(...replies);
  }

  /** @internal The bound script copies in use, if any (binding.ts). */
  get bound(): { runId: string; shas: Record<Bindable, string> } | undefined {
    return this.#binding.current;
  }

  /**
   * What names the server for the duplicate check, at its last reading: its run id, or its
   * replication id where the engine has no run id (Dragonfly); undefined before the first
   * reading, or on a Cluster.
   */
  get serverId(): string | undefined {
    return this.#server.facts && serverIdentity(this.#server.facts);
  }

  /** The role this member reported at its last (re)connect or refresh: 'master', 'slave', ... */
  get role(): string | undefined {
    return this.#server.facts?.role;
  }

  /** The Redlock marks a member that is another member's server under another address. */
  markDuplicate(of: string | undefined): void {
    this.#duplicateOf = of;
  }

  /** Calls `listener` after every reading of the server's INFO. */
  onServerFacts(listener: () => void): void {
    this.#server.listeners.add(listener);
  }

  /** A new connection with the client's options, for SUBSCRIBE; its owner must close it. */
  subscriber(wanted: () => boolean): Redis {
    // Re-subscribing after a reconnect is the subscriber's own job (waiting/notifications.ts), with
    // every promise handled: ioredis' autoResubscribe leaves its SUBSCRIBE unhandled.
    // It reconnects as the user's client would, but only while someone waits: a member that is
    // down must not keep reconnect timers (and the process) alive after the last wait, also when
    // the user disconnects a client that never connected (ioredis emits no 'end' for it then).
    const userStrategy = this.#client.options.retryStrategy;
    return this.#client.duplicate({
      autoResubscribe: false,
      retryStrategy: (times: number) => (wanted() ? (userStrategy ? userStrategy(times) : Math.min(times * 50, 2000)) : null),
    });
  }

  /** Calls `listener` once when the user's client has ended for good (they quit it). */
  onEnd(listener: () => void): void {
    this.#client.once('end', listener);
  }
}
