/**
 * The member set: parsing member URLs (single masters, Sentinel-managed groups, Clusters),
 * connecting with bounded per-command timeouts, closing.
 */
import { readFileSync } from 'node:fs';
import type { Cluster as ClusterClient, ClusterOptions, Redis as RedisClient, RedisOptions } from 'ioredis';
import { Cluster, Redis } from './library.js';
import { memberIdOf, type ClientShape } from '../clients/id.js';

/** The clients the CLI makes (library.ts says with which library). */
export type MemberClient = RedisClient | ClusterClient;
import { UsageError } from './errors.js';

export interface NodeAddress {
  host: string;
  port: number;
}

/** What a redis+sentinel:// or redis+cluster:// URL says (holds the password: never print it). */
export type Topology =
  | { kind: 'sentinel'; sentinels: NodeAddress[]; masterName: string; db: number; username?: string; password?: string; tls: boolean }
  | { kind: 'cluster'; nodes: NodeAddress[]; username?: string; password?: string; tls: boolean };

export interface MemberUrl {
  /** As given (may contain a password: never print it; print `name`). */
  url: string;
  /**
   * How quorumlock names the member (memberIdOf() in src/clients/id.ts): host:port/db,
   * sentinel:<master>@<sentinels, sorted>/db, or cluster:<seed nodes, sorted>.
   */
  name: string;
  /** For redis+sentinel:// and redis+cluster:// members; absent for a plain redis:// master. */
  topology?: Topology;
}

const FLAG = '--members';
const SENTINEL_PORT = 26379;
const REDIS_PORT = 6379;

const SYNTAX =
  'expected redis://[[user]:password@]host[:port][/db], redis+sentinel://[[user]:password@]host[:port][+host[:port]...]/<master-name>[/db] or redis+cluster://[[user]:password@]host[:port][+host[:port]...] (rediss... for TLS)';

/** The URL with any password replaced by ***, for messages (the password ends at the last `@`). */
export function redact(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:).*@/is, '$1***@');
}

/** Comma-separated member URLs, from --members or QUORUMLOCK_MEMBERS. */
export function parseMembers(flagValue: string | undefined, env: NodeJS.ProcessEnv = process.env): MemberUrl[] {
  const source = flagValue ?? env.QUORUMLOCK_MEMBERS;
  const from = flagValue !== undefined ? FLAG : 'QUORUMLOCK_MEMBERS';
  if (source === undefined || source.trim() === '') {
    throw new UsageError(
      `${FLAG} is required (or set QUORUMLOCK_MEMBERS): comma-separated redis://host:port URLs, e.g. ${FLAG} redis://h1:6379,redis://h2:6379,redis://h3:6379`,
      FLAG,
    );
  }
  const members = source
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((text) => parseMember(text, from));
  const seen = new Set<string>();
  for (const member of members) {
    if (seen.has(member.name)) throw new UsageError(`${from}: ${member.name} is listed twice; members must be independent masters`, FLAG);
    seen.add(member.name);
  }
  return members;
}

function parseMember(text: string, from: string): MemberUrl {
  const bad = (why: string) => new UsageError(`${from}: "${redact(text)}" is not a valid member URL: ${why} (${SYNTAX})`, FLAG);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === 'redis+sentinel' || scheme === 'rediss+sentinel' || scheme === 'redis+cluster' || scheme === 'rediss+cluster') {
    return parseTopology(text, scheme, bad);
  }
  // WHATWG URL refuses a port out of range as a whole ("not a URL"): say what is wrong with it.
  const givenPort = portText(text);
  if (givenPort !== undefined && !validPort(givenPort)) throw bad(`port must be a number from 1 to 65535, got "${givenPort}"`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad('not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw bad(`scheme must be redis://, rediss://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://, got ${url.protocol}//`);
  }
  if (url.hostname === '') throw bad('no host');
  const port = url.port === '' ? REDIS_PORT : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) throw bad(`database must be a number, got "/${path}"`);
  if (url.search !== '' || url.hash !== '') throw bad('query strings and fragments are not supported');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { url: text, name: nameOf({ options: { host, port, db: path === '' ? 0 : Number(path) } }) };
}

const validPort = (text: string) => /^\d+$/.test(text) && Number(text) >= 1 && Number(text) <= 65535;

/** The port as written in scheme://[user:password@]host:port/..., if any (after the last `@`; an IPv6 host in brackets). */
function portText(text: string): string | undefined {
  const authority = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(text)?.[1] ?? '';
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const port = /^(?:\[[^\]]*\]|[^:]*):(.*)$/.exec(hostPort)?.[1];
  return port === '' ? undefined : port;
}

/**
 * The library's own name for a client with these options (memberId), without creating one:
 * memberId reads only `options` (host, port, db, sentinels, name) and `startupNodes`.
 */
function nameOf(shape: { options?: object; startupNodes?: NodeAddress[] }): string {
  return memberIdOf(shape as unknown as ClientShape);
}

/**
 * redis+sentinel:// and redis+cluster:// by hand: WHATWG URL cannot parse a list of hosts.
 * The user info ends at the last `@` (percent-encode `@` and `/` in a password).
 */
function parseTopology(text: string, scheme: string, bad: (why: string) => UsageError): MemberUrl {
  const tls = scheme.startsWith('rediss');
  const sentinel = scheme.endsWith('+sentinel');
  let rest = text.slice(scheme.length + 3);
  if (/[?#]/.test(rest.slice(rest.lastIndexOf('@') + 1))) throw bad('query strings and fragments are not supported');
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at !== -1) {
    const userInfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userInfo.indexOf(':');
    // Like redis://: "user:password", ":password", or a bare "user" (no password).
    const decode = (part: string, what: string) => {
      try {
        return decodeURIComponent(part);
      } catch {
        throw bad(`the ${what} is not validly percent-encoded`);
      }
    };
    const user = decode(colon === -1 ? userInfo : userInfo.slice(0, colon), 'user name');
    if (user !== '') username = user;
    if (colon !== -1) password = decode(userInfo.slice(colon + 1), 'password');
  }
  const slash = rest.indexOf('/');
  const hostList = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '' : rest.slice(slash + 1);
  const what = sentinel ? 'sentinel' : 'seed node';
  const defaultPort = sentinel ? SENTINEL_PORT : REDIS_PORT;
  if (hostList === '') throw bad(sentinel ? 'no sentinels (host:port, several joined by +)' : 'no seed nodes (host:port, several joined by +)');
  const nodes = hostList.split('+').map((entry) => parseAddress(entry, defaultPort, what, bad));
  const seen = new Set<string>();
  for (const node of nodes) {
    const key = `${node.host}:${node.port}`;
    if (seen.has(key)) throw bad(`${what} ${key} is listed twice`);
    seen.add(key);
  }
  const auth = { ...(username === undefined ? {} : { username }), ...(password === undefined ? {} : { password }) };
  if (!sentinel) {
    if (path !== '') {
      throw bad(`a cluster has only database 0, so a cluster URL takes no /db (got "/${path}"); remove it`);
    }
    const topology: Topology = { kind: 'cluster', nodes, tls, ...auth };
    return { url: text, name: nameOf({ startupNodes: nodes }), topology };
  }
  const [rawName = '', db = '', ...more] = path.split('/');
  if (rawName === '') throw bad('no master name: add the name the sentinels monitor, e.g. .../mymaster');
  let masterName: string;
  try {
    masterName = decodeURIComponent(rawName);
  } catch {
    throw bad('the master name is not validly percent-encoded');
  }
  if (more.length > 0 || (db !== '' && !/^\d+$/.test(db))) throw bad(`database must be a number, got "/${path.slice(rawName.length + 1)}"`);
  const topology: Topology = { kind: 'sentinel', sentinels: nodes, masterName, db: db === '' ? 0 : Number(db), tls, ...auth };
  return { url: text, name: nameOf({ options: { sentinels: nodes, name: masterName, db: topology.db } }), topology };
}

/** host, host:port, [v6], [v6]:port. */
function parseAddress(entry: string, defaultPort: number, what: string, bad: (why: string) => UsageError): NodeAddress {
  const match = /^(?:\[([^\]\s]+)\]|([^:[\]\s]+))(?::(.*))?$/.exec(entry);
  if (!match)
    throw bad(
      entry === '' ? `empty ${what} address (a stray +?)` : `${what} "${entry}" is not host:port (an IPv6 address goes in brackets: [::1]:${defaultPort})`,
    );
  const host = match[1] ?? match[2]!;
  const port = match[3];
  if (port === undefined) return { host, port: defaultPort };
  if (!validPort(port)) throw bad(`${what} "${entry}": port must be a number from 1 to 65535`);
  return { host, port: Number(port) };
}

export interface Connected {
  clients: MemberClient[];
  /** The last connection error seen per client (for "unreachable: ECONNREFUSED"). */
  lastError: (Error | undefined)[];
  /**
   * Resolves once each client is ready, has failed once, or `ms` have passed. A Sentinel group
   * (ask a sentinel, then connect) or a Cluster (connect, CLUSTER SLOTS, connect to the slot's
   * node) takes a few round trips to connect: more than a lock's first call may wait (--node-timeout).
   */
  ready(ms: number): Promise<void>;
  close(): void;
}

export interface Timeouts {
  commandTimeoutMs: number;
  connectTimeoutMs: number;
}

/** TLS settings for rediss… members: the CA that signed their certificates (--tls-ca), when not one Node trusts by default. */
export interface Tls {
  ca?: Buffer;
}

/**
 * The CA file of --tls-ca (or QUORUMLOCK_TLS_CA), read before any connection: a file that
 * cannot be read is a usage error naming the flag, not a TLS failure on every member later.
 */
export function readTls(flagValue: string | undefined, env: NodeJS.ProcessEnv = process.env): Tls {
  const path = flagValue ?? env.QUORUMLOCK_TLS_CA;
  if (path === undefined || path === '') return {};
  const from = flagValue !== undefined ? '--tls-ca' : 'QUORUMLOCK_TLS_CA';
  let ca: Buffer;
  try {
    ca = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(`${from}: cannot read the CA file "${path}"${code ? ` (${code})` : ''}: give a readable PEM file`, '--tls-ca');
  }
  if (!ca.toString('latin1').includes('-----BEGIN CERTIFICATE-----'))
    throw new UsageError(`${from}: "${path}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)`, '--tls-ca');
  return { ca };
}

/** Reconnects back off but never give up while the CLI runs (a lock's extensions need members that come back). */
const retry = (times: number) => Math.min(50 * times, 1000);

/** The error to show for a member, without ioredis' retry chatter; a Cluster's "Failed to refresh slots cache." says least. */
function shown(error: Error): Error {
  const last = (error as { lastNodeError?: unknown }).lastNodeError;
  // The code (ECONNREFUSED, …) stays: member-state.ts names the cause by it.
  const withCode = (text: string, from: Error) => Object.assign(new Error(text), { code: (from as NodeJS.ErrnoException).code });
  if (last instanceof Error) return withCode(`no seed node answered CLUSTER SLOTS (${last.message})`, last);
  const text = error.message.replace(/ Retrying from scratch after \d+ms\./, '');
  return text === error.message ? error : withCode(text, error);
}

/**
 * The client for one member URL: a Redis for a master or a Sentinel group, a Cluster for a
 * cluster. It connects at once unless `lazyConnect` (tests: its memberId() is the URL's name).
 */
export function client(member: MemberUrl, { commandTimeoutMs, connectTimeoutMs }: Timeouts, { lazyConnect = false, tls = {} as Tls } = {}): MemberClient {
  // commandTimeout bounds every command, so a paused or blackholed member makes a command fail
  // instead of hanging the CLI.
  // disconnectTimeout: how long a closed connection may take to say goodbye before it is destroyed;
  // ioredis keeps that timer running for a connection that had already failed (a Cluster's slot
  // refreshers to a dead node), which would hold the CLI open for the default 2 s.
  const common = { commandTimeout: commandTimeoutMs, connectTimeout: connectTimeoutMs, maxRetriesPerRequest: 1, disconnectTimeout: 100 } satisfies RedisOptions;
  const lazy = lazyConnect ? { lazyConnect: true } : {};
  // ioredis turns on TLS for rediss:// by itself; the CA, if given, is ours to add.
  const tlsOptions = tls.ca === undefined ? {} : { ca: tls.ca };
  const topology = member.topology;
  if (topology === undefined) {
    const secure = /^rediss:/i.test(member.url) && tls.ca !== undefined ? { tls: tlsOptions } : {};
    return new Redis(member.url, { ...common, ...secure, ...lazy, retryStrategy: retry });
  }
  const auth = {
    ...(topology.username === undefined ? {} : { username: topology.username }),
    ...(topology.password === undefined ? {} : { password: topology.password }),
  };
  if (topology.kind === 'sentinel') {
    return new Redis({
      sentinels: topology.sentinels,
      name: topology.masterName,
      db: topology.db,
      ...auth,
      // TLS to the master only; the sentinels are asked in plain text.
      ...(topology.tls ? { tls: tlsOptions, enableTLSForSentinelMode: true } : {}),
      ...common,
      retryStrategy: retry,
      sentinelRetryStrategy: retry,
      // A paused sentinel accepts the TCP connection but never answers.
      sentinelCommandTimeout: commandTimeoutMs,
      ...lazy,
    });
  }
  const options: ClusterOptions = {
    redisOptions: { ...auth, ...(topology.tls ? { tls: tlsOptions } : {}), ...common },
    clusterRetryStrategy: retry,
    slotsRefreshTimeout: commandTimeoutMs,
    // Ready as soon as the slots are known, even in cluster_state:fail: `members` reports that
    // state rather than an endless reconnect, and a lock's calls fail on their own (CLUSTERDOWN).
    enableReadyCheck: false,
    ...lazy,
  };
  return new Cluster(topology.nodes, options);
}

/** A client's connections: a Redis' own, a Cluster's one per node. */
function sockets(member: MemberClient): RedisClient[] {
  return member instanceof Cluster ? member.nodes('all') : [member];
}

/** One client per member URL, each reporting its errors to lastError instead of crashing. */
export function connect(members: readonly MemberUrl[], timeouts: Timeouts | ((member: MemberUrl) => Timeouts), tls: Tls = {}): Connected {
  const lastError: (Error | undefined)[] = members.map(() => undefined);
  const clients = members.map((member, index) => {
    const created = client(member, typeof timeouts === 'function' ? timeouts(member) : timeouts, { tls });
    created.on('error', (error: Error) => (lastError[index] = shown(error)));
    // A Cluster's per-node connection errors ("node error") are not 'error' events.
    if (created instanceof Cluster) created.on('node error', (error: Error) => (lastError[index] = shown(error)));
    return created;
  });
  return {
    clients,
    lastError,
    ready: (ms) => Promise.all(clients.map((member) => readyOrFailed(member, ms))).then(() => undefined),
    close() {
      for (const member of clients) {
        const streams = sockets(member);
        member.disconnect();
        // disconnect() only half-closes a socket: to a paused member that never answers the
        // FIN, the socket would keep the process alive. Nothing more is sent on it: destroy it.
        for (const redis of streams) (redis.stream as { destroy?: () => void } | undefined)?.destroy?.();
      }
    },
  };
}

/** `promise`, or a rejection after `ms` unless it settled: a Cluster queues commands without a timeout until it is connected. */
// Connection state only (a Cluster's readiness, the probe's backstop): calls on members go in rounds (quorum/operator.ts).
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** `promise` settled, or `ms` passed: whichever first. */
function atMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(
      () => undefined,
      () => undefined,
    ),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))),
  ]).finally(() => clearTimeout(timer));
}

// Connection state: waits for a client to connect; sends nothing but a Cluster's PINGs to its nodes.
async function readyOrFailed(member: MemberClient, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  if (member.status !== 'ready') {
    let listener: () => void = () => {};
    const event = new Promise<void>((resolve) => (listener = resolve));
    member.once('ready', listener);
    member.once('error', listener);
    await atMost(event, ms);
    member.off('ready', listener);
    member.off('error', listener);
  }
  // A Cluster is ready once it knows the slots; it connects to each node on first use.
  if (member instanceof Cluster && member.status === 'ready') {
    await atMost(Promise.allSettled(member.nodes('master').map((node) => node.ping())), deadline - performance.now());
  }
}
