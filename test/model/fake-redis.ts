/**
 * A fake Redis server that runs quorumlock's REAL Lua scripts (in fengari, see lua-vm.ts) against
 * an in-memory keyspace, on a ManualClock. It implements exactly the commands those scripts and
 * the fake client use, with Redis' replies and errors; any other command or option is refused
 * loudly: an error reply, and a line in `problems`, which the tests assert is empty (a fake that
 * answered something plausible to a command it does not know would make a test pass for nothing).
 *
 * Commands: GET, SET (EX, PX, NX, XX, KEEPTTL, GET), DEL, EXISTS, PTTL, TTL, PEXPIRE, EXPIRE,
 * HGET, HMGET, HSET, HDEL, HGETALL, ZADD (score member pairs), ZRANGE (by rank, WITHSCORES),
 * ZRANGEBYSCORE (inf and exclusive bounds, WITHSCORES), ZREMRANGEBYSCORE, ZREM, ZRANK, ZSCORE, ZCARD, PUBLISH,
 * SUBSCRIBE, UNSUBSCRIBE, PUBSUB NUMSUB, TIME, INFO (server, clients, memory, persistence, stats, replication,
 * cpu, cluster, keyspace; default/all/everything), ROLE, PING, ECHO, DBSIZE, FLUSHALL, SELECT 0,
 * CLIENT SETNAME/SETINFO, EVAL, EVALSHA (NOSCRIPT when the process has not seen the script),
 * SCRIPT LOAD/EXISTS/FLUSH, QUIT. Empty hashes and sorted sets vanish, as in Redis.
 *
 * Time: the server's clock is `offsetMs + rate × clock.now()` (ms since the Unix epoch; rate 1
 * unless the server is given a drifting clock), read in whole
 * ms for expiries (mstime()) and in µs for TIME. A key with an expiry is gone once the server's
 * ms are past it (Redis: expired when now > when); it is dropped lazily when touched, which is
 * all any client can observe (a script sees one frozen time, as in Redis 7).
 *
 * A server is an address (host:port) whose process can change: kill() and start() (or restart())
 * begin a new process with a new run_id and master_replid, its data wiped or kept ("from disk":
 * keys already expired are not loaded), its script cache empty; every connection to the old
 * process is closed (the fake client then reconnects and re-sends, as ioredis does). failover()
 * gives the data a new master_replid (a promotion); resync() replaces the data and the replid,
 * keeping the run_id (a demoted master that full-resynced). pause() holds every command that
 * arrives until resume() (SIGSTOP, CLIENT PAUSE). evict() removes a key as an eviction does, and
 * counts it in INFO stats' evicted_keys (per process, as Redis' stats).
 *
 * For the exploration (explore.ts): onScript sees every script run (its text, KEYS, ARGV, reply
 * and connection), hash() reads a hash without running a command, and rewrite (off unless set)
 * changes the text a script runs as, to show that a property fails without a mechanism.
 */
import type { ManualClock } from '../../src/clock/index.js';
import { ErrorReply, type LuaVM, type Reply, sha1, sharedLuaVM, StatusReply } from './lua-vm.js';

export { ErrorReply, StatusReply, type Reply };

export type Entry =
  | { type: 'string'; value: string; expiresAt: number | undefined }
  | { type: 'hash'; value: Map<string, string>; expiresAt: number | undefined }
  | { type: 'zset'; value: Map<string, number>; expiresAt: number | undefined };

/** One end of a client connection, as the server sees it. */
export interface ServerSocket {
  /** Which client process this connection belongs to (its name in traces), when it says. */
  readonly client?: string;
  /** The process this socket is connected to closed it (it died, or the link was reset). */
  closed(): void;
  /** A pub/sub message for this (subscribed) connection. */
  push(message: Reply): void;
}

export interface FakeRedisOptions {
  clock: ManualClock;
  host?: string;
  port: number;
  /** The server's wall clock at clock time 0. Default 1_700_000_000_000 (Nov 2023). */
  offsetMs?: number;
  /** Server ms per clock ms: 1.05 = this server's clock runs 5 % fast (the drift simulation, bench/drift). Default 1. */
  rate?: number;
  /** INFO memory: 0 = no limit. */
  maxmemory?: number;
  maxmemoryPolicy?: string;
  version?: string;
}

interface Process {
  readonly incarnation: number;
  readonly runId: string;
  replid: string;
  data: Map<string, Entry>;
  readonly scripts: Map<string, string>;
  readonly sockets: Set<ServerSocket>;
  readonly channels: Map<string, Set<ServerSocket>>;
  readonly startedAt: number;
  commands: number;
  /** INFO commandstats: per command name (lower case), its calls and the calls that failed. */
  readonly commandStats: Map<string, { calls: number; failed: number }>;
  /** Promoted (or resynced) since it started: INFO replication's second_repl_offset is no longer -1. */
  promoted: boolean;
  /** INFO stats evicted_keys: keys this process evicted (evict()), since it started. */
  evictedKeys: number;
}

/** One script run, for an observer (FakeRedisServer.onScript): the script's text as sent, its KEYS and ARGV, its reply. */
export interface ScriptRun {
  body: string;
  keys: string[];
  argv: string[];
  reply: Reply;
  /** The connection it came on (none for execute() without one). */
  socket: ServerSocket | undefined;
}

/** One command from a client, run once the server gets to it (now, or at resume() when paused). */
interface Arrival {
  socket: ServerSocket;
  args: string[];
  answer(reply: Reply): void;
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value';
const NOT_INTEGER = 'ERR value is not an integer or out of range';
const SYNTAX = 'ERR syntax error';
/** Commands a script may not run (Redis flags them noscript). */
const NOSCRIPT_COMMANDS = new Set(['EVAL', 'EVALSHA', 'SCRIPT', 'SUBSCRIBE', 'UNSUBSCRIBE', 'QUIT', 'SELECT', 'CLIENT']);
/** Commands that write (refused on a read-only replica). */
const WRITE_COMMANDS = new Set(['SET', 'DEL', 'PEXPIRE', 'EXPIRE', 'HSET', 'HDEL', 'ZADD', 'ZREM', 'FLUSHALL']);

let idCounter = 0;

export class FakeRedisServer {
  readonly host: string;
  readonly port: number;
  readonly clock: ManualClock;
  readonly offsetMs: number;
  readonly rate: number;
  readonly version: string;
  maxmemory: number;
  maxmemoryPolicy: string;
  /** 'master', or 'slave' (a replica: read-only, INFO says so). */
  role: 'master' | 'slave' = 'master';
  /** Commands or options this fake does not implement, as they were asked for. Must stay empty. */
  readonly problems: string[] = [];
  /** Every command run, for traces: [server ms, process incarnation, args]. Off unless `record`. */
  readonly log: { at: number; incarnation: number; args: string[]; reply: Reply }[] = [];
  record = false;
  /**
   * Called after every EVAL/EVALSHA that found its script (the exploration reads the epoch hash
   * there: which epoch an operator's trust.lua wrote into, and when each epoch was first seen).
   */
  onScript: ((run: ScriptRun) => void) | undefined;
  /**
   * A mutation for experiments (never set by default): the text actually run for a script, e.g.
   * trust.lua with its epoch check removed, to show that a property fails without its mechanism.
   * The script keeps its sha (EVALSHA finds it), only what runs changes.
   */
  rewrite: ((body: string) => string) | undefined;

  #process: Process | undefined;
  #incarnations = 0;
  #paused: Arrival[] | undefined;
  readonly #vm: LuaVM;
  readonly #salt = ++idCounter;

  constructor(options: FakeRedisOptions) {
    this.clock = options.clock;
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port;
    this.offsetMs = options.offsetMs ?? 1_700_000_000_000;
    this.rate = options.rate ?? 1;
    this.maxmemory = options.maxmemory ?? 0;
    this.maxmemoryPolicy = options.maxmemoryPolicy ?? 'noeviction';
    this.version = options.version ?? '7.0.15';
    this.#vm = sharedLuaVM();
    this.start({ keepData: false });
  }

  /** The server's wall clock in ms, as Redis' mstime() reads it. */
  nowMs(): number {
    return Math.floor(this.offsetMs + this.rate * this.clock.now());
  }

  #nowUs(): number {
    return Math.floor((this.offsetMs + this.rate * this.clock.now()) * 1000);
  }

  get up(): boolean {
    return this.#process !== undefined;
  }

  get paused(): boolean {
    return this.#paused !== undefined;
  }

  get runId(): string | undefined {
    return this.#process?.runId;
  }

  get replid(): string | undefined {
    return this.#process?.replid;
  }

  /** How many processes this address has had (1 for the first). */
  get incarnation(): number {
    return this.#process?.incarnation ?? this.#incarnations;
  }

  #newId(kind: string): string {
    return sha1(`${this.host}:${this.port}:${this.#salt}:${kind}:${this.#incarnations}:${++idCounter}`);
  }

  /** Starts a new process (the address must be down, or this is the first start). */
  start({ keepData }: { keepData: boolean }): void {
    if (this.#process) throw new Error(`fake-redis ${this.port}: already running`);
    this.#incarnations++;
    const data = new Map<string, Entry>();
    if (keepData) {
      const now = this.nowMs();
      for (const [key, entry] of this.#lastData) if (entry.expiresAt === undefined || entry.expiresAt >= now) data.set(key, cloneEntry(entry));
    }
    this.#process = {
      incarnation: this.#incarnations,
      runId: this.#newId('run'),
      replid: this.#newId('replid'),
      data,
      scripts: new Map(),
      sockets: new Set(),
      channels: new Map(),
      startedAt: this.nowMs(),
      commands: 0,
      commandStats: new Map(),
      promoted: false,
      evictedKeys: 0,
    };
  }

  #lastData = new Map<string, Entry>();

  /** SIGKILL: the process is gone; its connections close; what it had not run is lost. */
  kill(): void {
    const process = this.#process;
    if (!process) return;
    this.#lastData = process.data;
    this.#process = undefined;
    this.#paused = undefined;
    for (const socket of [...process.sockets]) socket.closed();
  }

  restart({ keepData }: { keepData: boolean }): void {
    this.kill();
    this.start({ keepData });
  }

  /** A promotion: the same data under a new replication id. */
  failover(): void {
    if (!this.#process) return;
    this.#process.replid = this.#newId('replid');
    this.#process.promoted = true;
  }

  /** A full resync from another master: its data (cloned), a new replication id, the same run id. */
  resync(from: FakeRedisServer | undefined): void {
    const process = this.#process;
    if (!process) return;
    const source = from ? from.#process : undefined;
    process.data = new Map([...(source?.data ?? new Map<string, Entry>())].map(([key, entry]) => [key, cloneEntry(entry)]));
    process.replid = source?.replid ?? this.#newId('replid');
    // Only a replica resyncs, and it is promoted to be a master again (a new replication id).
    process.promoted = true;
  }

  /** The current process's keyspace, copied (for probes that each continue from the same state). */
  snapshot(): Map<string, Entry> {
    return new Map([...(this.#process?.data ?? [])].map(([key, entry]) => [key, cloneEntry(entry)]));
  }

  /** Puts back a snapshot() into the current process (same run id, same replication id). */
  restore(snapshot: Map<string, Entry>): void {
    if (this.#process) this.#process.data = new Map([...snapshot].map(([key, entry]) => [key, cloneEntry(entry)]));
  }

  /**
   * The server evicts `key` (maxmemory reached under an eviction policy, which CONFIG SET can
   * switch on at runtime with every connection kept): the key is gone and INFO stats'
   * evicted_keys counts one more, as Redis counts every eviction. False when there is no such key.
   */
  evict(key: string): boolean {
    const process = this.#process;
    if (!process || !this.#lookup(process, key)) return false;
    process.data.delete(key);
    process.evictedKeys++;
    return true;
  }

  pause(): void {
    this.#paused ??= [];
  }

  resume(): void {
    const held = this.#paused;
    this.#paused = undefined;
    for (const arrival of held ?? []) this.#run(arrival);
  }

  /** A new connection to the current process, or undefined when the address is down (ECONNREFUSED). */
  connect(socket: ServerSocket): boolean {
    if (!this.#process) return false;
    this.#process.sockets.add(socket);
    return true;
  }

  /** The connection closes from the client's side (or a reset): the server forgets it. */
  disconnect(socket: ServerSocket): void {
    const process = this.#process;
    if (!process) return;
    process.sockets.delete(socket);
    for (const [channel, sockets] of process.channels) {
      sockets.delete(socket);
      if (sockets.size === 0) process.channels.delete(channel);
    }
  }

  /** Whether `socket` is a live connection to the current process. */
  connected(socket: ServerSocket): boolean {
    return this.#process?.sockets.has(socket) === true;
  }

  /**
   * A command arrives on `socket`: it runs now (or at resume() when paused), and `answer` gets
   * the reply at once. A socket not connected to the current process gets nothing (its
   * connection is closed; the client re-sends).
   */
  receive(socket: ServerSocket, args: string[], answer: (reply: Reply) => void): void {
    if (!this.connected(socket)) return;
    const arrival = { socket, args, answer };
    if (this.#paused) this.#paused.push(arrival);
    else this.#run(arrival);
  }

  #run({ socket, args, answer }: Arrival): void {
    if (!this.connected(socket)) return;
    const reply = this.execute(args, socket);
    answer(reply);
  }

  /** Runs one command on the current process (for tests and tools: no connection needed). */
  execute(args: readonly string[], socket?: ServerSocket): Reply {
    const process = this.#process;
    if (!process) throw new Error(`fake-redis ${this.port}: down`);
    process.commands++;
    const reply = this.#command(process, args.map(String), socket, false);
    this.countCall(String(args[0]), reply instanceof ErrorReply);
    if (this.record) this.log.push({ at: this.nowMs(), incarnation: process.incarnation, args: [...args], reply });
    return reply;
  }

  /** Counts a call of `command` in INFO commandstats (execute() does; a script run outside it may). */
  countCall(command: string, failed: boolean): void {
    const process = this.#process;
    if (!process) throw new Error(`fake-redis ${this.port}: down`);
    const stat = process.commandStats.get(command.toLowerCase()) ?? { calls: 0, failed: 0 };
    stat.calls++;
    if (failed) stat.failed++;
    process.commandStats.set(command.toLowerCase(), stat);
  }

  /** The string value of `key` now (an expired key is dropped), without running a command: for probes. */
  peek(key: string): string | undefined {
    const process = this.#process;
    const entry = process && this.#lookup(process, key);
    return entry?.type === 'string' ? entry.value : undefined;
  }

  /** The fields of hash `key` now, without running a command (no stats move): undefined when there is none. */
  hash(key: string): Record<string, string> | undefined {
    const process = this.#process;
    const entry = process && this.#lookup(process, key);
    return entry?.type === 'hash' ? Object.fromEntries(entry.value) : undefined;
  }

  /** A snapshot of the keyspace (expired keys dropped), for assertions and traces. */
  dump(): Record<string, unknown> {
    const process = this.#process;
    if (!process) return {};
    const out: Record<string, unknown> = {};
    for (const key of [...process.data.keys()].sort()) {
      const entry = this.#lookup(process, key);
      if (!entry) continue;
      out[key] = entry.type === 'string' ? entry.value : Object.fromEntries(entry.value);
    }
    return out;
  }

  #problem(text: string): ErrorReply {
    this.problems.push(text);
    return new ErrorReply(`ERR fake-redis does not implement ${text}`);
  }

  #lookup(process: Process, key: string): Entry | undefined {
    const entry = process.data.get(key);
    if (entry && entry.expiresAt !== undefined && this.nowMs() > entry.expiresAt) {
      process.data.delete(key);
      return undefined;
    }
    return entry;
  }

  #command(process: Process, args: string[], socket: ServerSocket | undefined, fromScript: boolean): Reply {
    const name = (args[0] ?? '').toUpperCase();
    const rest = args.slice(1);
    if (fromScript && NOSCRIPT_COMMANDS.has(name)) return new ErrorReply('ERR This Redis command is not allowed from script');
    if (this.role === 'slave' && WRITE_COMMANDS.has(name)) return new ErrorReply("READONLY You can't write against a read only replica.");
    const arity = (min: number, max = Infinity) => rest.length >= min && rest.length <= max;
    const wrongArgs = () => new ErrorReply(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
    const get = (key: string, type: Entry['type']): Entry | ErrorReply | undefined => {
      const entry = this.#lookup(process, key);
      if (entry && entry.type !== type) return new ErrorReply(WRONGTYPE);
      return entry;
    };
    const integer = (text: string): number | undefined => (/^-?\d+$/.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined);
    const data = process.data;

    switch (name) {
      case 'PING':
        return rest.length === 0 ? new StatusReply('PONG') : rest[0]!;
      case 'ECHO':
        return arity(1, 1) ? rest[0]! : wrongArgs();
      case 'QUIT':
        return new StatusReply('OK');
      case 'SELECT':
        return rest[0] === '0' ? new StatusReply('OK') : this.#problem(`SELECT ${rest.join(' ')} (only db 0)`);
      case 'CLIENT': {
        const sub = (rest[0] ?? '').toUpperCase();
        if (sub === 'SETNAME' || sub === 'SETINFO') return new StatusReply('OK');
        return this.#problem(`CLIENT ${rest.join(' ')}`);
      }
      case 'TIME': {
        if (!arity(0, 0)) return wrongArgs();
        const us = this.#nowUs();
        return [String(Math.floor(us / 1_000_000)), String(us % 1_000_000)];
      }
      case 'INFO':
        return this.#info(process, rest);
      case 'ROLE':
        return this.role === 'master' ? ['master', 0, []] : ['slave', '127.0.0.1', 6379, 'connected', 0];
      case 'DBSIZE': {
        for (const key of [...data.keys()]) this.#lookup(process, key);
        return data.size;
      }
      case 'FLUSHALL':
        data.clear();
        return new StatusReply('OK');

      case 'GET': {
        if (!arity(1, 1)) return wrongArgs();
        const entry = get(rest[0]!, 'string');
        if (entry instanceof ErrorReply) return entry;
        return entry ? (entry.value as string) : null;
      }
      case 'SET': {
        if (!arity(2)) return wrongArgs();
        const [key, value] = rest as [string, string];
        let expiresAt: number | undefined;
        let keepTtl = false;
        let condition: 'NX' | 'XX' | undefined;
        let returnOld = false;
        for (let i = 2; i < rest.length; i++) {
          const option = rest[i]!.toUpperCase();
          if (option === 'NX' || option === 'XX') {
            if (condition && condition !== option) return new ErrorReply(SYNTAX);
            condition = option;
          } else if (option === 'GET') returnOld = true;
          else if (option === 'KEEPTTL') keepTtl = true;
          else if (option === 'PX' || option === 'EX') {
            const amount = integer(rest[++i] ?? '');
            if (amount === undefined) return new ErrorReply(rest[i] === undefined ? SYNTAX : NOT_INTEGER);
            if (amount <= 0) return new ErrorReply(`ERR invalid expire time in 'set' command`);
            expiresAt = this.nowMs() + (option === 'PX' ? amount : amount * 1000);
          } else return this.#problem(`SET option ${option}`);
        }
        const old = this.#lookup(process, key);
        if (returnOld && old && old.type !== 'string') return new ErrorReply(WRONGTYPE);
        const oldValue = old?.type === 'string' ? old.value : null;
        if ((condition === 'NX' && old) || (condition === 'XX' && !old)) return returnOld ? oldValue : null;
        data.set(key, { type: 'string', value, expiresAt: keepTtl && old ? old.expiresAt : expiresAt });
        return returnOld ? oldValue : new StatusReply('OK');
      }
      case 'DEL':
      case 'EXISTS': {
        if (!arity(1)) return wrongArgs();
        let count = 0;
        for (const key of rest) {
          if (this.#lookup(process, key)) {
            count++;
            if (name === 'DEL') data.delete(key);
          }
        }
        return count;
      }
      case 'PTTL':
      case 'TTL': {
        if (!arity(1, 1)) return wrongArgs();
        const entry = this.#lookup(process, rest[0]!);
        if (!entry) return -2;
        if (entry.expiresAt === undefined) return -1;
        const ms = Math.max(0, entry.expiresAt - this.nowMs());
        return name === 'PTTL' ? ms : Math.round(ms / 1000);
      }
      case 'PEXPIRE':
      case 'EXPIRE': {
        if (rest.length > 2) return this.#problem(`${name} option ${rest.slice(2).join(' ')}`);
        if (!arity(2, 2)) return wrongArgs();
        const amount = integer(rest[1]!);
        if (amount === undefined) return new ErrorReply(NOT_INTEGER);
        const entry = this.#lookup(process, rest[0]!);
        if (!entry) return 0;
        const ms = name === 'PEXPIRE' ? amount : amount * 1000;
        if (ms <= 0) data.delete(rest[0]!);
        else entry.expiresAt = this.nowMs() + ms;
        return 1;
      }

      case 'HGET': {
        if (!arity(2, 2)) return wrongArgs();
        const entry = get(rest[0]!, 'hash');
        if (entry instanceof ErrorReply) return entry;
        return (entry?.value as Map<string, string> | undefined)?.get(rest[1]!) ?? null;
      }
      case 'HMGET': {
        if (!arity(2)) return wrongArgs();
        const entry = get(rest[0]!, 'hash');
        if (entry instanceof ErrorReply) return entry;
        const hash = entry?.value as Map<string, string> | undefined;
        return rest.slice(1).map((field) => hash?.get(field) ?? null);
      }
      case 'HGETALL': {
        if (!arity(1, 1)) return wrongArgs();
        const entry = get(rest[0]!, 'hash');
        if (entry instanceof ErrorReply) return entry;
        return [...((entry?.value as Map<string, string> | undefined) ?? new Map<string, string>())].flat();
      }
      case 'HSET': {
        if (rest.length < 3 || rest.length % 2 === 0) return wrongArgs();
        const entry = get(rest[0]!, 'hash');
        if (entry instanceof ErrorReply) return entry;
        const hash = (entry?.value as Map<string, string> | undefined) ?? new Map<string, string>();
        if (!entry) data.set(rest[0]!, { type: 'hash', value: hash, expiresAt: undefined });
        let added = 0;
        for (let i = 1; i < rest.length; i += 2) {
          if (!hash.has(rest[i]!)) added++;
          hash.set(rest[i]!, rest[i + 1]!);
        }
        return added;
      }
      case 'HDEL': {
        if (!arity(2)) return wrongArgs();
        const entry = get(rest[0]!, 'hash');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return 0;
        const hash = entry.value as Map<string, string>;
        let removed = 0;
        for (const field of rest.slice(1)) if (hash.delete(field)) removed++;
        if (hash.size === 0) data.delete(rest[0]!);
        return removed;
      }

      case 'ZADD': {
        if (rest.length < 3 || rest.length % 2 === 0) {
          const option = rest[1]?.toUpperCase();
          if (option && ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(option)) return this.#problem(`ZADD option ${option}`);
          return wrongArgs();
        }
        const pairs: [number, string][] = [];
        for (let i = 1; i < rest.length; i += 2) {
          const option = rest[i]!.toUpperCase();
          if (['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'].includes(option)) return this.#problem(`ZADD option ${option}`);
          const score = parseScore(rest[i]!);
          if (score === undefined) return new ErrorReply('ERR value is not a valid float');
          pairs.push([score, rest[i + 1]!]);
        }
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        const zset = (entry?.value as Map<string, number> | undefined) ?? new Map<string, number>();
        if (!entry) data.set(rest[0]!, { type: 'zset', value: zset, expiresAt: undefined });
        let added = 0;
        for (const [score, member] of pairs) {
          if (!zset.has(member)) added++;
          zset.set(member, score);
        }
        return added;
      }
      case 'ZREM': {
        if (!arity(2)) return wrongArgs();
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return 0;
        const zset = entry.value as Map<string, number>;
        let removed = 0;
        for (const member of rest.slice(1)) if (zset.delete(member)) removed++;
        if (zset.size === 0) data.delete(rest[0]!);
        return removed;
      }
      case 'ZCARD': {
        if (!arity(1, 1)) return wrongArgs();
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        return entry ? (entry.value as Map<string, number>).size : 0;
      }
      case 'ZSCORE': {
        if (!arity(2, 2)) return wrongArgs();
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        const score = (entry?.value as Map<string, number> | undefined)?.get(rest[1]!);
        return score === undefined ? null : formatScore(score);
      }
      case 'ZRANK': {
        if (!arity(2, 2)) return wrongArgs();
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return null;
        const rank = sorted(entry.value as Map<string, number>).findIndex(([member]) => member === rest[1]);
        return rank < 0 ? null : rank;
      }
      case 'ZRANGE': {
        if (!arity(3)) return wrongArgs();
        const extra = rest.slice(3).map((word) => word.toUpperCase());
        if (extra.some((word) => word !== 'WITHSCORES')) return this.#problem(`ZRANGE option ${extra.join(' ')}`);
        const start = integer(rest[1]!);
        const stop = integer(rest[2]!);
        if (start === undefined || stop === undefined) return new ErrorReply(NOT_INTEGER);
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return [];
        const all = sorted(entry.value as Map<string, number>);
        const from = Math.max(0, start < 0 ? all.length + start : start);
        const to = Math.min(all.length - 1, stop < 0 ? all.length + stop : stop);
        return withScores(all.slice(from, to + 1), extra.length > 0);
      }
      case 'ZRANGEBYSCORE': {
        if (!arity(3)) return wrongArgs();
        const extra = rest.slice(3).map((word) => word.toUpperCase());
        if (extra.some((word) => word !== 'WITHSCORES')) return this.#problem(`ZRANGEBYSCORE option ${extra.join(' ')}`);
        const min = parseBound(rest[1]!);
        const max = parseBound(rest[2]!);
        if (!min || !max) return new ErrorReply('ERR min or max is not a float');
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return [];
        const inside = sorted(entry.value as Map<string, number>).filter(
          ([, score]) => (min.exclusive ? score > min.value : score >= min.value) && (max.exclusive ? score < max.value : score <= max.value),
        );
        return withScores(inside, extra.length > 0);
      }
      case 'ZREMRANGEBYSCORE': {
        if (!arity(3, 3)) return wrongArgs();
        const min = parseBound(rest[1]!);
        const max = parseBound(rest[2]!);
        if (!min || !max) return new ErrorReply('ERR min or max is not a float');
        const entry = get(rest[0]!, 'zset');
        if (entry instanceof ErrorReply) return entry;
        if (!entry) return 0;
        const zset = entry.value as Map<string, number>;
        let removed = 0;
        for (const [member, score] of [...zset]) {
          if ((min.exclusive ? score > min.value : score >= min.value) && (max.exclusive ? score < max.value : score <= max.value)) {
            zset.delete(member);
            removed++;
          }
        }
        if (zset.size === 0) data.delete(rest[0]!);
        return removed;
      }

      case 'PUBLISH': {
        if (!arity(2, 2)) return wrongArgs();
        const sockets = process.channels.get(rest[0]!);
        for (const target of sockets ?? []) target.push(['message', rest[0]!, rest[1]!]);
        return sockets?.size ?? 0;
      }
      case 'PUBSUB': {
        if ((rest[0] ?? '').toUpperCase() !== 'NUMSUB') return this.#problem(`PUBSUB ${rest.join(' ')}`);
        return rest.slice(1).flatMap((channel) => [channel, process.channels.get(channel)?.size ?? 0]);
      }
      case 'SUBSCRIBE':
      case 'UNSUBSCRIBE': {
        if (!socket) return new ErrorReply(`ERR ${name} needs a connection`);
        let count = 0;
        for (const channel of rest) {
          let sockets = process.channels.get(channel);
          if (name === 'SUBSCRIBE') {
            if (!sockets) process.channels.set(channel, (sockets = new Set()));
            sockets.add(socket);
          } else if (sockets) {
            sockets.delete(socket);
            if (sockets.size === 0) process.channels.delete(channel);
          }
        }
        for (const sockets of process.channels.values()) if (sockets.has(socket)) count++;
        return [name.toLowerCase(), rest[rest.length - 1] ?? null, count];
      }

      case 'SCRIPT': {
        const sub = (rest[0] ?? '').toUpperCase();
        if (sub === 'LOAD' && rest.length === 2) {
          const sha = sha1(rest[1]!);
          process.scripts.set(sha, rest[1]!);
          return sha;
        }
        if (sub === 'EXISTS') return rest.slice(1).map((sha) => (process.scripts.has(sha.toLowerCase()) ? 1 : 0));
        if (sub === 'FLUSH') {
          process.scripts.clear();
          return new StatusReply('OK');
        }
        return this.#problem(`SCRIPT ${rest.join(' ')}`);
      }
      case 'EVAL':
      case 'EVALSHA': {
        if (!arity(2)) return wrongArgs();
        const count = integer(rest[1]!);
        if (count === undefined) return new ErrorReply(NOT_INTEGER);
        if (count < 0) return new ErrorReply("ERR Number of keys can't be negative");
        if (count > rest.length - 2) return new ErrorReply("ERR Number of keys can't be greater than number of args");
        let body: string | undefined;
        let sha: string;
        if (name === 'EVAL') {
          body = rest[0]!;
          sha = sha1(body);
          process.scripts.set(sha, body);
        } else {
          sha = rest[0]!.toLowerCase();
          body = process.scripts.get(sha);
          if (body === undefined) return new ErrorReply('NOSCRIPT No matching script. Please use EVAL.');
        }
        const keys = rest.slice(2, 2 + count);
        const argv = rest.slice(2 + count);
        const text = this.rewrite ? this.rewrite(body) : body;
        const reply = this.#vm.run(text === body ? sha : sha1(text), text, keys, argv, (callArgs) => this.#command(process, callArgs, undefined, true));
        this.onScript?.({ body, keys, argv, reply, socket });
        return reply;
      }

      default:
        return this.#problem(`command ${args.join(' ').slice(0, 120)}`);
    }
  }

  #info(process: Process, sections: string[]): string {
    // As Redis counts it: whole seconds of now less whole seconds of the start (up to 1 s over).
    const uptime = Math.floor(this.nowMs() / 1000) - Math.floor(process.startedAt / 1000);
    let expires = 0;
    for (const key of [...process.data.keys()]) {
      const entry = this.#lookup(process, key);
      if (entry?.expiresAt !== undefined) expires++;
    }
    const all: Record<string, string[]> = {
      server: [
        `redis_version:${this.version}`,
        'redis_git_sha1:00000000',
        'redis_git_dirty:0',
        'redis_mode:standalone',
        'os:Linux 6.1.0 x86_64',
        'arch_bits:64',
        'multiplexing_api:epoll',
        `process_id:${1000 + process.incarnation}`,
        `run_id:${process.runId}`,
        `tcp_port:${this.port}`,
        `server_time_usec:${this.#nowUs()}`,
        `uptime_in_seconds:${uptime}`,
        `uptime_in_days:${Math.floor(uptime / 86400)}`,
        'hz:10',
        'executable:/usr/bin/redis-server',
        'config_file:',
      ],
      clients: [
        `connected_clients:${process.sockets.size}`,
        'blocked_clients:0',
        `pubsub_clients:${new Set([...process.channels.values()].flatMap((set) => [...set])).size}`,
      ],
      memory: [
        'used_memory:1000000',
        'used_memory_human:976.56K',
        `maxmemory:${this.maxmemory}`,
        `maxmemory_human:${this.maxmemory}B`,
        `maxmemory_policy:${this.maxmemoryPolicy}`,
        'mem_allocator:jemalloc-5.2.1',
      ],
      persistence: ['loading:0', 'async_loading:0', 'rdb_bgsave_in_progress:0', 'aof_enabled:0'],
      stats: [`total_commands_processed:${process.commands}`, `evicted_keys:${process.evictedKeys}`, 'expired_keys:0'],
      replication:
        this.role === 'master'
          ? [
              'role:master',
              'connected_slaves:0',
              'master_failover_state:no-failover',
              `master_replid:${process.replid}`,
              'master_replid2:0000000000000000000000000000000000000000',
              'master_repl_offset:0',
              `second_repl_offset:${process.promoted ? 1 : -1}`,
              'repl_backlog_active:0',
            ]
          : [
              'role:slave',
              'master_host:127.0.0.1',
              'master_port:6379',
              'master_link_status:up',
              'slave_read_only:1',
              'connected_slaves:0',
              `master_replid:${process.replid}`,
              'master_replid2:0000000000000000000000000000000000000000',
              'master_repl_offset:0',
            ],
      commandstats: [...process.commandStats].map(
        ([name, { calls, failed }]) => `cmdstat_${name}:calls=${calls},usec=${calls},usec_per_call=1.00,rejected_calls=0,failed_calls=${failed}`,
      ),
      cpu: ['used_cpu_sys:0.100000', 'used_cpu_user:0.100000'],
      cluster: ['cluster_enabled:0'],
      keyspace: process.data.size > 0 ? [`db0:keys=${process.data.size},expires=${expires},avg_ttl=0`] : [],
    };
    const titles: Record<string, string> = {
      server: 'Server',
      clients: 'Clients',
      memory: 'Memory',
      persistence: 'Persistence',
      stats: 'Stats',
      replication: 'Replication',
      commandstats: 'Commandstats',
      cpu: 'CPU',
      cluster: 'Cluster',
      keyspace: 'Keyspace',
    };
    const wanted = new Set<string>();
    for (const section of sections.length === 0 ? ['default'] : sections.map((s) => s.toLowerCase())) {
      // Redis' default section list leaves out commandstats (all and everything include it).
      if (section === 'default') Object.keys(all).forEach((name) => name !== 'commandstats' && wanted.add(name));
      else if (section === 'all' || section === 'everything') Object.keys(all).forEach((name) => wanted.add(name));
      else if (section in all) wanted.add(section);
      // Redis answers an unknown section with nothing, and so does this fake.
    }
    const blocks = Object.keys(all)
      .filter((name) => wanted.has(name))
      .map((name) => [`# ${titles[name]}`, ...all[name]!].map((line) => `${line}\r\n`).join(''));
    return blocks.join('\r\n');
  }
}

function cloneEntry(entry: Entry): Entry {
  if (entry.type === 'string') return { ...entry };
  if (entry.type === 'hash') return { type: 'hash', value: new Map(entry.value), expiresAt: entry.expiresAt };
  return { type: 'zset', value: new Map(entry.value), expiresAt: entry.expiresAt };
}

function parseScore(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === 'inf' || lower === '+inf') return Infinity;
  if (lower === '-inf') return -Infinity;
  if (text.trim() === '' || Number.isNaN(Number(text))) return undefined;
  return Number(text);
}

function parseBound(text: string): { value: number; exclusive: boolean } | undefined {
  const exclusive = text.startsWith('(');
  const value = parseScore(exclusive ? text.slice(1) : text);
  return value === undefined ? undefined : { value, exclusive };
}

/** Redis' order: by score, then by member (binary). */
function sorted(zset: Map<string, number>): [string, number][] {
  return [...zset].sort(([a, x], [b, y]) => (x !== y ? x - y : a < b ? -1 : a > b ? 1 : 0));
}

function formatScore(score: number): string {
  return Number.isFinite(score) ? String(score) : score > 0 ? 'inf' : '-inf';
}

function withScores(entries: [string, number][], scores: boolean): Reply[] {
  return scores ? entries.flatMap(([member, score]) => [member, formatScore(score)]) : entries.map(([member]) => member);
}
