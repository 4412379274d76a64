/**
 * The adapter for Valkey GLIDE (@valkey/valkey-glide 2.x): a GlideClient (one server) or a
 * GlideClusterClient. Nothing here imports GLIDE (an optional peer dependency): only the methods
 * and fields of the client passed in are used.
 *
 * What GLIDE does (docs/clients.md): every request has a timeout (requestTimeout, 250 ms by
 * default), after which it rejects with a TimeoutError; our rounds keep their own deadlines, so
 * this only makes a slow member vote earlier. A command written but unanswered when the socket
 * closed is rejected, never written again (resends: false); a command made while disconnected
 * waits in the Rust core until the timeout. Requests made without awaiting each other may reach
 * the server in any order (the core runs each as its own task): see Pipe below. Server errors come
 * back reworded (`NOSCRIPT x` as "An error was signalled by the server: - NoScriptError: x",
 * `LOCKED by x` as "LOCKED: by x"): serverError() restores the server's text. The client emits no
 * connection events and reconnects (and re-subscribes) by itself.
 */
import { createHash } from 'node:crypto';
import { Module } from 'node:module';
import { scripts, type ScriptName } from '../store/scripts.js';
import type { Connection, ConnectionEvent, Subscription } from './connection.js';
import { address, clusterId } from './id.js';

/** What quorumlock uses of a GlideClient, typed loosely so that the library's class fits. */
export interface GlideLike {
  /** Sends one command as it is: how our scripts are sent. */
  customCommand(args: any[], options?: any): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- the library's own signature must fit
  /** Runs a script (what tells a GLIDE client apart). */
  invokeScript(script: any, options?: any): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
  /** Runs a Batch: our calls of one tick, in order. */
  exec(batch: any, raiseOnError: boolean, options?: any): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
  /** Closes the client (quorumlock closes only the clients it made). */
  close(errorMessage?: string): void;
}

/** A GlideClusterClient: a GlideLike that also routes scripts. */
export interface GlideClusterLike extends GlideLike {
  /** Runs a script on a chosen node (what tells a Cluster client apart). */
  invokeScriptWithRoute(script: any, options?: any): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
}

/** The parts of a GLIDE configuration that name a client and make another like it. */
interface GlideConfig {
  addresses?: { host?: string; port?: number }[];
  databaseId?: number;
  protocol?: unknown;
  pubsubSubscriptions?: unknown;
  [option: string]: unknown;
}

/** A pending Batch of the library (non-atomic: a pipeline). */
interface GlideBatch {
  customCommand(args: string[]): unknown;
}

/** The GLIDE surface the adapter calls, typed for its own use (the public types above stay loose). */
interface Client {
  /** GLIDE keeps the configuration it was created with here (a private field, read only). */
  config?: GlideConfig;
  isClosed?: boolean;
  /** The socket to the Rust core: it closes when the client does. */
  socket?: { once(event: 'close', listener: () => void): unknown };
  constructor: { name: string; createClient?: (config: GlideConfig) => Promise<Client> };
  customCommand(args: string[], options?: { route?: unknown }): Promise<unknown>;
  exec(batch: GlideBatch, raiseOnError: boolean): Promise<unknown[] | null>;
  invokeScriptWithRoute?: unknown;
  subscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  unsubscribe(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  close(): void;
}

/** Whether `client` is a GLIDE client: ioredis and node-redis have neither method. */
export const isGlide = (client: object): client is GlideLike =>
  typeof (client as GlideLike).customCommand === 'function' && typeof (client as GlideLike).invokeScript === 'function';

const isClusterClient = (client: object) => typeof (client as GlideClusterLike).invokeScriptWithRoute === 'function';

/** Ids of clients whose configuration is out of reach (another GLIDE version): stable per client. */
const anonymous = new WeakMap<object, string>();
let anonymousCount = 0;

/** What names a GLIDE client, from the configuration it keeps (no I/O). */
export function describeGlide(client: GlideLike): { id: string; isCluster: boolean; keyPrefix: '' } {
  const isCluster = isClusterClient(client);
  const config = (client as unknown as Client).config;
  const nodes = Array.isArray(config?.addresses) ? config.addresses.map(address) : [];
  let id: string;
  if (nodes.length === 0) {
    id = anonymous.get(client) ?? `glide#${++anonymousCount}`;
    anonymous.set(client, id);
  } else if (isCluster) id = clusterId(nodes);
  // One address, or a primary with its replicas (GLIDE finds the primary among them).
  else id = `${[...nodes].sort().join(',')}/${config?.databaseId ?? 0}`;
  return { id, isCluster, keyPrefix: '' };
}

const shas = Object.fromEntries(Object.entries(scripts).map(([name, lua]) => [name, createHash('sha1').update(lua).digest('hex')])) as Record<
  ScriptName,
  string
>;

export function glideConnection(user: GlideLike): Connection {
  const client = user as unknown as Client;
  const { id, isCluster } = describeGlide(user);
  const pipe = new Pipe(client, batchClassOf(client, isCluster ? 'ClusterBatch' : 'Batch'));
  const events = closeEvents(client);
  return {
    library: 'glide',
    id,
    keyPrefix: '',
    isCluster,
    get state() {
      return client.isClosed === true ? 'ended' : 'ready';
    },
    // GLIDE reconnects inside its core and tells nobody: nothing to count.
    everRetried: false,
    resends: false,
    readyIsAnswer: false,
    // Only 'end', and only when the client is closed: GLIDE has no 'ready' or 'close' to listen to.
    on: (event, listener) => events.on(event, listener),
    off: (event, listener) => events.off(event, listener),
    script: (name, keys, args) => pipe.send({ name, keys, args }),
    // On a Cluster, of one node (GLIDE would ask every primary for INFO without a route).
    info: (section) => client.customCommand(['INFO', ...(section === undefined ? [] : [section])], isCluster ? { route: 'randomNode' } : undefined).then(text),
    command: (args) => client.customCommand([...args]).then(normalise, (error: Error) => Promise.reject(serverError(error))),
    connect: () => Promise.resolve(), // a GLIDE client is connected when createClient resolves
    masters: isCluster ? (section) => mastersInfo(client, section) : undefined,
    // GLIDE writes the socket to its core itself (and calls share a Batch here): nothing to cork.
    cork: undefined,
    // No binding: a loader needs a connection that never reconnects and a MULTI of SCRIPT LOADs
    // answered by one process; GLIDE reconnects by itself and says nothing of it.
    evalsha: undefined,
    loader: undefined,
    subscriber: (wanted) => subscriberOf(client, wanted),
  };
}

/**
 * The library's Batch class (ClusterBatch for a Cluster), from the copy of GLIDE that made
 * `client`: the loaded module that exports the client's own class. undefined when none is found
 * (a bundle): then calls go one at a time.
 */
function batchClassOf(client: Client, name: 'Batch' | 'ClusterBatch'): (new (isAtomic: boolean) => GlideBatch) | undefined {
  const cache = (Module as unknown as { _cache?: Record<string, { exports?: Record<string, unknown> } | undefined> })._cache ?? {};
  for (const loaded of Object.values(cache)) {
    const exports = loaded?.exports;
    if (exports === undefined || exports === null || typeof exports !== 'object') continue;
    if (exports[client.constructor.name] === client.constructor && typeof exports[name] === 'function') {
      return exports[name] as new (isAtomic: boolean) => GlideBatch;
    }
  }
  return undefined;
}

/** One script call waiting for its reply. */
interface Call {
  name: ScriptName;
  keys: readonly string[];
  args: readonly string[];
  /** Sent as EVAL: its EVALSHA met NOSCRIPT, and no earlier call of its script is sent as EVAL before it. */
  eval?: boolean;
  /** How many times its EVALSHA met NOSCRIPT. */
  misses?: number;
  resolve(reply: unknown): void;
  reject(error: Error): void;
}

/**
 * Keeps our calls in the order they were made. GLIDE runs concurrent requests as separate tasks,
 * which reach the server in any order (200 RPUSH made in one tick land shuffled; so do concurrent
 * Batches); the commands of one Batch keep theirs. So one Batch is in flight at a time: calls made
 * meanwhile wait and go together in the next one, each with its own reply or error
 * (raiseOnError false). A Batch that times out was dropped by the core before it was written or
 * is written ahead of the next one. Without the Batch class, calls go one at a time.
 */
class Pipe {
  #queue: Call[] = [];
  #busy = false;
  #scheduled = false;

  constructor(
    private readonly client: Client,
    private readonly Batch: (new (isAtomic: boolean) => GlideBatch) | undefined,
  ) {}

  send(call: Omit<Call, 'resolve' | 'reject'>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      // Object.assign, not spread: once per call (docs/internals.md, "Object spread on Node 20").
      this.#queue.push(Object.assign({}, call, { resolve, reject }));
      // The rest of this tick's calls share the Batch.
      if (!this.#busy && !this.#scheduled) {
        this.#scheduled = true;
        process.nextTick(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    if (this.#busy || this.#queue.length === 0) return;
    const calls = this.Batch === undefined ? this.#queue.splice(0, 1) : this.#queue.splice(0);
    this.#busy = true;
    void this.#run(calls).then((replies) => this.#settle(calls, replies));
  }

  /** Each call's reply or error; never rejects. */
  async #run(calls: Call[]): Promise<unknown[]> {
    try {
      if (this.Batch === undefined) return [await this.client.customCommand(commandOf(calls[0]!)).catch((error: unknown) => error)];
      const batch = new this.Batch(false);
      for (const call of calls) batch.customCommand(commandOf(call));
      return (await this.client.exec(batch, false)) ?? [];
    } catch (error) {
      // The whole Batch failed (timeout, connection, closed client): each call gets that error.
      return calls.map(() => error);
    }
  }

  #settle(calls: Call[], replies: unknown[]): void {
    const retries: Call[] = [];
    // One EVAL per script per round loads it where that call goes; the script's other calls stay
    // EVALSHA behind it (a server runs one connection's calls in order). On a Cluster, calls bound
    // for other nodes miss again and load it there next round: one round per node, not one EVAL
    // (the whole text) per call, which for trustMembers' 16384 calls took seconds.
    const loading = new Set<ScriptName>();
    calls.forEach((call, index) => {
      const reply = replies[index];
      if (!(reply instanceof Error)) return call.resolve(normalise(reply));
      const error = serverError(reply);
      if (call.eval || !error.message.startsWith('NOSCRIPT')) return call.reject(error);
      const misses = (call.misses ?? 0) + 1;
      const first = !loading.has(call.name);
      loading.add(call.name);
      // Ahead of the calls made meanwhile (they came after this one).
      retries.push({ ...call, misses, eval: first || misses > MAX_MISSES });
    });
    this.#queue.unshift(...retries);
    this.#busy = false;
    this.#flush();
  }
}

/** A call's EVALSHA misses before it goes as EVAL whatever: more than a Cluster has nodes in any test here. */
const MAX_MISSES = 16;

const commandOf = ({ name, keys, args, eval: full }: Call): string[] =>
  full ? ['EVAL', scripts[name], String(keys.length), ...keys, ...args] : ['EVALSHA', shas[name], String(keys.length), ...keys, ...args];

/** GLIDE's names of the server's error codes (its Rust core's ErrorKind), back to the codes. */
const codesOfKinds: Record<string, string> = {
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  NoScriptError: 'NOSCRIPT',
  Moved: 'MOVED',
  Ask: 'ASK',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  NotBusy: 'NOTBUSY',
  PermissionDenied: 'NOPERM',
};

const KNOWN = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/;
const OTHER = /^(\S+): ([\s\S]*)$/;

/**
 * A server's error with the server's own text, undoing GLIDE's rewording: known codes read
 * "An error was signalled by the server: - <Kind>: <rest>", others "<CODE>: <rest>"; a one-word
 * error reads as a ResponseError of that word (kept as the word: "ERR x" never comes alone).
 * Errors that are not the server's (timeouts, connection) stay as they are.
 */
export function serverError(error: Error): Error {
  if (error.name !== 'RequestError' && error.name !== 'ExecAbortError') return error;
  let message: string | undefined;
  const known = KNOWN.exec(error.message);
  if (known) {
    const [, kind, rest] = known as unknown as [string, string, string];
    const code = codesOfKinds[kind];
    if (code === 'ERR' && !rest.includes(' ')) message = rest;
    else if (code !== undefined) message = `${code} ${rest}`;
  } else {
    const other = OTHER.exec(error.message);
    if (other) message = `${other[1]} ${other[2]}`;
  }
  if (message === undefined) return error;
  const restored = new Error(message, { cause: error });
  restored.name = 'ReplyError';
  return restored;
}

/** A reply as ioredis has it under RESP2: strings, numbers, arrays, null. */
export function normalise(reply: unknown): unknown {
  if (reply === null || reply === undefined) return null;
  if (typeof reply === 'string' || typeof reply === 'number') return reply;
  if (typeof reply === 'bigint') return Number(reply);
  if (typeof reply === 'boolean') return reply ? 1 : null;
  if (Buffer.isBuffer(reply)) return reply.toString('utf8');
  if (Array.isArray(reply)) return reply.map(normalise);
  if (reply instanceof Set) return [...reply].map(normalise);
  if (reply instanceof Map) return [...reply].flatMap(([key, value]) => [normalise(key), normalise(value)]);
  return reply;
}

const text = (reply: unknown) => String(normalise(reply));

/** INFO of every primary of a Cluster (GLIDE answers by node address). */
async function mastersInfo(client: Client, section: string | undefined): Promise<string[]> {
  const replies = await client.customCommand(['INFO', ...(section === undefined ? [] : [section])], { route: 'allPrimaries' });
  if (Array.isArray(replies)) return replies.map((entry: { value?: unknown }) => text(entry.value ?? entry));
  return typeof replies === 'object' && replies !== null ? Object.values(replies).map(text) : [text(replies)];
}

/** Listeners of 'end', called when the client's socket to its core closes (close(), or the core ended). */
function closeEvents(client: Client): { on(event: ConnectionEvent, listener: () => void): void; off(event: ConnectionEvent, listener: () => void): void } {
  const ends = new Set<() => void>();
  let ended = client.isClosed === true;
  client.socket?.once('close', () => {
    ended = true;
    for (const listener of [...ends]) listener();
  });
  return {
    on(event, listener) {
      if (event !== 'end') return;
      if (ended) queueMicrotask(listener);
      else ends.add(listener);
    },
    off: (event, listener) => void (event === 'end' && ends.delete(listener)),
  };
}

/** A message as GLIDE's pub/sub callback passes it. */
interface PubSubMessage {
  channel: unknown;
  message: unknown;
}

/** How long a failed subscriber creation waits before the next (while someone still waits). */
const RECREATE_MS = 1_000;
/** The shortest wait for a SUBSCRIBE's or UNSUBSCRIBE's confirmation. */
const SUBSCRIBE_MS = 1_000;

/**
 * A client of our own with the user's configuration (GLIDE keeps it on the client, and its class
 * makes another: there is no duplicate()), taking pub/sub messages by callback and subscribing
 * dynamically. SUBSCRIBE and UNSUBSCRIBE go one at a time, so they keep their order (GLIDE would
 * not). GLIDE re-subscribes by itself after a reconnect and emits nothing: 'ready' comes once,
 * when the client is made; there is no 'close'. Without a reachable configuration the
 * subscription ends at once: waiting then works by timed retries alone.
 */
function subscriberOf(client: Client, wanted: () => boolean): Subscription {
  const events = { ready: new Set<() => void>(), close: new Set<() => void>(), end: new Set<() => void>() };
  const messages: ((channel: string, message: string) => void)[] = [];
  const errors: ((error: Error) => void)[] = [];
  let connection: Client | undefined;
  let state: Connection['state'] = 'connecting';
  let order: Promise<unknown> = Promise.resolve();
  const end = () => {
    if (state === 'ended') return;
    state = 'ended';
    connection?.close();
    for (const listener of events.end) listener();
  };
  const { protocol: _protocol, pubsubSubscriptions: _theirs, ...config } = client.config ?? {}; // pub/sub needs RESP3, the default
  // The client's request timeout (GLIDE's default 250 ms), at least SUBSCRIBE_MS.
  const confirmMs = Math.max(typeof config.requestTimeout === 'number' ? config.requestTimeout : 0, SUBSCRIBE_MS);
  const create = client.constructor.createClient;
  const open = () => {
    if (create === undefined || client.config === undefined) return queueMicrotask(end);
    const callback = (message: PubSubMessage) => {
      for (const listener of messages) listener(text(message.channel), text(message.message));
    };
    create.call(client.constructor, { ...config, pubsubSubscriptions: { channelsAndPatterns: {}, callback } }).then(
      (made) => {
        if (state === 'ended') return made.close();
        connection = made;
        state = 'ready';
        for (const listener of events.ready) listener();
      },
      (error: Error) => {
        for (const listener of errors) listener(error);
        if (state !== 'ended' && wanted()) setTimeout(open, RECREATE_MS).unref();
        else end();
      },
    );
  };
  open();
  /** Runs `command` after every earlier one has settled. */
  const inOrder = (command: (made: Client) => Promise<unknown>) => {
    const run = order.then(() => {
      if (connection === undefined || state !== 'ready') throw new Error('the subscriber connection is not ready');
      return command(connection);
    });
    order = run.catch(() => undefined);
    return run;
  };
  return {
    get state() {
      return state;
    },
    on: (event, listener) => void events[event].add(listener),
    onMessage: (listener) => void messages.push(listener),
    onError: (listener) => void errors.push(listener),
    connect: () => undefined, // made at once: a GLIDE client connects when it is created
    // A bound wait for the server's confirmation (0 would wait for good: a member down then holds
    // up every later SUBSCRIBE and UNSUBSCRIBE, which go one at a time). A failed one means timed
    // retries for the waiters until the next.
    subscribe: (...channels) => inOrder((made) => made.subscribe(new Set(channels), confirmMs)),
    unsubscribe: (...channels) => inOrder((made) => made.unsubscribe(new Set(channels), confirmMs)),
    close: end,
  };
}
