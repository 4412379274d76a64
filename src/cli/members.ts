/** The member set: parsing redis:// URLs, connecting with bounded per-command timeouts, closing. */
import { Redis } from 'ioredis';
import { UsageError } from './errors.js';

export interface MemberUrl {
  /** As given (may contain a password: never print it; print `name`). */
  url: string;
  /** host:port/db, the way quorumlock names members. */
  name: string;
}

const FLAG = '--members';

/** The URL with any password replaced by ***, for messages. */
export function redact(text: string): string {
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}

/** Comma-separated redis:// or rediss:// URLs, from --members or QUORUMLOCK_MEMBERS. */
export function parseMembers(flagValue: string | undefined, env: NodeJS.ProcessEnv = process.env): MemberUrl[] {
  const source = flagValue ?? env.QUORUMLOCK_MEMBERS;
  const from = flagValue !== undefined ? FLAG : 'QUORUMLOCK_MEMBERS';
  if (source === undefined || source.trim() === '') {
    throw new UsageError(`${FLAG} is required (or set QUORUMLOCK_MEMBERS): comma-separated redis://host:port URLs, e.g. ${FLAG} redis://h1:6379,redis://h2:6379,redis://h3:6379`, FLAG);
  }
  const members = source.split(',').map((part) => part.trim()).filter((part) => part !== '').map((text) => parseMember(text, from));
  const seen = new Set<string>();
  for (const member of members) {
    if (seen.has(member.name)) throw new UsageError(`${from}: ${member.name} is listed twice; members must be independent masters`, FLAG);
    seen.add(member.name);
  }
  return members;
}

function parseMember(text: string, from: string): MemberUrl {
  const bad = (why: string) => new UsageError(`${from}: "${redact(text)}" is not a valid member URL: ${why} (expected redis://[[user]:password@]host[:port][/db] or rediss://...)`, FLAG);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw bad('not a URL');
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') throw bad(`scheme must be redis:// or rediss://, got ${url.protocol}//`);
  if (url.hostname === '') throw bad('no host');
  const port = url.port === '' ? 6379 : Number(url.port);
  const path = url.pathname.replace(/^\//, '');
  if (path !== '' && !/^\d+$/.test(path)) throw bad(`database must be a number, got "/${path}"`);
  if (url.search !== '' || url.hash !== '') throw bad('query strings and fragments are not supported');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { url: text, name: `${host}:${port}/${path === '' ? 0 : Number(path)}` };
}

export interface Connected {
  clients: Redis[];
  /** The last connection error seen per client (for "unreachable: ECONNREFUSED"). */
  lastError: (Error | undefined)[];
  close(): void;
}

/**
 * One ioredis client per URL. `commandTimeout` bounds every command, so a paused or blackholed
 * member makes a command fail instead of hanging the CLI; reconnects back off but never give up
 * while the CLI runs (the lock's extensions need members that come back).
 */
export function connect(members: readonly MemberUrl[], { commandTimeoutMs, connectTimeoutMs }: { commandTimeoutMs: number; connectTimeoutMs: number }): Connected {
  const lastError: (Error | undefined)[] = members.map(() => undefined);
  const clients = members.map((member, index) => {
    const client = new Redis(member.url, {
      commandTimeout: commandTimeoutMs,
      connectTimeout: connectTimeoutMs,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => Math.min(50 * times, 1000),
    });
    client.on('error', (error: Error) => (lastError[index] = error));
    return client;
  });
  return {
    clients,
    lastError,
    close() {
      for (const client of clients) {
        client.disconnect();
        // disconnect() only half-closes the socket: to a paused member that never answers the
        // FIN, the socket would keep the process alive. Nothing more is sent on it: destroy it.
        (client.stream as { destroy?: () => void } | undefined)?.destroy?.();
      }
    },
  };
}
