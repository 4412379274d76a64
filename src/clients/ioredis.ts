/**
 * The adapter for ioredis (5, 6) and iovalkey, its fork with the same API: a Redis (one master,
 * or a Sentinel-managed group, which the client follows to its master) or a Cluster.
 *
 * What these libraries do (docs/clients.md has the table): a command written but not answered
 * when the socket closed is written again after the reconnect, possibly to another process
 * (`autoResendUnfulfilledCommands`, on by default); commands made while disconnected wait in the
 * offline queue (ioredis 6: up to ~73 s of retries; iovalkey ~10 s); calls on one connection are
 * written in the order they were made, but `enableAutoPipelining` queues some for a later tick,
 * so our scripts are kept out of it (keepOutOfAutoPipelining).
 *
 * Nothing here imports ioredis: what the adapter needs of the library comes from the user's client
 * (its `Command` class through our scripts' definitions: commandClassOf), so a project with only
 * iovalkey (or only node-redis) installed never loads ioredis.
 */
import { createHash } from 'node:crypto';
import { scripts, type ScriptName } from '../store/scripts.js';
import type { Connection, ConnectionEvent, Loader, Subscription } from './connection.js';
import { memberIdOf, type ClientShape } from './id.js';

/** What quorumlock uses of an ioredis or iovalkey Redis, typed loosely so both libraries' classes fit. */
export interface IoredisLike {
  /** The client's connection state ('ready', 'wait', 'end', ...). */
  status: string;
  /** The options it was made with (keyPrefix, host, port, db, ...). */
  options: object;
  /** Defines a script as a command: how our scripts are sent. */
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
  /** A new connection with the same options: our subscriber. */
  duplicate(...args: any[]): any; // eslint-disable-line @typescript-eslint/no-explicit-any -- both libraries' own overloads must fit
  /** Its connection events. */
  on(event: any, listener: (...args: any[]) => void): unknown; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
  /** INFO: what the server says about itself. */
  info(...args: any[]): Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
}

/** An ioredis (or iovalkey) Cluster: an IoredisLike that also lists its nodes. */
export interface IoredisClusterLike extends IoredisLike {
  /** True for a Cluster. */
  isCluster: boolean;
  /** The Cluster's nodes (its masters: their INFO). */
  nodes(role?: any): any[]; // eslint-disable-line @typescript-eslint/no-explicit-any -- as above
}

/** The ioredis surface the adapter calls, typed for its own use (the public types above stay loose). */
interface Client {
  status: string;
  options: {
    keyPrefix?: string;
    enableAutoPipelining?: boolean;
    autoPipeliningIgnoredCommands?: string[];
    autoResendUnfulfilledCommands?: boolean;
    enableReadyCheck?: boolean;
    reconnectOnError?: unknown;
    retryStrategy?: ((times: number) => number | void | null) | null;
    showFriendlyErrorStack?: boolean;
  };
  retryAttempts?: number;
  isCluster?: boolean;
  stream?: { cork(): void; uncork(): void; writable?: boolean };
  defineCommand(name: string, definition: { lua: string }): void;
  /** Keys and arguments as two arrays: ioredis and iovalkey flatten a command's arguments one level (`Command`). */
  evalsha(sha: string, keyCount: string, keys: readonly string[], args: readonly string[]): Promise<unknown>;
  /** The scripts defined on it (defineCommand), each with its command class (commandClassOf). */
  scriptsSet?: Record<string, { Command?: unknown } | undefined>;
  /** Writes a command made by the library's `Command` class (fastEvalsha). */
  sendCommand(command: object): Promise<unknown>;
  info(section?: string): Promise<string>;
  call(name: string, ...args: string[]): Promise<unknown>;
  connect(): Promise<void>;
  disconnect(): void;
  duplicate(overrides?: object): Client;
  nodes(role: 'master'): Client[];
  on(event: string, listener: (...args: never[]) => void): unknown;
  once(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  multi(): { script(op: 'LOAD', text: string): unknown; info(section: string): unknown; exec(): Promise<[Error | null, unknown][] | null> };
}

/** Whether `client` is one of these libraries' clients (or a stand-in shaped like one). */
export const isIoredis = (client: object): client is IoredisLike => typeof (client as IoredisLike).defineCommand === 'function';

/**
 * The name each script's command has on a client: the script's name and a digest of its text.
 * Two copies of quorumlock in one process that share clients (a dependency bundling another
 * version) then each run their own scripts: ioredis keeps one script per command name, and the
 * first copy to define a name would otherwise serve the other one's calls with its own text.
 * Prefixed, so they cannot clash with the user's own commands.
 */
export const commandNames = Object.fromEntries(
  Object.entries(scripts).map(([name, lua]) => [name, `${name}_${createHash('sha1').update(lua).digest('hex').slice(0, 12)}`]),
) as Record<ScriptName, string>;

/**
 * A script's command on a client: its key count, then its keys, then its arguments. Both libraries
 * flatten a command's arguments one level (their `Command` constructor), so keys and arguments go
 * as the arrays they are: no copy of either into a spread per call.
 */
export type ScriptCommand = (keyCount: number | string, ...keysThenArgs: (string | number | readonly string[])[]) => Promise<unknown>;

/**
 * Registers our scripts on the client. ioredis' defineCommand sends EVAL the first time on each
 * socket and EVALSHA after that, and falls back to EVAL on NOSCRIPT, so a member that restarted
 * with an empty script cache works without an extra round trip.
 */
export function registerScripts(client: object): void {
  for (const [name, lua] of Object.entries(scripts)) {
    const command = commandNames[name as ScriptName];
    // The same client may serve several Redlock instances: define once.
    if (typeof (client as Record<string, unknown>)[command] !== 'function') (client as Client).defineCommand(command, { lua });
  }
}

/** The command of script `name` on a client (or a pipeline) that registerScripts() prepared. */
export function scriptCommand(client: object, name: ScriptName): ScriptCommand {
  return (client as Record<string, ScriptCommand>)[commandNames[name]]!.bind(client);
}

/**
 * Our scripts never go through ioredis' auto-pipelining, whatever the user's setting: its queue
 * flushes on a later tick and not while another batch awaits replies, so a command written
 * directly could overtake a queued one (calls must keep their order). On a Cluster it would also
 * batch them by the node of their first argument, which for a script is its key count, not a key.
 */
export function keepOutOfAutoPipelining(client: object): void {
  const options = (client as Client).options;
  if (!options.enableAutoPipelining) return;
  // evalsha too: bound copies are called by it (ioredisConnection).
  options.autoPipeliningIgnoredCommands = [...new Set([...(options.autoPipeliningIgnoredCommands ?? []), ...Object.values(commandNames), 'evalsha'])];
}

const stateOf = (status: string): Connection['state'] =>
  status === 'ready' ? 'ready' : status === 'wait' ? 'waiting' : status === 'end' ? 'ended' : 'connecting';

export function ioredisConnection(user: IoredisLike): Connection {
  const client = user as unknown as Client;
  registerScripts(client);
  keepOutOfAutoPipelining(client);
  const isCluster = client.isCluster === true;
  const commands = new Map<ScriptName, ScriptCommand>();
  // A client without EVALSHA is a test's stand-in: it runs the scripts by their commands only.
  const bindable = !isCluster && typeof client.evalsha === 'function';
  return {
    library: 'ioredis',
    id: memberIdOf(client as ClientShape),
    keyPrefix: client.options.keyPrefix ?? '',
    isCluster,
    get state() {
      return stateOf(client.status);
    },
    get everRetried() {
      return (client.retryAttempts ?? 0) > 0;
    },
    resends: client.options.autoResendUnfulfilledCommands !== false,
    // Without its ready check, ioredis may fire 'ready' having heard nothing (no handshake to wait for).
    readyIsAnswer: client.options.enableReadyCheck !== false,
    on: (event: ConnectionEvent, listener: () => void) => void client.on(event, listener),
    off: (event: ConnectionEvent, listener: () => void) => void client.off(event, listener),
    script(name, keys, args) {
      let command = commands.get(name);
      if (command === undefined) commands.set(name, (command = scriptCommand(client, name)));
      return command(String(keys.length), keys, args);
    },
    // A stand-in without INFO (the drift simulator's) has no facts to read.
    info: typeof client.info === 'function' ? (section) => (section === undefined ? client.info() : client.info(section)) : undefined,
    command: ([name, ...rest]) => client.call(name!, ...rest),
    connect: () => client.connect(),
    masters: isCluster ? (section) => mastersInfo(client, section) : undefined,
    // ioredis writes each Cluster call on its node's connection itself: nothing of ours to cork.
    cork: isCluster ? undefined : () => corkStream(client),
    // The same write path as the script commands (both end in sendCommand, outside auto-pipelining),
    // so a bound call keeps its place among the others; keys get the client's keyPrefix, replies are text.
    evalsha: bindable ? (fastEvalsha(client) ?? ((sha, keys, args) => client.evalsha(sha, String(keys.length), keys, args))) : undefined,
    // A reconnectOnError would re-send a bound call that met NOSCRIPT, reconnecting forever.
    loader: bindable && client.options.reconnectOnError == null ? () => loaderOf(client) : undefined,
    subscriber: (wanted) => subscriptionOf(subscriberOf(client, wanted)),
  };
}

/** The library's command class (`Redis.Command`): its name, its arguments, how to write them (`toWritable`). */
type CommandClass = new (name: string, args: string[], options: { keyPrefix?: string; replyEncoding: string; errorStack?: Error }) => object;

/**
 * EVALSHA as `client.evalsha(...)` sends it, made here with the library's own Command class
 * (commandClassOf) from one flat array. Why: the Command constructor copies its arguments with
 * Array.prototype.flat, which on Node 20 costs about 75 ns an argument (a batch of 64 calls has
 * some 700: 67 µs, against 3 µs here; one acquire's 17: 1.58 against 0.12 µs:
 * bench/command-cost.ts). Ours are strings, flat already, and the array is made here for this one
 * command: its own `flat` hands it over as it is, and the library may change it in place (a
 * keyPrefix) with nobody else looking. A version that no longer calls flat() ignores the property. What
 * `client.evalsha` adds is given the same way: the client's keyPrefix, text replies, the friendly
 * error stack when asked; it is kept out of auto-pipelining (keepOutOfAutoPipelining), so it too
 * goes straight to sendCommand. Undefined where the client has no Command class (a test's
 * stand-in): its evalsha then.
 */
function fastEvalsha(client: Client): Connection['evalsha'] {
  const Command = commandClassOf(client);
  if (Command === undefined || typeof client.sendCommand !== 'function') return undefined;
  return (sha, keys, args) => {
    const words = evalshaWords(sha, keys, args);
    const { keyPrefix, showFriendlyErrorStack } = client.options;
    return client.sendCommand(
      new Command('evalsha', words, { keyPrefix, replyEncoding: 'utf8', errorStack: showFriendlyErrorStack ? new Error() : undefined }),
    );
  };
}

/**
 * The library's Command class, found through our own scripts' definitions (registerScripts): the
 * command class of each defined script extends it; the epoch script's is read
 * (`scriptsSet[name].Command`). Not through the client's constructor: both libraries mix
 * EventEmitter into the Redis class, whose `constructor` it replaces. Undefined where a client has
 * none of this (a stand-in, another version's layout).
 */
function commandClassOf(client: Client): CommandClass | undefined {
  const scriptCommand = client.scriptsSet?.[commandNames.quorumlockEpoch]?.Command;
  const Command: unknown = typeof scriptCommand === 'function' ? Object.getPrototypeOf(scriptCommand) : undefined;
  return typeof Command === 'function' && typeof (Command.prototype as { toWritable?: unknown } | undefined)?.toWritable === 'function'
    ? (Command as CommandClass)
    : undefined;
}

/**
 * EVALSHA's arguments for the library's Command, as fastEvalsha hands them over: one flat array
 * made for this one command, whose own `flat` returns it as it is. Filled by index into an array
 * of its final length (concat takes a generic path).
 */
export function evalshaWords(sha: string, keys: readonly string[], args: readonly string[]): string[] {
  const words = new Array<string>(2 + keys.length + args.length);
  words[0] = sha;
  words[1] = String(keys.length);
  for (let i = 0; i < keys.length; i++) words[2 + i] = keys[i]!;
  for (let i = 0, at = 2 + keys.length; i < args.length; i++) words[at + i] = args[i]!;
  (words as { flat?: unknown }).flat = itself;
  return words;
}

function itself(this: string[]): string[] {
  return this;
}

/** Corks the socket for the rest of the tick when it is ready; the function returned uncorks. */
function corkStream(client: Client): (() => void) | undefined {
  const stream = client.stream;
  if (!stream || typeof stream.cork !== 'function' || !stream.writable || client.status !== 'ready') return undefined;
  stream.cork();
  return () => stream.uncork();
}

/** INFO of every master node of a Cluster, once its client knows them (it is ready). */
async function mastersInfo(cluster: Client, section: string | undefined): Promise<string[]> {
  if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
  return Promise.all(cluster.nodes('master').map((node) => (section === undefined ? node.info() : node.info(section))));
}

/**
 * A subscriber connection with the client's options. Re-subscribing after a reconnect is the
 * subscriber's own job (waiting/notifications.ts), with every promise handled: ioredis'
 * autoResubscribe leaves its SUBSCRIBE unhandled. It reconnects as the user's client would, but
 * only while someone waits: a member that is down must not keep reconnect timers (and the
 * process) alive after the last wait.
 */
function subscriberOf(client: Client, wanted: () => boolean): Client {
  const userStrategy = client.options.retryStrategy;
  return client.duplicate({
    autoResubscribe: false,
    retryStrategy: (times: number) => (wanted() ? (userStrategy ? userStrategy(times) : Math.min(times * 50, 2000)) : null),
  });
}

function subscriptionOf(connection: Client): Subscription {
  return {
    get state() {
      return stateOf(connection.status);
    },
    on: (event, listener) => void connection.on(event, listener),
    onMessage: (listener) => void connection.on('message', listener),
    onError: (listener) => void connection.on('error', listener),
    // A lazyConnect client would otherwise never connect: nothing is sent until it is ready.
    connect: () => void (connection.status === 'wait' ? connection.connect().catch(() => undefined) : undefined),
    subscribe: (...channels) => connection.subscribe(...channels),
    unsubscribe: (...channels) => connection.unsubscribe(...channels),
    close: () => connection.disconnect(),
  };
}

/** Our own connection for bound copies: it never re-sends a command, queues nothing offline, and does not reconnect. */
function loaderOf(client: Client): Loader {
  const loader = client.duplicate({
    lazyConnect: true,
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    autoResubscribe: false,
    enableAutoPipelining: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  loader.on('error', () => undefined);
  // Never past the user's client: a loader must not keep the process alive once they quit.
  const close = () => loader.disconnect();
  client.once('end', close);
  return {
    connect: () => loader.connect(),
    info: (section) => loader.info(section),
    async loadAll(texts) {
      const transaction = loader.multi();
      for (const text of texts) transaction.script('LOAD', text);
      transaction.info('server');
      const replies = (await transaction.exec()) ?? [];
      const failed = replies.find(([error]) => error);
      if (failed) throw failed[0] as Error;
      return { shas: replies.slice(0, texts.length).map(([, sha]) => String(sha)), info: String(replies[texts.length]?.[1]) };
    },
    close() {
      client.off('end', close);
      close();
    },
  };
}
