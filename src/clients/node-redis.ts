/**
 * The adapter for node-redis (the `redis` package, 5 and 6; RESP2 and RESP3): a client from
 * `createClient`, or a Cluster from `createCluster` (each call goes to the master of its first
 * key's slot, by the Cluster's own routing: MOVED and ASK are followed by node-redis).
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
import { slotOf } from '../store/keys.js';
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

/** A node-redis Cluster (`createCluster()`), typed loosely so 5's and 6's classes fit. */
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
  readonly options?: {
    socket?: SocketOptions;
    database?: number;
    keyPrefix?: string | Buffer;
    rootNodes?: { url?: string; socket?: SocketOptions }[];
    commandOptions?: { timeout?: number };
  };
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
    return {
      id: 'sentinel',
      isCluster: false,
      keyPrefix: '',
      refused: 'is a node-redis Sentinel client (createSentinel), which quorumlock does not take yet: use an ioredis, iovalkey or GLIDE client for this member',
    };
  // A Cluster keeps its options as _options (5 and 6): it has no public getter.
  const options = client.options ?? (client as { _options?: Client['options'] })._options ?? {};
  if (isCluster(client)) {
    const nodes = (options.rootNodes ?? []).map((node) => (node.url !== undefined ? urlAddress(node.url) : address(node.socket ?? {})));
    return { id: clusterId(nodes), isCluster: true, keyPrefix: keyPrefixOf(options) };
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
 * The options of every script call of ours on one client or Cluster: one `timeout` for all of them, the
 * one the user set (`commandOptions.timeout`), else none. node-redis applies it only until it
 * writes a call, so calls with one timeout leave its queue in the order they entered it: a late
 * acquire never outlives the rollback or release queued behind it, which then runs after it, as
 * on ioredis (mixed timeouts let the later call time out first). None unless the user set one:
 * node-redis 6 would give each call its default 5 s, through an `AbortSignal.timeout` per call
 * that cost more client CPU than the rest of our call (docs/clients.md); the rounds have deadlines
 * of their own, and node-redis 5 sets none either.
 */
const callOptions = (userTimeout: number | undefined): object => ({ typeMapping: {}, timeout: userTimeout });

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

/**
 * EVAL for the first call of each script on a connection, EVALSHA after that, and EVAL again
 * when an EVALSHA meets NOSCRIPT (a SCRIPT FLUSH). A NOSCRIPT also makes every script's next call
 * an EVAL: the fallback is written after the calls made meanwhile (as ioredis' is), so the fewer
 * EVALSHAs that can fail, the fewer calls can run out of order. `nodeOf` names the connection a
 * call goes to (a Cluster's node, by the call's first key): each has its own script cache.
 */
function scriptRunner(
  send: (args: string[], firstKey: string | undefined) => Promise<unknown>,
  prefix: string,
  nodeOf: (firstKey: string | undefined) => string,
) {
  let loaded = new Map<string, Set<ScriptName>>();
  return {
    reset: () => void (loaded = new Map()),
    run(name: ScriptName, keys: readonly string[], args: readonly string[]): Promise<unknown> {
      const prefixed = prefix === '' ? keys : keys.map((key) => prefix + key);
      const firstKey = prefixed[0];
      const node = nodeOf(firstKey);
      let known = loaded.get(node);
      if (known === undefined) loaded.set(node, (known = new Set()));
      const rest = [String(keys.length), ...prefixed, ...args];
      if (!known.has(name)) {
        known.add(name);
        return send(['EVAL', scripts[name], ...rest], firstKey);
      }
      return send(['EVALSHA', shas[name], ...rest], firstKey).catch((error: Error) => {
        if (!error?.message?.startsWith('NOSCRIPT')) throw error;
        loaded.set(node, new Set([name]));
        return send(['EVAL', scripts[name], ...rest], firstKey);
      });
    },
  };
}

/** Resolves at the next 'ready' of `events`; rejects if 'end' comes first. */
function nextReady(events: EventEmitter): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ready = () => {
      events.off('end', ended);
      resolve();
    };
    const ended = () => {
      events.off('ready', ready);
      reject(new Error('quorumlock: the node-redis client ended before it was ready'));
    };
    events.once('ready', ready);
    events.once('end', ended);
  });
}

/** Resolves once the client (or Cluster) is ready, connecting it if it never was; rejects if it ends first. */
async function readyOf(client: { readonly isOpen: boolean; connect(): Promise<unknown> }, ready: boolean, events: EventEmitter): Promise<void> {
  if (ready) return;
  if (!client.isOpen) {
    await client.connect();
    return;
  }
  await nextReady(events);
}

/** INFO (of one section, or the default ones) from one connection, as text. */
const infoOf = (client: Client, section: string | undefined) =>
  client.sendCommand(section === undefined ? ['INFO'] : ['INFO', section], COMMAND_OPTIONS).then(String);

export function nodeRedisConnection(user: NodeRedisLike | NodeRedisClusterLike): Connection {
  if (isCluster(user)) return clusterConnection(user as unknown as Cluster);
  const client = user as unknown as Client;
  const { id, keyPrefix } = describeNodeRedis(client);
  const watched = watch(client);
  const options = callOptions(client.options?.commandOptions?.timeout);
  // node-redis keeps its own prefix out of sendCommand: ours adds it, as ioredis does to our keys.
  const runner = scriptRunner(
    (args) => client.sendCommand(args, options).then(plain),
    keyPrefix,
    () => '',
  );
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
    // Its handshake (HELLO, CLIENT SETINFO) may be empty (RESP2, disableClientInfo, no auth): not known here.
    readyIsAnswer: false,
    on: (event: ConnectionEvent, listener: () => void) => void watched.events.on(event, listener),
    off: (event: ConnectionEvent, listener: () => void) => void watched.events.off(event, listener),
    script: (name, keys, args) => runner.run(name, keys, args),
    info: (section) => infoOf(client, section),
    command: (args) => client.sendCommand([...args], COMMAND_OPTIONS).then(plain),
    connect: () => readyOf(client, client.isOpen && client.isReady, watched.events),
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

/** The user's reconnect strategy (or node-redis' default) while `wanted()`; no reconnect after that. */
function whileWanted(user: Strategy, wanted: () => boolean) {
  return (retries: number, cause: Error) => {
    if (!wanted()) return false;
    if (typeof user === 'function') return user(retries, cause);
    return user === undefined ? defaultRetry(retries, cause) : user;
  };
}

/**
 * A duplicate of the client, with its options, for SUBSCRIBE. It reconnects as the user's
 * client would, but only while someone waits: a member that is down must not keep reconnect
 * timers (and the process) alive after the last wait. It always has an 'error' listener: its
 * errors are ours to handle (Subscription.onError), not the user's to crash on.
 */
function subscriberOf(client: Client, wanted: () => boolean): Client {
  const socket = client.options?.socket ?? {};
  const reconnectStrategy = whileWanted(socket.reconnectStrategy, wanted);
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

/** A node of a Cluster, as node-redis lists it (`masters`, `slots[n].master`). */
interface ClusterNode {
  readonly address: string;
  readonly client?: Client | undefined;
}

/** The node-redis Cluster surface the adapter calls (5 and 6 alike, but 6 alone has isReady). */
interface Cluster {
  readonly isOpen: boolean;
  readonly isReady?: boolean;
  readonly masters: readonly ClusterNode[];
  readonly slots: readonly ({ master: ClusterNode } | undefined)[];
  readonly pubSubNode?: { client: Client } | undefined;
  readonly _options?: { defaults?: { socket?: SocketOptions }; commandOptions?: { timeout?: number } };
  nodeClient(node: ClusterNode): Promise<Client>;
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: readonly string[], options?: object): Promise<unknown>;
  duplicate(overrides?: object): Cluster;
  connect(): Promise<unknown>;
  destroy(): void;
  on(event: string, listener: (...args: never[]) => void): unknown;
  subscribe(channels: string[], listener: (message: string, channel: string) => void): Promise<unknown>;
  unsubscribe(channels: string[]): Promise<unknown>;
}

/** What the adapter tells of a Cluster: our events, and what node-redis does not keep. */
interface ClusterWatch {
  readonly events: EventEmitter;
  connected: boolean;
  everConnected: boolean;
  closed: boolean;
  reconnects: number;
}

/**
 * Maps a Cluster's events to ours. node-redis says 'connect' once its slots are known and
 * 'disconnect' when it is closed (close, destroy): it never reconnects as a whole, its node
 * connections do, each by itself, and are told by node-* events. So 'ready' at 'connect' and
 * 'close' then 'end' at 'disconnect', as an ioredis Cluster's; a node's reconnect only resets
 * the script cache we assume there (`reset`) and counts as a retry.
 */
function watchCluster(cluster: Cluster, reset: () => void): ClusterWatch {
  const connected = cluster.isOpen && (cluster.isReady ?? cluster.masters.length > 0);
  const state: ClusterWatch = { events: new EventEmitter(), connected, everConnected: connected, closed: false, reconnects: 0 };
  cluster.on('connect', () => {
    Object.assign(state, { connected: true, everConnected: true, closed: false });
    state.events.emit('ready');
  });
  cluster.on('node-reconnecting', () => {
    state.reconnects++;
    reset();
  });
  // A node connection made or made again (6 says it at every ready, 5 at the first).
  cluster.on('node-ready', reset);
  cluster.on('disconnect', () => {
    if (state.closed) return;
    const was = state.connected;
    Object.assign(state, { connected: false, closed: true });
    if (was) state.events.emit('close');
    state.events.emit('end');
  });
  return state;
}

function clusterStateOf(cluster: Cluster, watched: ClusterWatch): Connection['state'] {
  if (cluster.isOpen) return (cluster.isReady ?? watched.connected) ? 'ready' : 'connecting';
  return watched.closed || watched.everConnected ? 'ended' : 'waiting';
}

/** The Cluster's master nodes, once it knows them: never connects it (a Redlock never does). */
async function mastersOf(cluster: Cluster, watched: ClusterWatch): Promise<readonly ClusterNode[]> {
  if (clusterStateOf(cluster, watched) !== 'ready') await nextReady(watched.events);
  if (cluster.masters.length === 0) throw new Error('quorumlock: the node-redis Cluster knows no master node');
  return cluster.masters;
}

function clusterConnection(cluster: Cluster): Connection {
  const { id, keyPrefix } = describeNodeRedis(cluster);
  // Also: trustMembers() queues 16384 calls per Cluster at once, which node-redis 6's default 5 s
  // failed with 3 Clusters in one process.
  const options = callOptions(cluster._options?.commandOptions?.timeout);
  // Routed by the call's first key (prefixed, as node-redis 6's own commands are); node-redis
  // follows MOVED and ASK, which say the command did not run where it was sent.
  const send = (args: string[], firstKey: string | undefined) => cluster.sendCommand(firstKey, false, args, options).then(plain);
  const nodeOf = (firstKey: string | undefined) => (firstKey === undefined ? '' : (cluster.slots[slotOf(firstKey)]?.master.address ?? ''));
  const runner = scriptRunner(send, keyPrefix, nodeOf);
  const watched = watchCluster(cluster, runner.reset);
  const oneMaster = async () => cluster.nodeClient((await mastersOf(cluster, watched))[0]!);
  return {
    library: 'node-redis',
    id,
    keyPrefix,
    isCluster: true,
    get state() {
      return clusterStateOf(cluster, watched);
    },
    get everRetried() {
      return watched.reconnects > 0 || cluster.masters.some((node) => (node.client?.socketEpoch ?? 0) > 1);
    },
    // node-redis rejects a written, unanswered command when its socket closes; it sends a command
    // again only after MOVED or ASK (it did not run).
    resends: false,
    // Its handshake (HELLO, CLIENT SETINFO) may be empty (RESP2, disableClientInfo, no auth): not known here.
    readyIsAnswer: false,
    on: (event: ConnectionEvent, listener: () => void) => void watched.events.on(event, listener),
    off: (event: ConnectionEvent, listener: () => void) => void watched.events.off(event, listener),
    script: (name, keys, args) => runner.run(name, keys, args),
    info: async (section) => infoOf(await oneMaster(), section),
    masters: async (section) => Promise.all((await mastersOf(cluster, watched)).map(async (node) => infoOf(await cluster.nodeClient(node), section))),
    // One node: node-redis 6 would fan some keyless commands out by its own policies.
    command: async (args) => (await oneMaster()).sendCommand([...args], COMMAND_OPTIONS).then(plain),
    connect: () => readyOf(cluster, clusterStateOf(cluster, watched) === 'ready', watched.events),
    cork: undefined,
    evalsha: undefined,
    loader: undefined,
    subscriber: (wanted) => clusterSubscriptionOf(clusterSubscriberOf(cluster, wanted)),
  };
}

/**
 * A duplicate of the Cluster for SUBSCRIBE: node-redis puts a Cluster's subscriptions on one
 * node's connection (PUBLISH reaches every node). It connects to no other node
 * (minimizeConnections), and its nodes reconnect as the user's would, while someone waits.
 */
function clusterSubscriberOf(cluster: Cluster, wanted: () => boolean): Cluster {
  const defaults = cluster._options?.defaults ?? {};
  const socket = defaults.socket ?? {};
  const subscriber = cluster.duplicate({
    minimizeConnections: true,
    defaults: { ...defaults, socket: { ...socket, reconnectStrategy: whileWanted(socket.reconnectStrategy, wanted) } },
  });
  subscriber.on('error', () => undefined);
  return subscriber;
}

/**
 * Our channels live on the pub/sub node's connection, which node-redis makes at the first
 * SUBSCRIBE and subscribes again after a reconnect (one listener of ours per channel, as on a
 * client: each message once). Its loss and return are our 'close' and 'ready'; its end (it gave
 * up, or node-redis moved the subscriptions to another node) ends the Subscription: the next wait
 * makes a new one.
 */
function clusterSubscriptionOf(subscriber: Cluster): Subscription {
  const events = new EventEmitter();
  const listeners = new Set<(channel: string, message: string) => void>();
  const deliver = (message: string, channel: string) => {
    for (const listener of listeners) listener(channel, message);
  };
  const state = { connected: false, ended: false, up: true, pubsub: undefined as Client | undefined };
  const end = () => {
    if (state.ended) return;
    state.ended = true;
    // Nothing of it stays open past its end (the pub/sub connection may have ended alone).
    if (subscriber.isOpen) destroyCluster(subscriber);
    if (state.connected && state.up) events.emit('close');
    events.emit('end');
  };
  subscriber.on('connect', () => {
    state.connected = true;
    events.emit('ready');
  });
  subscriber.on('disconnect', end);
  const follow = () => followPubSub(subscriber, state, events, end);
  const connect = () => void subscriber.connect().catch(end);
  connect();
  return {
    get state() {
      if (state.ended) return 'ended';
      return state.connected && (state.pubsub === undefined || state.pubsub.isReady) ? 'ready' : 'connecting';
    },
    on: (event, listener) => void events.on(event, listener),
    onMessage: (listener) => void listeners.add(listener),
    onError: (listener) => void subscriber.on('error', listener),
    connect: () => void (subscriber.isOpen || state.ended ? undefined : connect()),
    subscribe: (...channels) => subscriber.subscribe(channels, deliver).finally(follow),
    unsubscribe: (...channels) => subscriber.unsubscribe(channels),
    close: end,
  };
}

/** Watches the pub/sub node's connection, once node-redis has made it (at the first SUBSCRIBE). */
function followPubSub(subscriber: Cluster, state: { up: boolean; pubsub: Client | undefined }, events: EventEmitter, end: () => void): void {
  const client = subscriber.pubSubNode?.client;
  if (client === undefined || client === state.pubsub) return;
  if (state.pubsub !== undefined) return end(); // moved: a new connection, whose state we did not see
  state.pubsub = client;
  client.on('reconnecting', () => {
    if (!state.up) return;
    state.up = false;
    events.emit('close');
  });
  client.on('ready', () => {
    if (state.up) return;
    state.up = true;
    events.emit('ready');
  });
  // Given up reconnecting (6: 'terminated'; 5: an error with the connection no longer open), or closed.
  client.on('end', end);
  client.on('terminated', end);
  client.on(errorMonitor, () => void (client.isOpen ? undefined : end()));
}

/**
 * Closes a Cluster of ours. node-redis 5 throws at a node connection already closed (one that
 * gave up reconnecting) and leaves the others open: those are closed here.
 */
function destroyCluster(cluster: Cluster): void {
  try {
    cluster.destroy();
  } catch {
    for (const client of [cluster.pubSubNode?.client, ...cluster.masters.map((node) => node.client)]) if (client?.isOpen) client.destroy();
  }
}
