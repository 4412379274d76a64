/**
 * The adapter for node-redis (the `redis` package, 5 and 6; RESP2 and RESP3): a client from
 * `createClient`. A Cluster from `createCluster` is recognised (describeNodeRedis) but not served
 * yet: nodeRedisConnection refuses it.
 *
 * What node-redis does (docs/clients.md has the table): a command written but not answered when
 * the socket closed is rejected, never written again (resends: false); commands made while
 * disconnected wait in the offline queue (5: no limit; 6: 5 s, then a TimeoutError); calls on one
 * client are written in the order they were made; its 'error' events crash a process that has
 * no listener, so the adapter only watches them (errorMonitor) on the user's client.
 *
 * Nothing here imports node-redis (an optional peer dependency): every call goes through the
 * methods of the client passed in.
 */
import { createHash } from 'node:crypto';
import { EventEmitter, errorMonitor } from 'node:events';
import { scripts, type ScriptName } from '../store/scripts.js';
import type { Connection, ConnectionEvent, Subscription } from './connection.js';
import { address, clusterId } from './id.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- the public shapes stay loose, so that node-redis 5's and 6's generic classes fit as they are */
/** What quorumlock uses of a node-redis client (`createClient()`), typed loosely so 5's and 6's classes fit. */
export interface NodeRedisLike {
  /** Whether the client is open (connected or reconnecting). */
  readonly isOpen: boolean;
  /** Whether commands written now reach a connected server. */
  readonly isReady: boolean;
  /** The options it was made with (socket, database, keyPrefix). */
  readonly options?: object | undefined;
  /** Sends one command as it is: how our scripts are sent. */
  sendCommand(...args: any[]): Promise<any>;
  /** A new client with the same options: our subscriber. */
  duplicate(...args: any[]): any;
  /** Connects it (quorumlock/testing only: a Redlock never connects your client). */
  connect(...args: any[]): Promise<any>;
  /** Its events: ready, error, reconnecting, end. */
  on(event: any, listener: (...args: any[]) => void): unknown;
}

/** A node-redis Cluster (`createCluster()`): recognised, not served yet. */
export interface NodeRedisClusterLike {
  /** Whether the client is open (connected or reconnecting). */
  readonly isOpen: boolean;
  /** The Cluster's master nodes. */
  readonly masters: readonly any[];
  /** A client of one node (a master's INFO). */
  nodeClient(...args: any[]): any;
  /** Sends one command as it is: how our scripts are sent. */
  sendCommand(...args: any[]): Promise<any>;
  /** A new client with the same options: our subscriber. */
  duplicate(...args: any[]): any;
}
/* eslint-enable @typescript-eslint/no-explicit-any */

type Strategy = false | number | ((retries: number, cause: Error) => false | Error | number) | undefined;
interface SocketOptions {
  host?: string;
  port?: number;
  path?: string;
  reconnectStrategy?: Strategy;
}

/** The node-redis surface the adapter calls, typed for its own use. */
interface Client {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly socketEpoch?: number;
  readonly options?: { socket?: SocketOptions; database?: number; keyPrefix?: string | Buffer; rootNodes?: { url?: string; socket?: SocketOptions }[] };
  sendCommand(args: readonly string[], options?: object): Promise<unknown>;
  duplicate(overrides?: object): Client;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: string | symbol, listener: (...args: never[]) => void): unknown;
  subscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[]): Promise<unknown>;
}

/** Whether `client` is a node-redis client or Cluster: never an ioredis or iovalkey one (they have defineCommand). */
export function isNodeRedis(client: object): boolean {
  const c = client as Record<string, unknown>;
  const shaped = typeof c.sendCommand === 'function' && typeof c.duplicate === 'function' && typeof c.defineCommand !== 'function' && 'isOpen' in c;
  // node-redis 5's Cluster has no isReady.
  return shaped && ('isReady' in c || isCluster(client));
}

function isCluster(client: object): boolean {
  return 'masters' in client && typeof (client as { nodeClient?: unknown }).nodeClient === 'function';
}

/** The prefix node-redis 6 adds to the keys of its typed commands (`keyPrefix`); '' in 5. */
const keyPrefixOf = (options: NonNullable<Client['options']>) => {
  const prefix = options.keyPrefix;
  return prefix === undefined ? '' : String(prefix);
};

/** How a node-redis client is named (host:port/db, socket/db, cluster:nodes), from its options alone. */
export function describeNodeRedis(user: object): { id: string; isCluster: boolean; keyPrefix: string; refused?: string } {
  const client = user as Client;
  if (typeof (user as { getMasterNode?: unknown }).getMasterNode === 'function')
    return { id: 'sentinel', isCluster: false, keyPrefix: '', refused: 'is a node-redis Sentinel client (createSentinel), which quorumlock does not take yet' };
  // A Cluster keeps its options as _options (5 and 6): it has no public getter.
  const options = client.options ?? (client as { _options?: Client['options'] })._options ?? {};
  if (isCluster(client)) {
    const nodes = (options.rootNodes ?? []).map((node) => (node.url !== undefined ? urlAddress(node.url) : address(node.socket ?? {})));
    return {
      id: clusterId(nodes),
      isCluster: true,
      keyPrefix: keyPrefixOf(options),
      refused: 'is a node-redis Cluster (createCluster), which quorumlock does not take yet',
    };
  }
  // node-redis parses `url` into socket and database when the client is made.
  const socket = options.socket ?? {};
  return { id: `${socket.path ?? address(socket)}/${options.database ?? 0}`, isCluster: false, keyPrefix: keyPrefixOf(options) };
}

const urlAddress = (url: string) => {
  const parsed = new URL(url);
  return address({ host: parsed.hostname || undefined, port: parsed.port || undefined });
};

const shas = Object.fromEntries(Object.entries(scripts).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')])) as Record<
  ScriptName,
  string
>;

/**
 * Our calls' options: the default reply types, whatever `typeMapping` the user set on the client
 * (Buffers, Maps would change what the layers above read).
 */
const COMMAND_OPTIONS = { typeMapping: {} };

/**
 * A reply as RESP2 gives it. Redis 7.0 answers a script's Lua booleans as integers on RESP3 too,
 * but a server that sends RESP3 booleans would otherwise change the shapes read above.
 */
const plain = (reply: unknown): unknown => (typeof reply === 'boolean' ? (reply ? 1 : null) : Array.isArray(reply) ? reply.map(plain) : reply);

/** What the adapter tells of a client's connection: our events, and what node-redis does not keep. */
interface Watch {
  readonly events: EventEmitter;
  readonly ended: boolean;
  readonly reconnects: number;
}

/**
 * Maps node-redis' events to ours: 'ready' at each ready; 'close' once per loss of a ready
 * connection (node-redis says 'error' then 'reconnecting'), before the next 'ready'; 'end' when
 * it is closed (destroy, close, quit) or gives up reconnecting (6: 'terminated'; 5: an 'error'
 * with the client no longer open). Errors are watched through errorMonitor: a client without an
 * 'error' listener of its user's must still crash as it would without us.
 */
function watch(client: Client): Watch {
  const events = new EventEmitter();
  const state = { events, ended: false, reconnects: 0 };
  let up = client.isReady && client.isOpen;
  const lost = () => {
    if (!up || (client.isReady && client.isOpen)) return;
    up = false;
    events.emit('close');
  };
  const end = () => {
    lost();
    if (state.ended || client.isOpen) return;
    state.ended = true;
    events.emit('end');
  };
  client.on('ready', () => {
    up = true;
    state.ended = false;
    events.emit('ready');
  });
  client.on('reconnecting', () => {
    state.reconnects++;
    lost();
  });
  client.on(errorMonitor, () => (client.isOpen ? lost() : end()));
  client.on('end', end);
  client.on('terminated', end);
  return state;
}

function stateOf(client: Client, watched: Watch): Connection['state'] {
  if (client.isOpen) return client.isReady ? 'ready' : 'connecting';
  return watched.ended || (client.socketEpoch ?? 0) > 0 ? 'ended' : 'waiting';
}

/** Resolves once the client is ready; rejects if it ends first. */
async function readyOf(client: Client, watched: Watch): Promise<void> {
  if (client.isOpen && client.isReady) return;
  if (!client.isOpen) {
    await client.connect();
    return;
  }
  await new Promise<void>((resolve, reject) => {
    const ready = () => {
      watched.events.off('end', ended);
      resolve();
    };
    const ended = () => {
      watched.events.off('ready', ready);
      reject(new Error('quorumlock: the node-redis client ended before it was ready'));
    };
    watched.events.once('ready', ready);
    watched.events.once('end', ended);
  });
}

/**
 * EVAL for the first call of each script on a connection, EVALSHA after that, and EVAL again
 * when an EVALSHA meets NOSCRIPT (a SCRIPT FLUSH). A NOSCRIPT also makes every script's next call
 * an EVAL: the fallback is written after the calls made meanwhile (as ioredis' is), so the fewer
 * EVALSHAs that can fail, the fewer calls can run out of order.
 */
function scriptRunner(client: Client, prefix: string) {
  let loaded = new Set<ScriptName>();
  const send = (args: string[]) => client.sendCommand(args, COMMAND_OPTIONS).then(plain);
  return {
    reset: () => void (loaded = new Set()),
    run(name: ScriptName, keys: readonly string[], args: readonly string[]): Promise<unknown> {
      const rest = [String(keys.length), ...(prefix === '' ? keys : keys.map((key) => prefix + key)), ...args];
      if (!loaded.has(name)) {
        loaded.add(name);
        return send(['EVAL', scripts[name], ...rest]);
      }
      return send(['EVALSHA', shas[name], ...rest]).catch((error: Error) => {
        if (!error?.message?.startsWith('NOSCRIPT')) throw error;
        loaded = new Set([name]);
        return send(['EVAL', scripts[name], ...rest]);
      });
    },
  };
}

export function nodeRedisConnection(user: NodeRedisLike): Connection {
  const client = user as unknown as Client;
  if (isCluster(client)) throw new Error('quorumlock: a node-redis Cluster (createCluster) is not supported yet: pass one client per master');
  const { id, keyPrefix } = describeNodeRedis(client);
  const watched = watch(client);
  // node-redis keeps its own prefix out of sendCommand: ours adds it, as ioredis does to our keys.
  const runner = scriptRunner(client, keyPrefix);
  // A new connection may reach a new process, with an empty script cache.
  watched.events.on('ready', runner.reset);
  watched.events.on('close', runner.reset);
  return {
    library: 'node-redis',
    id,
    keyPrefix,
    isCluster: false,
    get state() {
      return stateOf(client, watched);
    },
    get everRetried() {
      return watched.reconnects > 0 || (client.socketEpoch ?? 0) > 1;
    },
    // node-redis rejects a written, unanswered command when its socket closes.
    resends: false,
    on: (event: ConnectionEvent, listener: () => void) => void watched.events.on(event, listener),
    off: (event: ConnectionEvent, listener: () => void) => void watched.events.off(event, listener),
    script: (name, keys, args) => runner.run(name, keys, args),
    info: (section) => client.sendCommand(section === undefined ? ['INFO'] : ['INFO', section], COMMAND_OPTIONS).then(String),
    command: (args) => client.sendCommand([...args], COMMAND_OPTIONS).then(plain),
    connect: () => readyOf(client, watched),
    // No bound copies: binding needs a loader connection that never re-sends and a write path
    // shared with script(); node-redis writes in order on its own, so there is nothing to cork.
    cork: undefined,
    evalsha: undefined,
    loader: undefined,
    subscriber: (wanted) => subscriptionOf(subscriberOf(client, wanted)),
  };
}

/** node-redis' own default: exponential back-off to 2 s with jitter; no retry after a socket timeout. */
function defaultRetry(retries: number, cause: Error): false | number {
  if (cause?.name === 'SocketTimeoutError') return false;
  return Math.min(2 ** retries * 50, 2000) + Math.floor(Math.random() * 200);
}

/**
 * A duplicate of the client, with its options, for SUBSCRIBE. It reconnects as the user's
 * client would, but only while someone waits: a member that is down must not keep reconnect
 * timers (and the process) alive after the last wait. It always has an 'error' listener: its
 * errors are ours to handle (Subscription.onError), not the user's to crash on.
 */
function subscriberOf(client: Client, wanted: () => boolean): Client {
  const socket = client.options?.socket ?? {};
  const user = socket.reconnectStrategy;
  const reconnectStrategy = (retries: number, cause: Error) => {
    if (!wanted()) return false;
    if (typeof user === 'function') return user(retries, cause);
    return user === undefined ? defaultRetry(retries, cause) : user;
  };
  const subscriber = client.duplicate({ socket: { ...socket, reconnectStrategy } });
  subscriber.on('error', () => undefined);
  subscriber.connect().catch(() => undefined);
  return subscriber;
}

/**
 * node-redis keeps a set of listeners per channel and subscribes again by itself after a
 * reconnect (before 'ready'). One listener of ours for every channel: a channel subscribed twice,
 * or again after a reconnect, still delivers each message once. A SUBSCRIBE of a channel it
 * already has is answered at once, with nothing sent: the server has it on this connection.
 */
function subscriptionOf(subscriber: Client): Subscription {
  const watched = watch(subscriber);
  const listeners = new Set<(channel: string, message: string) => void>();
  const deliver = (message: string, channel: string) => {
    for (const listener of listeners) listener(channel, message);
  };
  return {
    get state() {
      return stateOf(subscriber, watched);
    },
    on: (event, listener) => void watched.events.on(event, listener),
    onMessage: (listener) => void listeners.add(listener),
    onError: (listener) => void subscriber.on('error', listener),
    connect: () => void (subscriber.isOpen ? undefined : subscriber.connect().catch(() => undefined)),
    subscribe: (...channels) => subscriber.subscribe(channels, deliver),
    unsubscribe: (...channels) => subscriber.unsubscribe(channels),
    // node-redis 5 throws on destroy() of a client already closed.
    close: () => void (subscriber.isOpen ? subscriber.destroy() : undefined),
  };
}
