/**
 * An ioredis-shaped client of a FakeRedisServer, over a simulated network on the ManualClock, for
 * `new Redlock([...clients])`. It has what quorumlock uses of an ioredis client (`options`,
 * `status`, events, `defineCommand`, `duplicate()`, `info()`, `role()`, `call()`, `subscribe()`,
 * `disconnect()`, `quit()`), and its connection semantics are ioredis 6's on purpose
 * (node_modules/ioredis/built/redis/event_handler.js, Script.js), since those are what break the
 * "one command runs once, in order, on the process it was sent to" assumption (docs/internals.md#ioredis):
 *
 * - One socket at a time, FIFO in each direction: commands reach the server in the order they
 *   were written, replies come back in order; each message takes its own delay (the Network's
 *   delay source), and a direction of one link can be held and released (a delayed link).
 * - Commands written but unanswered when the socket closes (the server process was killed, or the
 *   link was reset) are written again on the next connection (autoResendUnfulfilledCommands),
 *   which may reach a different process: a re-sent command can run twice, or in a new process.
 *   Commands issued while not connected wait in the offline queue and go to whatever answers
 *   next. On reconnect, as in ioredis' readyHandler: the ready check (INFO) first, then status
 *   'ready', the re-subscriptions, the re-sent commands, the offline queue, and only then (next
 *   tick) the 'ready' event, whose listeners' commands so go after the re-sent ones.
 * - Reconnects follow ioredis' default retryStrategy (min(50 × attempt, 2000) ms); every 21
 *   failed attempts the offline queue is rejected (maxRetriesPerRequest 20), but never the
 *   re-sent commands (ioredis keeps them in prevCommandQueue).
 * - Scripts (defineCommand): EVAL the first time on each socket, EVALSHA after; on NOSCRIPT the
 *   command is issued again (a new command at the tail of the queue), as ioredis' Script does.
 * - Replies as ioredis decodes RESP2: integers as numbers, bulk strings as strings, nil as null,
 *   status as its text, errors as rejected ReplyErrors.
 */
import { EventEmitter } from 'node:events';
import type { ManualClock } from '../../src/clock/index.js';
import { ErrorReply, type FakeRedisServer, type Reply, type ServerSocket, StatusReply } from './fake-redis.js';
import { sha1 } from './lua-vm.js';

export type Direction = 'request' | 'reply';

/** Something the network did, for traces of a counterexample. */
export interface NetEvent {
  at: number;
  client: string;
  port: number;
  incarnation: number;
  what: 'run' | 'resend' | 'close' | 'ready' | 'reset';
  command?: string;
  args?: string[];
  reply?: unknown;
}

/**
 * The simulated network shared by every client: where delays come from, which link directions
 * are held, and the trace.
 */
export class Network {
  readonly #holds = new Map<string, number>();
  readonly #links = new Set<Link>();
  trace: NetEvent[] | undefined;

  constructor(
    readonly clock: ManualClock,
    /** ms for the next message on (client, port, direction). */
    readonly delay: (client: string, port: number, direction: Direction) => number,
  ) {}

  /** Holds `direction` of the client's link(s) to `port` until clock time `until` (a delayed link, not a cut one). */
  hold(client: string, port: number, direction: Direction, until: number): void {
    this.#holds.set(`${client}|${port}|${direction}`, until);
    for (const link of this.#links) if (link.client === client && link.port === port && link.direction === direction) link.pump();
  }

  heldUntil(client: string, port: number, direction: Direction): number {
    return this.#holds.get(`${client}|${port}|${direction}`) ?? -Infinity;
  }

  /** @internal */
  register(link: Link): void {
    this.#links.add(link);
  }

  /** @internal */
  unregister(link: Link): void {
    this.#links.delete(link);
  }

  record(event: Omit<NetEvent, 'at'>): void {
    this.trace?.push({ at: this.clock.now(), ...event });
  }
}

/** One direction of one socket: FIFO, each message due at its own time, never before the one ahead. */
class Link {
  readonly #queue: { due: number; deliver: () => void }[] = [];
  #timer: unknown;
  #lastDue = -Infinity;
  #closed = false;

  constructor(
    readonly network: Network,
    readonly client: string,
    readonly port: number,
    readonly direction: Direction,
  ) {
    network.register(this);
  }

  send(deliver: () => void): void {
    if (this.#closed) return;
    const now = this.network.clock.now();
    this.#lastDue = Math.max(this.#lastDue, now + Math.max(0, this.network.delay(this.client, this.port, this.direction)));
    this.#queue.push({ due: this.#lastDue, deliver });
    if (this.#queue.length === 1) this.pump();
  }

  /** (Re)arms the timer for the message at the head. */
  pump(): void {
    const clock = this.network.clock;
    if (this.#timer !== undefined) clock.clearTimer(this.#timer);
    this.#timer = undefined;
    const head = this.#queue[0];
    if (!head || this.#closed) return;
    const at = Math.max(head.due, this.network.heldUntil(this.client, this.port, this.direction));
    this.#timer = clock.setTimer(() => {
      this.#timer = undefined;
      const message = this.#queue.shift();
      message?.deliver();
      this.pump();
    }, at - clock.now());
  }

  /** The socket closed: whatever is still on the wire is lost. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) this.network.clock.clearTimer(this.#timer);
    this.#timer = undefined;
    this.#queue.length = 0;
    this.network.unregister(this);
  }
}

class Socket implements ServerSocket {
  open = true;
  /** Scripts this socket has sent with EVAL (ioredis' socketHasScriptLoaded). */
  readonly loaded = new Set<string>();
  readonly requests: Link;
  readonly replies: Link;

  constructor(
    readonly owner: FakeRedis,
    network: Network,
    readonly incarnation: number,
  ) {
    this.requests = new Link(network, owner.name, owner.options.port, 'request');
    this.replies = new Link(network, owner.name, owner.options.port, 'reply');
  }

  get client(): string {
    return this.owner.name;
  }

  closed(): void {
    this.owner._socketClosed(this);
  }

  push(message: Reply): void {
    this.replies.send(() => this.owner._pushed(this, message));
  }

  shut(): void {
    this.open = false;
    this.requests.close();
    this.replies.close();
  }
}

interface Command {
  /** Upper-case command name, or the script's name for a defined command. */
  name: string;
  args: string[];
  script?: { name: string; lua: string; sha: string };
  resolve(value: unknown): void;
  reject(error: Error): void;
  /** Handshake commands (the ready check) may be written while connecting. */
  handshake?: boolean;
}

export class ReplyError extends Error {
  override name = 'ReplyError';
}

export interface FakeClientOptions {
  /** How this client is named in traces and link holds (one name per application process). */
  name: string;
  /** Connect at construction (as ioredis does unless lazyConnect); a user's main client is usually connected already. */
  connected?: boolean;
  enableOfflineQueue?: boolean;
  autoResendUnfulfilledCommands?: boolean;
  maxRetriesPerRequest?: number | null;
  /**
   * The address this client dials, when it is not the server's own: a second name of the same
   * server (another host name or port forwarded to it), so that one server can be listed as two
   * members. Links, holds and traces go by this port.
   */
  address?: { host: string; port: number };
}

const CONNECTION_CLOSED = 'Connection is closed.';
const SUBSCRIBER_COMMANDS = new Set(['SUBSCRIBE', 'UNSUBSCRIBE', 'PSUBSCRIBE', 'PUNSUBSCRIBE', 'PING', 'QUIT']);

export class FakeRedis extends EventEmitter {
  readonly options: {
    host: string;
    port: number;
    db: number;
    enableOfflineQueue: boolean;
    autoResendUnfulfilledCommands: boolean;
    autoResubscribe: boolean;
    enableAutoPipelining: boolean;
    maxRetriesPerRequest: number | null;
    retryStrategy: (times: number) => number;
  };
  status: 'wait' | 'connecting' | 'connect' | 'ready' | 'reconnecting' | 'close' | 'end' = 'wait';
  readonly name: string;
  readonly server: FakeRedisServer;
  readonly network: Network;
  [command: string]: unknown;

  #socket: Socket | undefined;
  #commandQueue: Command[] = [];
  #offlineQueue: Command[] = [];
  #prevCommandQueue: Command[] | undefined;
  #retryAttempts = 0;
  #reconnectTimer: unknown;
  #manuallyClosing = false;
  /** Channels this connection is subscribed to (ioredis' condition.subscriber); none after a reconnect until subscribed again. */
  readonly #channels = new Set<string>();
  /** The channels of the connection that closed, for autoResubscribe (ioredis' prevCondition). */
  #resubscribe: string[] | undefined;
  readonly #scripts = new Map<string, { lua: string; sha: string; numberOfKeys: number | undefined }>();
  #duplicates = 0;
  readonly #address: { host: string; port: number } | undefined;

  constructor(server: FakeRedisServer, network: Network, options: FakeClientOptions) {
    super();
    this.server = server;
    this.network = network;
    this.name = options.name;
    this.#address = options.address;
    this.options = {
      host: options.address?.host ?? server.host,
      port: options.address?.port ?? server.port,
      db: 0,
      enableOfflineQueue: options.enableOfflineQueue ?? true,
      autoResendUnfulfilledCommands: options.autoResendUnfulfilledCommands ?? true,
      autoResubscribe: true,
      enableAutoPipelining: false,
      maxRetriesPerRequest: options.maxRetriesPerRequest === undefined ? 20 : options.maxRetriesPerRequest,
      retryStrategy: (times) => Math.min(times * 50, 2000),
    };
    if (options.connected) {
      // Already connected and ready, as a user's client is when handed to a Redlock.
      const socket = new Socket(this, network, server.incarnation);
      if (!server.connect(socket)) throw new Error(`fake client ${this.name}: ${server.port} is down`);
      this.#socket = socket;
      this.status = 'ready';
    } else {
      // ioredis connects in its constructor (unless lazyConnect): connecting at once.
      this.status = 'connecting';
      this.#scheduleConnect(0);
    }
  }

  /** ioredis' connect(): resolves once ready (a client already connecting just waits). */
  connect(): Promise<void> {
    if (this.status === 'ready') return Promise.resolve();
    if (this.status === 'end') return Promise.reject(new Error(CONNECTION_CLOSED));
    return new Promise((resolve, reject) => {
      const onReady = () => {
        this.off('end', onEnd);
        resolve();
      };
      const onEnd = () => {
        this.off('ready', onReady);
        reject(new Error(CONNECTION_CLOSED));
      };
      this.once('ready', onReady);
      this.once('end', onEnd);
    });
  }

  /** The socket as members/redis-member.ts may look at it (no cork: every write is its own). */
  get stream(): undefined {
    return undefined;
  }

  // ---- ioredis API -------------------------------------------------------------------------

  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void {
    const script = { lua: definition.lua, sha: sha1(definition.lua), numberOfKeys: definition.numberOfKeys };
    this.#scripts.set(name, script);
    this[name] = (...args: unknown[]) => {
      // ioredis flattens a command's arguments one level: keys and arguments may come as arrays.
      const words = args.flat().map(String);
      if (script.numberOfKeys !== undefined) words.unshift(String(script.numberOfKeys));
      return this.#issue({ name, args: words, script: { name, lua: script.lua, sha: script.sha } });
    };
  }

  call(command: string, ...args: unknown[]): Promise<unknown> {
    return this.#issue({ name: command.toUpperCase(), args: args.flat().map(String) });
  }

  info(...sections: string[]): Promise<string> {
    return this.call('INFO', ...sections) as Promise<string>;
  }

  role(): Promise<unknown[]> {
    return this.call('ROLE') as Promise<unknown[]>;
  }

  ping(): Promise<string> {
    return this.call('PING') as Promise<string>;
  }

  get(key: string): Promise<string | null> {
    return this.call('GET', key) as Promise<string | null>;
  }

  set(key: string, ...args: unknown[]): Promise<unknown> {
    return this.call('SET', key, ...args);
  }

  del(...keys: string[]): Promise<number> {
    return this.call('DEL', ...keys) as Promise<number>;
  }

  publish(channel: string, message: string): Promise<number> {
    return this.call('PUBLISH', channel, message) as Promise<number>;
  }

  async subscribe(...channels: string[]): Promise<number> {
    const reply = (await this.#issue({ name: 'SUBSCRIBE', args: channels.flat() })) as [string, string, number];
    for (const channel of channels.flat()) this.#channels.add(channel);
    return reply[2];
  }

  async unsubscribe(...channels: string[]): Promise<number> {
    for (const channel of channels.flat()) this.#channels.delete(channel);
    const reply = (await this.#issue({ name: 'UNSUBSCRIBE', args: channels.flat() })) as [string, string, number];
    return reply[2];
  }

  /** A new connection with the same options (ioredis connects it at once). */
  duplicate(): FakeRedis {
    const copy = new FakeRedis(this.server, this.network, {
      name: `${this.name}~${++this.#duplicates}`,
      enableOfflineQueue: this.options.enableOfflineQueue,
      autoResendUnfulfilledCommands: this.options.autoResendUnfulfilledCommands,
      maxRetriesPerRequest: this.options.maxRetriesPerRequest,
      ...(this.#address ? { address: this.#address } : {}),
    });
    for (const [name, script] of this.#scripts) copy.defineCommand(name, script);
    return copy;
  }

  disconnect(): void {
    this.#manuallyClosing = true;
    if (this.#reconnectTimer !== undefined) this.network.clock.clearTimer(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const socket = this.#socket;
    if (socket) {
      this.server.disconnect(socket);
      this._socketClosed(socket);
    } else {
      this.#end();
    }
  }

  /** Test hook (not ioredis): the link breaks, as a TCP reset; the client reconnects and re-sends to the same process. */
  dropConnection(): void {
    const socket = this.#socket;
    if (!socket) return;
    this.network.record({ client: this.name, port: this.options.port, incarnation: socket.incarnation, what: 'reset' });
    this.server.disconnect(socket);
    this._socketClosed(socket);
  }

  async quit(): Promise<'OK'> {
    this.disconnect();
    return 'OK';
  }

  // ---- the connection ----------------------------------------------------------------------

  /** ioredis' sendCommand: write now when ready (or a handshake command while connecting), else queue offline. */
  #issue(spec: Omit<Command, 'resolve' | 'reject'>): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const command: Command = { ...spec, resolve, reject };
      if (this.status === 'end') return reject(new Error(CONNECTION_CLOSED));
      this.#send(command);
    });
  }

  #send(command: Command): void {
    // ioredis: a connection that subscribed (RESP2) takes only subscriber commands.
    if (this.#channels.size > 0 && !command.handshake && !SUBSCRIBER_COMMANDS.has(command.name))
      return command.reject(new Error('Connection in subscriber mode, only subscriber commands may be used'));
    const socket = this.#socket;
    const writable = socket !== undefined && socket.open && (this.status === 'ready' || (this.status === 'connect' && command.handshake === true));
    if (writable) return this.#write(socket, command);
    if (!this.options.enableOfflineQueue) return command.reject(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    this.#offlineQueue.push(command);
  }

  /** Writes `command` on `socket` (a script: EVAL the first time on this socket, EVALSHA after). */
  #write(socket: Socket, command: Command, resent = false): void {
    let words: string[];
    if (command.script) {
      const { lua, sha } = command.script;
      if (socket.loaded.has(sha)) words = ['EVALSHA', sha, ...command.args];
      else {
        socket.loaded.add(sha);
        words = ['EVAL', lua, ...command.args];
      }
    } else {
      words = [command.name, ...command.args];
    }
    this.#commandQueue.push(command);
    if (resent)
      this.network.record({
        client: this.name,
        port: this.options.port,
        incarnation: socket.incarnation,
        what: 'resend',
        command: command.name,
        args: command.args,
      });
    socket.requests.send(() =>
      this.server.receive(socket, words, (reply) => {
        const incarnation = this.server.incarnation;
        this.network.record({
          client: this.name,
          port: this.options.port,
          incarnation,
          what: 'run',
          command: command.name,
          args: command.args,
          reply: reply instanceof ErrorReply ? `error: ${reply.message}` : reply,
        });
        socket.replies.send(() => this.#answered(socket, command, reply));
      }),
    );
  }

  #answered(socket: Socket, command: Command, reply: Reply): void {
    if (!socket.open || socket !== this.#socket) return;
    const head = this.#commandQueue.shift();
    if (head !== command) throw new Error(`fake client ${this.name}: reply out of order (${head?.name} expected, ${command.name} answered)`);
    if (reply instanceof ErrorReply) {
      if (command.script && reply.message.includes('NOSCRIPT')) {
        // ioredis' Script: forget the script on this socket and issue the command again.
        socket.loaded.delete(command.script.sha);
        return this.#send({ ...command });
      }
      return command.reject(new ReplyError(reply.message));
    }
    command.resolve(decodeReply(reply));
  }

  /** @internal A pub/sub message arrived on `socket`. */
  _pushed(socket: Socket, message: Reply): void {
    if (!socket.open || socket !== this.#socket) return;
    const [kind, channel, payload] = message as [string, string, string];
    if (kind === 'message') this.emit('message', channel, payload);
  }

  /** @internal The server closed `socket` (killed, or the link reset), or we did (disconnect). */
  _socketClosed(socket: Socket): void {
    if (socket !== this.#socket) return;
    socket.shut();
    this.#socket = undefined;
    this.network.record({ client: this.name, port: this.options.port, incarnation: socket.incarnation, what: 'close' });
    // ioredis' closeHandler: what was written and not answered is kept for re-sending (only a
    // ready connection's; a connection that dies during its handshake loses only the ready check).
    if (this.status === 'ready' && this.#commandQueue.length > 0) this.#prevCommandQueue = this.#commandQueue;
    if (this.status === 'ready' && this.#resubscribe === undefined) this.#resubscribe = [...this.#channels];
    this.#channels.clear();
    this.#commandQueue = [];
    this.#closed();
  }

  /** ioredis' closeHandler after a socket closed or a connect failed: end, or retry later. */
  #closed(): void {
    this.status = 'close';
    process.nextTick(() => this.emit('close'));
    if (this.#manuallyClosing) return this.#end();
    const delay = this.options.retryStrategy(++this.#retryAttempts);
    this.status = 'reconnecting';
    process.nextTick(() => this.emit('reconnecting', delay));
    this.#scheduleConnect(delay);
    const max = this.options.maxRetriesPerRequest;
    if (typeof max === 'number' && max >= 0 && this.#retryAttempts % (max + 1) === 0) {
      const error = Object.assign(
        new Error(`Reached the max retries per request limit (which is ${max}). Refer to "maxRetriesPerRequest" option for details.`),
        { name: 'MaxRetriesPerRequestError' },
      );
      for (const command of this.#offlineQueue.splice(0)) command.reject(error);
    }
  }

  #end(): void {
    this.status = 'end';
    const error = new Error(CONNECTION_CLOSED);
    for (const command of [...this.#offlineQueue.splice(0), ...this.#commandQueue.splice(0), ...(this.#prevCommandQueue?.splice(0) ?? [])])
      command.reject(error);
    process.nextTick(() => this.emit('end'));
  }

  #scheduleConnect(delay: number): void {
    this.#reconnectTimer = this.network.clock.setTimer(() => {
      this.#reconnectTimer = undefined;
      this.#connect();
    }, delay);
  }

  #connect(): void {
    if (this.#manuallyClosing) return;
    this.status = 'connecting';
    const socket = new Socket(this, this.network, this.server.incarnation);
    if (!this.server.connect(socket)) {
      socket.shut();
      if (this.listenerCount('error') > 0) {
        const error = Object.assign(new Error(`connect ECONNREFUSED ${this.options.host}:${this.options.port}`), { code: 'ECONNREFUSED' });
        process.nextTick(() => this.emit('error', error));
      }
      return this.#closed();
    }
    this.#socket = socket;
    this.status = 'connect';
    process.nextTick(() => this.emit('connect'));
    // The ready check: INFO, a handshake command, first on the new socket.
    this.#send({ name: 'INFO', args: [], handshake: true, resolve: () => this.#ready(socket), reject: () => undefined });
  }

  /** ioredis' readyHandler. */
  #ready(socket: Socket): void {
    if (socket !== this.#socket || !socket.open) return;
    this.status = 'ready';
    this.#retryAttempts = 0;
    const resubscribe = this.#resubscribe;
    this.#resubscribe = undefined;
    // As in ioredis, nobody handles this promise (src/waiting/notifications.ts turns autoResubscribe off for that).
    if (this.options.autoResubscribe && resubscribe && resubscribe.length > 0) void this.subscribe(...resubscribe);
    const previous = this.#prevCommandQueue;
    this.#prevCommandQueue = undefined;
    if (previous && this.options.autoResendUnfulfilledCommands) for (const command of previous) this.#write(socket, command, true);
    const offline = this.#offlineQueue.splice(0);
    for (const command of offline) this.#send(command);
    this.network.record({ client: this.name, port: this.options.port, incarnation: socket.incarnation, what: 'ready' });
    process.nextTick(() => this.emit('ready'));
  }
}

/** A reply as ioredis hands it over (RESP2, no stringNumbers); an error reply is the caller's (a ReplyError). */
export function decodeReply(reply: Reply): unknown {
  if (reply instanceof StatusReply) return reply.status;
  if (Array.isArray(reply)) return reply.map(decodeReply);
  return reply;
}
