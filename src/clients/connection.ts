/**
 * The one boundary between quorumlock and a Redis client library: what a member needs of the
 * user's client, and nothing more (go-redsync's `Conn`, one small adapter per driver). Each
 * supported library has one adapter in this folder (ioredis.ts for ioredis and iovalkey,
 * node-redis.ts, glide.ts); connectionOf (index.ts) picks it. Nothing above this folder imports a
 * client library or calls a client's own methods.
 *
 * What each library does with a command that was written but not answered when its socket
 * closed, with commands made while disconnected, with ordering, and on reconnect differs, and the
 * safety of the lock must not depend on it: docs/clients.md says what each does and how the layers
 * above keep their guarantees whichever it is (a write is bound to its epoch: members/epochs.ts).
 */
import type { ScriptName } from '../store/scripts.js';

/** The adapter a connection comes from, as logs and errors name it ('ioredis' serves iovalkey too: one API). */
export type Library = 'ioredis' | 'node-redis' | 'glide';

/** What happens to a connection: 'ready' at each (re)connect, 'close' when it is lost, 'end' once, for good. */
export type ConnectionEvent = 'ready' | 'close' | 'end';

export interface Connection {
  readonly library: Library;
  /** How votes, logs and duplicate checks name the member: host:port/db, cluster:nodes, ... */
  readonly id: string;
  /** The prefix the library adds to every key (ioredis' keyPrefix); '' for the others. */
  readonly keyPrefix: string;
  /** A Redis Cluster: each call goes to the node that owns its first key's slot. */
  readonly isCluster: boolean;
  /**
   * 'ready': a command written now goes to a connected server; 'waiting': never asked to connect
   * (a lazy client); 'ended': closed for good; 'connecting' otherwise.
   */
  readonly state: 'ready' | 'waiting' | 'connecting' | 'ended';
  /**
   * Whether this client may have lost a connection before we first saw it (a reconnect attempt
   * counted): an operator's call made on a client that never connected is meant for the server
   * it will first reach.
   */
  readonly everRetried: boolean;
  /**
   * Whether the library writes again, after a reconnect, a command that was written but not
   * answered when the socket closed (ioredis, iovalkey). The layers above never rely on the
   * answer (every write is bound to its epoch); bound script copies need it false or a way around.
   */
  readonly resends: boolean;
  /**
   * Whether 'ready' means the server answered on the new connection: the library fires it only
   * after a reply of its own (ioredis' ready check, an INFO, unless enableReadyCheck is false).
   * Then a round may take it as a sign of life (members/hearing.ts). false where the library may
   * fire it with nothing heard, or where that is not known.
   */
  readonly readyIsAnswer: boolean;
  on(event: ConnectionEvent, listener: () => void): void;
  off(event: ConnectionEvent, listener: () => void): void;
  /**
   * Runs one of our scripts with `keys` and `args` (EVALSHA, and EVAL on NOSCRIPT). Calls made
   * one after another reach the server in that order: a release is never written before the
   * acquire it undoes (src/quorum/release.ts relies on it; adapters of libraries that do not keep
   * order themselves chain the calls).
   */
  script(name: ScriptName, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /**
   * INFO (of `section`, or the default sections), as the server's text; on a Cluster, of one
   * node. undefined only for a test's stand-in client: its member is taken as a plain master.
   */
  readonly info: ((section?: string) => Promise<string>) | undefined;
  /**
   * Sends one command as it is (`args`: its name, then its arguments) and resolves with the reply.
   * Not for the lock's calls (they are script()'s): for quorumlock/testing and the CLI.
   */
  command(args: readonly string[]): Promise<unknown>;
  /**
   * Starts connecting a lazy client (state 'waiting'); resolves once ready, rejects if it fails.
   * Only for quorumlock/testing and the CLI: a Redlock never connects the user's client.
   */
  connect(): Promise<void>;
  /** A Cluster: INFO of each master node, as that node's text. */
  readonly masters?: ((section?: string) => Promise<string[]>) | undefined;
  /**
   * Holds the socket's writes until the end of the tick, when the library writes our calls on one
   * socket in call order (ioredis): the tick's calls then share one write. undefined: nothing to do.
   */
  readonly cork?: (() => (() => void) | undefined) | undefined;
  /**
   * EVALSHA of a bound script copy (members/binding.ts), on the same ordered path as script(); a
   * NOSCRIPT rejects. Only where the library can also make a loader: else undefined.
   */
  readonly evalsha?: ((sha: string, keys: readonly string[], args: readonly string[]) => Promise<unknown>) | undefined;
  /**
   * A connection of our own to the same server, for loading bound copies: it never re-sends a
   * command, queues nothing while disconnected and never reconnects. undefined: no binding.
   */
  readonly loader?: (() => Loader) | undefined;
  /** A new connection with the client's options, for SUBSCRIBE; `wanted`: whether it should still reconnect. */
  subscriber(wanted: () => boolean): Subscription;
}

/** A one-off connection that loads bound script copies (members/binding.ts). */
export interface Loader {
  connect(): Promise<void>;
  info(section: string): Promise<string>;
  /**
   * MULTI, SCRIPT LOAD of each text, INFO server, EXEC: the SHA of each load and the INFO's text,
   * all from the one process that ran the transaction; rejects if any part failed.
   */
  loadAll(texts: readonly string[]): Promise<{ shas: string[]; info: string }>;
  close(): void;
}

/**
 * A pub/sub connection of ours: subscribe() and unsubscribe() send the command once per call,
 * whatever the library keeps for itself (adapters make its own re-subscription harmless).
 */
export interface Subscription {
  readonly state: Connection['state'];
  on(event: ConnectionEvent, listener: () => void): void;
  onMessage(listener: (channel: string, message: string) => void): void;
  onError(listener: (error: Error) => void): void;
  /** Starts a lazy connection; never rejects (a failure shows as events). */
  connect(): void;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  close(): void;
}
