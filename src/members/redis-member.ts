/**
 * One member of the quorum: the user's client, through its library's adapter (src/clients/), with
 * our scripts on it. The client stays the user's: quorumlock never quits or subscribes
 * with it. What differs by topology
 * (keys, epochs, server facts: members/topology.ts) is here for a member that is one server
 * (serverTopology) and in members/cluster.ts for a Cluster; the rest is what all share: the
 * scripts, one ordered path for our calls, and the server watch.
 */
import { connectionOf, type Connection, type MemberClient, type Subscription } from '../clients/index.js';
import type { Logger } from '../diagnostics.js';
import { BINDABLE, type Bindable, type ScriptName } from '../store/scripts.js';
import { bindingOf, type BoundCopies, type ScriptBinding } from './binding.js';
import { batchOf, type CallBatch } from './batching.js';
import { BATCHED, type Batched } from '../store/batch.js';
import {
  acquireArgs,
  decodeAcquire,
  decodeEpoch,
  type EpochReading,
  decodeExtend,
  decodeFence,
  decodeLeaderRead,
  decodePermits,
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
  type PermitCounts,
  type AcquireVote,
} from '../store/protocol.js';
import { EPOCH_KEY, leaderRecordKey, readersKeysIn, resourceKeys } from '../store/keys.js';
import { clusterTopology } from './cluster.js';
import type { ExtendCall, FenceCall, LeaveCall, Member, Open, ReleaseCall } from './member.js';
import type { Topology } from './topology.js';
import { watchServer, type ServerWatch } from './watch.js';
import { epochBookOf, type EpochBook, type EpochReader } from './epochs.js';
import { codes, epochTooNewError, notMasterError, sameServerAs } from '../errors.js';
import { serverFacts } from '../store/server.js';
import type { Clock } from '../clock/index.js';
import { hearingOf, type Hearing } from './hearing.js';

/**
 * resourceKeys() for an array of resources, remembered for the last array asked: a round asks
 * for the same array once per member, one after another. (Not a WeakMap per array: at thousands
 * of acquires a second its ephemerons cost the garbage collector more than the keys cost to make.)
 */
let lastKeys: { resources: readonly string[]; keys: readonly string[] } | undefined;

function keysOf(resources: readonly string[]): readonly string[] {
  if (lastKeys?.resources !== resources) lastKeys = { resources, keys: resourceKeys(resources) };
  return lastKeys.keys;
}

/** A write's KEYS, the epoch hash last (#call), remembered for the last keys asked: a round's members are asked for the same array in turn (keysOf). */
let lastBound: { keys: readonly string[]; epochKey: string; all: readonly string[] } | undefined;

function keysWithEpoch(keys: readonly string[], epochKey: string): readonly string[] {
  if (lastBound?.keys !== keys || lastBound.epochKey !== epochKey) lastBound = { keys, epochKey, all: [...keys, epochKey] };
  return lastBound.all;
}

const EPOCH_KEYS = [EPOCH_KEY] as const;

/**
 * The topology of a member that is one server: a master, or a Sentinel-managed group (the client
 * follows its master). One epoch hash for the whole server. A client with a keyPrefix (ioredis)
 * applies it to every key, ours included, so the names here are unprefixed.
 */
export function serverTopology(client: Connection): Topology {
  return {
    keysOf,
    epochKeyOf: () => EPOCH_KEY,
    everyEpochKey: () => EPOCH_KEYS,
    // A stand-in client without INFO (the drift simulator's) has no facts to read.
    readFacts:
      client.info === undefined
        ? undefined
        : (
            (info) => () =>
              info().then(serverFacts)
          )(client.info),
    oneSocket: true,
  };
}

/**
 * One script call, as data: which script, its keys and its arguments, and for a write the epoch
 * hash it is bound to (#write fills in the epoch id: members/epochs.ts).
 */
interface ScriptCall {
  script: ScriptName;
  keys: readonly string[];
  args: readonly string[];
  epochKey?: string;
}

/** An operator's call as a member sees it: how long ago it began, and whether it still waits. */
export interface OperatorCall {
  ageMs(): number;
  open: Open;
}

/** Cleanups (release, leave) are wanted until they ran: see release(). */
const always: Open = () => true;

export class RedisMember implements Member {
  readonly id: string;
  /** A Redis Cluster (members/cluster.ts). */
  readonly isCluster: boolean;
  /** The client's keyPrefix: on a cluster, slots are those of the prefixed keys. */
  readonly keyPrefix: string;
  readonly #client: Connection;
  readonly #topology: Topology;
  readonly #server: ServerWatch;
  /** Bound copies of the scripts that read the run id, when this member's server allows them (binding.ts). */
  readonly #binding: ScriptBinding;
  /** The connection's batch of acquire and release calls (batching.ts), by the bound copies only. */
  readonly #batch: CallBatch;
  /** Set by the Redlock when another of its members is the same server (by run id). */
  #duplicateOf: string | undefined;
  /** The epochs last read here, per epoch hash: every write is bound to one (epochs.ts). */
  readonly #epochs: EpochBook;
  readonly #logger: Logger;
  /** Per epoch hash, the epoch whose restart quarantine was logged: once per epoch, not per vote. */
  readonly #quarantineLogged = new Map<string, string>();
  /** Signs of life of a one-socket member's server (hearing.ts), read on `#clock`; undefined on a Cluster. */
  readonly #hearing: Hearing | undefined;
  /** The Redlock's clock: its rounds compare heardAt with their own readings. */
  readonly #clock: Clock;

  constructor(client: MemberClient, logger: Logger, clock: Clock) {
    const connection = connectionOf(client);
    this.#client = connection;
    this.id = connection.id;
    this.isCluster = connection.isCluster;
    this.keyPrefix = connection.keyPrefix;
    this.#topology = connection.isCluster ? clusterTopology(connection) : serverTopology(connection);
    this.#logger = logger;
    this.#hearing = this.#topology.oneSocket ? hearingOf(connection) : undefined;
    this.#hearing?.listen(clock);
    this.#clock = clock;
    this.#server = watchServer(connection, logger, this.#topology.readFacts, this.#hearing);
    const usable = this.#topology.oneSocket && this.#topology.readFacts !== undefined;
    this.#binding = bindingOf({ client: connection, server: this.#server, member: this.id, logger, usable });
    this.#batch = batchOf(connection);
    const single = this.#topology.oneSocket ? this.#topology.everyEpochKey()[0] : undefined;
    this.#epochs = epochBookOf(connection, this.id, this.#epochReader, single);
  }

  /** This member's way to read an epoch, kept here: the client's epoch book holds it weakly (epochs.ts). */
  readonly #epochReader: EpochReader = (epochKey) => this.#readEpoch(epochKey).then(({ id }) => id);

  /** When this member's server last showed life on our connection (hearing.ts), on the Redlock's clock. */
  get heardAt(): number | undefined {
    return this.#hearing?.lastAt(this.#clock);
  }

  /**
   * Sends a script that writes, bound to the epoch last read on `epochKey` (epochs.ts): the only
   * way a writing script is sent. Its KEYS get the epoch hash last, its ARGV the epoch id first.
   */
  #write<R, T = R>(command: ScriptCall & { epochKey: string }, open?: Open, decode?: (reply: R) => T): Promise<T> {
    return this.#epochs.bind<T>(command.epochKey, (epochId, failed) => this.#call(command, epochId, decode, failed), open);
  }

  /**
   * Sends one of our scripts. Every call takes the same path, the connection's ordered one
   * (clients/connection.ts, script), so calls reach the member in the order they were made: a
   * rollback or release is always written after the acquire it undoes (src/quorum/release.ts
   * relies on it). An earlier version wrote some calls through ioredis' auto-pipelining queue,
   * which flushes later: a direct release then overtook its own acquire and left the key behind
   * (docs/internals.md#auto-pipelining). Where the library writes on one socket (ioredis), the
   * first call in a tick corks it and the end of the tick uncorks it (the connection's tick:
   * batching.ts, enter), so the tick's calls share one write syscall; with bound copies, its acquires and releases share one script call too (a
   * batch: batching.ts), and any other call sends the batch before it.
   *
   * The reply is settled here, in the call's one reaction: `decode` (the reply as it is when
   * absent) and, for what it fails with, `failed` (the epoch binding's, epochs.ts). A layer that
   * chained a reaction of its own instead would keep one more promise per call in flight.
   */
  #call<R, T = R>(
    { script, keys, args, epochKey }: ScriptCall,
    epochId?: string,
    decode?: (reply: R) => T | Promise<T>,
    failed?: (error: unknown) => T | Promise<T>,
  ): Promise<T> {
    this.#batch.enter();
    const copies = script in BINDABLE ? this.#boundCopies() : undefined;
    const allKeys = epochKey === undefined ? keys : keysWithEpoch(keys, epochKey);
    const allArgs = epochKey === undefined ? args : [epochId!, ...args];
    // An exclusive acquire or a release by bound copies joins this tick's batch (batching.ts);
    // any other call sends that batch first.
    if (copies !== undefined && script in BATCHED)
      return this.#bound(this.#batch.send(copies, script as Batched, allKeys, allArgs), copies.shas[script as Bindable], decode, failed);
    this.#batch.flush();
    if (copies === undefined) {
      const sent = this.#client.script(script, allKeys, allArgs) as Promise<R>;
      return decode === undefined && failed === undefined ? (sent as Promise<unknown> as Promise<T>) : sent.then(decode, failed);
    }
    // A bound copy: by EVALSHA only, never EVAL (binding.ts), on the same ordered path.
    const sha = copies.shas[script as Bindable];
    return this.#bound(this.#client.evalsha!(sha, allKeys, allArgs), sha, decode, failed);
  }

  /** A bound copy's call settled: a NOSCRIPT says the copy `sha` is not where the call went. */
  #bound<R, T>(sent: Promise<unknown>, sha: string, decode?: (reply: R) => T | Promise<T>, failed?: (error: unknown) => T | Promise<T>): Promise<T> {
    return (sent as Promise<R>).then(decode, (error: Error) => {
      if (error?.message?.includes('NOSCRIPT')) this.#binding.missing(sha);
      if (failed === undefined) throw error;
      return failed(error);
    });
  }

  /**
   * The bound copies to call, or undefined: the generic scripts. Copies only while the server
   * watch says the connection reaches the process they were loaded into (binding.ts has the
   * argument): two fields, compared on every call.
   */
  #boundCopies(): BoundCopies | undefined {
    const copies = this.#binding.current;
    return copies !== undefined && copies.runId === this.#server.runId ? copies : undefined;
  }

  acquire(resources: readonly string[], request: AcquireRequest, open?: Open): Promise<AcquireVote> {
    const epochKey = this.#topology.epochKeyOf(resources);
    const script = isShared(request.value) ? 'quorumlockAcquireShared' : 'quorumlockAcquire';
    // `settled` is read when the call is bound (after a first epoch read, if one was needed).
    let settled = '';
    // The reply, the refusal and the decoding in the call's one reaction (#call): per member and attempt.
    return this.#epochs.bind<AcquireVote>(
      epochKey,
      (epochId, failed) => {
        settled = this.#epochs.settledId(epochKey, request.quarantineMs);
        const call: ScriptCall = { script, keys: this.#topology.keysOf(resources), args: acquireArgs(request, settled), epochKey };
        return this.#call(
          call,
          epochId,
          (reply: number | unknown[]) => this.#acquired(epochKey, decodeAcquire(reply, settled, request.fencing), request.quarantineMs),
          failed,
        );
      },
      open,
      (error) => {
        // A server that is not a plain master set nothing and never counts, as before the binding:
        // the server watch's reason when it has one (it says why: a replica, an INFO without a role).
        if ((error as { code?: string }).code === codes.QUORUMLOCK_ERR_NOT_MASTER)
          return { vote: 'quarantined', quarantinedForMs: NOT_COUNTING, notCounting: this.notCounting ?? 'not a master' } satisfies AcquireVote;
        throw error;
      },
    );
  }

  /** What an acquire's decoded reply counts as here: a refusal as it is; a yes once this member's server is known, if it may count. */
  #acquired(epochKey: string, vote: AcquireVote, quarantineMs: number): AcquireVote | Promise<AcquireVote> {
    if (vote.vote === 'taken' || vote.vote === 'queued') return vote;
    if (vote.vote === 'quarantined') this.#logQuarantine(epochKey, vote);
    // A client that was still connecting ran our call before its INFO ('ready' fires after
    // ioredis flushed its queues): wait for that reading before this yes may count.
    if (this.#server.facts === undefined) return this.#server.firstReading.then(() => this.#counting(epochKey, vote, quarantineMs));
    return this.#counting(epochKey, vote, quarantineMs);
  }

  #counting(epochKey: string, vote: AcquireVote, quarantineMs: number): AcquireVote {
    // Past its quarantine: remember the epoch, so the script can skip reading the time next time.
    if (vote.epoch?.settled) this.#epochs.settle(epochKey, vote.epoch.id, quarantineMs);
    const why = this.notCounting;
    if (why === undefined) return vote;
    // A member that must not count answers quarantined for good, with the reason.
    vote.vote = 'quarantined';
    vote.quarantinedForMs = NOT_COUNTING;
    vote.notCounting = why;
    return vote;
  }

  /**
   * A member in its restart quarantine makes locks fail for up to maxLockTtl with nothing wrong
   * on it: an operator should see why at info, once per epoch (the votes repeat it on every attempt).
   */
  #logQuarantine(epochKey: string, vote: AcquireVote): void {
    const epoch = vote.epoch?.id ?? '';
    if (this.#quarantineLogged.get(epochKey) === epoch) return;
    this.#quarantineLogged.set(epochKey, epoch);
    this.#logger.info(
      { member: this.id, epoch, quarantinedForMs: vote.quarantinedForMs },
      'member is in its restart quarantine (its data is younger than maxLockTtl): its votes do not count until it ends',
    );
  }

  get notCounting(): string | undefined {
    if (this.#duplicateOf !== undefined) return sameServerAs(this.#duplicateOf);
    return this.#server.why;
  }

  /**
   * A call of a script that keeps lines: its KEYS are resourceKeys, bound to their epoch hash.
   * Built whole, not spread into a literal: once per member and release (docs/internals.md, "Object spread on Node 20").
   */
  #lineCall(script: 'quorumlockRelease' | 'quorumlockLeave', resources: readonly string[], args: readonly string[]): ScriptCall & { epochKey: string } {
    return { script, keys: this.#topology.keysOf(resources), args, epochKey: this.#topology.epochKeyOf(resources) };
  }

  extend(resources: readonly string[], call: ExtendCall, open?: Open): Promise<ExtendReply> {
    const shared = isShared(call.value);
    const keys = shared ? this.#topology.keysOf(resources) : resources;
    const script = shared ? 'quorumlockExtendShared' : 'quorumlockExtend';
    return this.#write({ script, keys, epochKey: this.#topology.epochKeyOf(resources), args: extendArgs(call) }, open, decodeExtend);
  }

  /**
   * A release (or a leave) refused for another epoch is always sent again, bound to the epoch
   * found, whether or not its round still waits: it only takes away what is ours, and it must
   * follow an acquire that was itself sent again into that epoch (calls keep their order, so the
   * acquire's second copy is written before this one's).
   */
  release(resources: readonly string[], call: ReleaseCall): Promise<number> {
    return this.#write(this.#lineCall('quorumlockRelease', resources, releaseArgs(call)), always);
  }

  leave(resources: readonly string[], call: LeaveCall): Promise<number> {
    return this.#write(this.#lineCall('quorumlockLeave', resources, leaveArgs(call)), always);
  }

  /**
   * Whether a yes of this member may count now, as acquire() would decide it for its answer:
   * its server facts are read and nothing rules it out (a hand-over, quorum/handover.ts).
   */
  get countsNow(): boolean {
    return this.#server.facts !== undefined && this.notCounting === undefined;
  }

  // async: a fence sync after a won round catches what a member throws (quorum/fence.ts); a throw here must reject, not escape.
  async fence(resources: readonly string[], call: FenceCall, open?: Open): Promise<FenceReply> {
    // A shared value holds by its reader entries: fence.lua checks those (the last n of keysOf).
    const keys = isShared(call.value) ? [...resources, ...readersKeysIn(this.#topology.keysOf(resources), resources.length)] : resources;
    return this.#write({ script: 'quorumlockFence', keys, epochKey: this.#topology.epochKeyOf(resources), args: fenceArgs(call) }, open, decodeFence);
  }

  // --- for the Redlock, the CLI and the waiting line; not part of the algorithm's Member ---------

  /** Elections (src/election/): writes the leader record of `resource` if its lock holds `value` here (election.lua). */
  writeLeader(resource: string, value: string, term: number, id: string): Promise<boolean> {
    const keys = [resource, leaderRecordKey(resource, this.keyPrefix)];
    return this.#write(
      { script: 'quorumlockLeader', keys, epochKey: this.#topology.epochKeyOf([resource]), args: writeLeaderArgs(value, term, id) },
      undefined,
      (reply: number) => reply === 1,
    );
  }

  /**
   * Elections: the leader record of `resource` as this member has it, with its lock key's PTTL and
   * the member's quarantine left (of `quarantineMs`, 0 = off) in the epoch of that slot (election.lua).
   */
  readLeader(resource: string, quarantineMs: number): Promise<LeaderReading> {
    const keys = [resource, leaderRecordKey(resource, this.keyPrefix), this.#topology.epochKeyOf([resource])];
    return this.#call({ script: 'quorumlockElection', keys, args: readLeaderArgs(quarantineMs) }, undefined, decodeLeaderRead);
  }

  /**
   * Semaphores (src/semaphore/): each permit's lock key PTTL and line length here (permits.lua), on
   * the ordered path like every call. A read: bound to no epoch. `resources`: the permit keys.
   */
  readPermits(resources: readonly string[]): Promise<PermitCounts> {
    return this.#call({ script: 'quorumlockPermits', keys: this.#topology.keysOf(resources), args: [] }, undefined, (reply: unknown) =>
      decodePermits(reply, resources.length),
    );
  }

  /** The epoch of `epochKey` as the member has it now (epoch.lua): its id, and how long ago it began. */
  #readEpoch(epochKey: string): Promise<EpochReading> {
    return this.#call(
      { script: 'quorumlockEpoch', keys: [epochKey], args: [] },
      undefined,
      (reply: unknown) => {
        // Answered: the writes bound to this epoch go out now, behind it on the same socket.
        this.#hearing?.heard();
        return decodeEpoch(reply);
      },
      (error: unknown) => {
        throw (error as Error)?.message?.startsWith('QUORUMLOCK_ROLE') ? notMasterError(this.id) : error;
      },
    );
  }

  /**
   * Declares this member's current epoch brand new (trust.lua 'new'): ends its quarantine
   * whatever ttl callers use, absent fence counters read as 0. Resolves with the quarantine ms
   * (of `quarantineMs`) that were left. On a cluster, for every slot's epoch.
   */
  trust(quarantineMs: number, call: OperatorCall): Promise<number> {
    return this.#onEveryEpoch(trustArgs('new', quarantineMs), call);
  }

  /** Raises the fence counter of the current epoch to at least `floor` and trusts it (trust.lua 'floor'). */
  restoreFencing(floor: number, call: OperatorCall): Promise<number> {
    return this.#onEveryEpoch(trustArgs('floor', floor), call);
  }

  /**
   * The largest reply of trust.lua on every epoch hash of the member, each call bound to the epoch
   * read for it in this call (#write). An operator speaks of the members as they were when the
   * call began, so a reading that may be of another epoch than the one there then is refused, not
   * trusted:
   * - one that may come from another server process: the connection was lost when the call began,
   *   or became ready again meanwhile (ioredis re-sends an unanswered read to a restarted
   *   process). A client's very first connection is the one meant (a one-off script's): for it the
   *   call begins when it is first ready. A Cluster's node restarts do not show in its client's
   *   readiness: there the age below and the binding of the write hold;
   * - an epoch that replaced another after the call began (`callAgeMs`, on the Redlock's clock),
   *   over the same connection, on data of a lineage the client had not read when the call began:
   *   a failover or failback, a resync during the call. (One replaced by this very read, for a
   *   lineage change the member's INFO showed before the call, is the member the operator saw.)
   *   An epoch that began on a member with no hash at all (`fresh`) is the new member the
   *   operator means to trust (a restart shows in the connection, above; a FLUSHALL or an
   *   eviction during the call do not: docs/api.md).
   */
  async #onEveryEpoch(args: string[], { ageMs: callAgeMs, open }: OperatorCall): Promise<number> {
    // A Cluster: the processes of its master nodes when the call began. An epoch read from any
    // other (a node restarted, a replica promoted during the call: ioredis re-sends the read to
    // it) is refused, fresh or not (the client's readiness does not show a node's restart).
    const processes = await this.#topology.processes?.();
    let failed = false;
    // What the client read of its server before the call began (undefined: nothing yet, then an
    // epoch that replaced another during the call is refused; the next call will have read it).
    const known = this.#server.facts;
    // Never connected, not one that lost its connection before this Redlock was made.
    const first = this.#server.connections === 0 && !this.#client.everRetried;
    const connection = first ? 1 : this.#server.connections;
    const ready = first || this.#client.state === 'ready';
    const replies = await Promise.all(
      this.#topology.everyEpochKey().map(async (key) => {
        const { id, ageMs, fresh, runId, replid } = await this.#readEpoch(key);
        const seen = known !== undefined && known.runId === runId && known.replid === replid;
        const began = (!fresh && !seen && ageMs < callAgeMs()) || (processes !== undefined && !processes.has(runId));
        // One refusal stops the call's other writes: no member is left half-trusted in silence.
        if (!ready || this.#server.connections !== connection || began || failed) {
          failed = true;
          throw epochTooNewError(this.id, id);
        }
        // Past the call's deadline it was reported as not answering: it must not write after all.
        if (!open()) throw new Error(`quorumlock: ${this.id} answered after the call's deadline: nothing written`);
        this.#epochs.adopt(key, id);
        return this.#write<number>({ script: 'quorumlockTrust', keys: [], epochKey: key, args });
      }),
    );
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
    return this.#server.identity;
  }

  /** The role this member reported at its last (re)connect or refresh: 'master', 'slave', ... */
  get role(): string | undefined {
    return this.#server.facts?.role;
  }

  /** The Redlock marks a member that is another member's server under another address. */
  markDuplicate(of: string | undefined): void {
    this.#duplicateOf = of;
  }

  /** Calls `listener` after every reading of the server's INFO, until the returned function is called. */
  onServerFacts(listener: () => void): () => void {
    const listeners = this.#server.listeners;
    listeners.add(listener);
    return () => listeners.delete(listener);
  }

  /** Whether the user quit this member's client: nothing of ours may reconnect it or copy it. */
  get clientEnded(): boolean {
    return this.#client.state === 'ended';
  }

  /** A new connection with the client's options, for SUBSCRIBE; its owner must close it (clients/connection.ts). */
  subscriber(wanted: () => boolean): Subscription {
    return this.#client.subscriber(wanted);
  }

  /**
   * Calls `listener` once when the user's client has ended for good (they quit it). Returns what
   * stops listening: the client outlives the listener's owner (a Redlock that quits).
   */
  onEnd(listener: () => void): () => void {
    const once = () => {
      this.#client.off('end', once);
      listener();
    };
    this.#client.on('end', once);
    return () => this.#client.off('end', once);
  }
}
