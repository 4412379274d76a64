/**
 * TLS and ACL members: ioredis options pass straight through, and an ACL user allowed only what
 * quorumlock needs (the rule README documents) can lock, wait, fence and release, and nothing else.
 */
import { GlideClient } from '@valkey/valkey-glide';
import Redis from 'ioredis';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock, type MemberClient } from '../../src/index.js';
import { processBackend } from '../harness/process.js';
import type { MasterSet } from '../harness/types.js';
import { eventually, fresh, hearsReleases, onMajority } from './util.js';
import { resourceKeys } from '../../src/store/keys.js';

/** The ACL rule from README ("TLS and ACL"), for lock names under `lock:`. */
export const LOCKER_ACL = [
  'on',
  '>locker-secret',
  'resetkeys',
  '~lock:*',
  '~{lock:*}:quorumlock:*',
  '~quorumlock:epoch*',
  'resetchannels',
  '&quorumlock:waiter:*',
  '-@all',
  '+eval',
  '+evalsha',
  '+ping',
  '+info',
  '+role',
  '+subscribe',
  '+unsubscribe',
  // what the scripts call
  '+exists',
  '+pttl',
  '+set',
  '+get',
  '+del',
  '+pexpire',
  '+zadd',
  '+zrem',
  '+zrange',
  '+zrangebyscore',
  '+zrank',
  // shared locks' readers (and the refusal's own-hold check)
  '+zscore',
  '+zremrangebyscore',
  '+zcard',
  '+hget',
  '+hmget',
  '+hset',
  // hand-over requests (docs/handover.md)
  '+hdel',
  '+time',
  '+publish',
  // whether a waiter still listens, before a hand-over (docs/handover.md)
  '+pubsub|numsub',
];

let dir: string;
let set: MasterSet;
let tls: { ca: Buffer; rejectUnauthorized: true };

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  // A CA and a server certificate for 127.0.0.1, made now: nothing secret is committed.
  dir = mkdtempSync(join(tmpdir(), 'quorumlock-tls-'));
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=quorumlock-test-ca');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'ext.cnf',
  );
  tls = { ca: readFileSync(join(dir, 'ca.crt')), rejectUnauthorized: true };
  set = await processBackend.start(3, {
    args: (port) => [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      join(dir, 'server.crt'),
      '--tls-key-file',
      join(dir, 'server.key'),
      '--tls-ca-cert-file',
      join(dir, 'ca.crt'),
      '--tls-auth-clients',
      'no',
    ],
  });
  // The admin sets up the locker user, and declares the brand-new masters trusted.
  const admins = set.masters.map((master) => new Redis({ host: master.host, port: master.port, tls }));
  await Promise.all(admins.map((admin) => admin.call('ACL', 'SETUSER', 'locker', ...LOCKER_ACL)));
  // The documented user as it was before hand-overs: no HDEL, no PUBSUB NUMSUB.
  const before = LOCKER_ACL.filter((rule) => rule !== '+hdel' && rule !== '+pubsub|numsub').map((rule) => (rule === '>locker-secret' ? '>older-secret' : rule));
  await Promise.all(admins.map((admin) => admin.call('ACL', 'SETUSER', 'older-locker', ...before)));
  await new Redlock(admins).trustMembers();
  for (const admin of admins) admin.disconnect();
});

afterAll(async () => {
  await set?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function lockerClients(username = 'locker', password = 'locker-secret'): Redis[] {
  return set.masters.map((master) => {
    const client = new Redis({ host: master.host, port: master.port, tls, username, password });
    client.on('error', () => {});
    return client;
  });
}

it('locks, waits in line, fences and releases over TLS as an ACL user with only the documented rights', async () => {
  const clients = lockerClients();
  const other = lockerClients();
  const redlock = new Redlock(clients);
  const waiter = new Redlock(other, { retryDelay: 5_000, retryJitter: 0 });
  try {
    const resource = fresh('lock:tls');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    expect(lock.fence).toBeGreaterThan(0);
    // A waiter subscribes to its channel and is woken by the release (not its 5 s timed retry).
    const next = waiter.acquire(resource, 5_000, { waitTimeout: 3_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await lock.release();
    const second = await next;
    expect(second.remainingMs()).toBeGreaterThan(0);
    await second.extend(5_000);
    expect((await second.release()).freed).toBe(true);
    // Shared locks too: two readers at once, extended, then a writer after them.
    const [r1, r2] = await Promise.all([redlock.acquire(resource, 5_000, { shared: true }), waiter.acquire(resource, 5_000, { shared: true })]);
    await r1.extend(5_000);
    const writer = waiter.acquire(resource, 5_000, { waitTimeout: 3_000 });
    await Promise.all([r1.release(), r2.release()]);
    expect((await (await writer).release()).freed).toBe(true);
    // The user can do nothing else: other keys and other commands are refused.
    await expect(clients[0]!.set('not-a-lock', 'x')).rejects.toThrow(/NOPERM/);
    await expect(clients[0]!.call('FLUSHALL')).rejects.toThrow(/NOPERM/);
  } finally {
    await redlock.quit();
    await waiter.quit();
    for (const client of [...clients, ...other]) client.disconnect();
  }
});

it('an ACL user set up before hand-overs (without +hdel and +pubsub|numsub) still waits, is woken and releases; only its requests linger', async () => {
  const clients = lockerClients('older-locker', 'older-secret');
  const other = lockerClients('older-locker', 'older-secret');
  const redlock = new Redlock(clients);
  const waiter = new Redlock(other, { retryDelay: 5_000, retryJitter: 0 });
  const admins = set.masters.map((master) => new Redis({ host: master.host, port: master.port, tls }));
  try {
    const resource = fresh('lock:older');
    for (let round = 0; round < 2; round++) {
      const lock = await redlock.acquire(resource, 5_000);
      const next = waiter.acquire(resource, 5_000, { waitTimeout: 3_000 });
      // In line and listening on a majority: what hears the release (not a guess at how long that takes).
      await eventually(async () => expect(onMajority(await hearsReleases(admins, resource))).toBe(true));
      expect((await lock.release()).freed).toBe(true);
      const handed = await next; // within 3 s: woken, not its 5 s retry
      expect((await handed.release()).freed).toBe(true);
    }
    // Nobody left in line. Read on the waiter's own connection, behind its last release: release()
    // resolves at a quorum, and member 0 may run it after a read sent on another connection.
    expect(await other[0]!.zcard(resourceKeys([resource])[1]!)).toBe(0);
    // Its requests were not dropped (no HDEL): they go with their line's expiry (docs/operations.md).
    const admin = new Redis({ host: set.masters[0]!.host, port: set.masters[0]!.port, tls });
    expect(await admin.hlen(resourceKeys([resource])[4]!)).toBeGreaterThan(0);
    admin.disconnect();
  } finally {
    await redlock.quit();
    await waiter.quit();
    for (const client of [...clients, ...other, ...admins]) client.disconnect();
  }
});

/** The locker's clients of another library, over TLS: each library's own TLS and ACL options. */
const otherLibraries: { name: string; open(master: { host: string; port: number }): Promise<{ client: MemberClient; close(): unknown }> }[] = [
  {
    name: 'node-redis 6',
    async open({ host, port }) {
      const client = createClient6({ socket: { host, port, tls: true, ca: tls.ca }, username: 'locker', password: 'locker-secret' });
      client.on('error', () => undefined);
      await client.connect();
      return { client, close: () => client.destroy() };
    },
  },
  {
    name: 'node-redis 5',
    async open({ host, port }) {
      const client = createClient5({ socket: { host, port, tls: true, ca: tls.ca }, username: 'locker', password: 'locker-secret' });
      client.on('error', () => undefined);
      await client.connect();
      return { client, close: () => client.destroy() };
    },
  },
  {
    name: 'Valkey GLIDE',
    async open({ host, port }) {
      const client = await GlideClient.createClient({
        addresses: [{ host, port }],
        useTLS: true,
        credentials: { username: 'locker', password: 'locker-secret' },
        advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: tls.ca } },
        requestTimeout: 2000,
      });
      return { client, close: () => client.close() };
    },
  },
];

it.each(otherLibraries)('$name: locks, is woken in line, fences and releases over TLS as the same ACL user', async (library) => {
  const opened = await Promise.all(set.masters.map((master) => library.open(master)));
  const waiting = await Promise.all(set.masters.map((master) => library.open(master)));
  const redlock = new Redlock(opened.map(({ client }) => client));
  const waiter = new Redlock(
    waiting.map(({ client }) => client),
    { retryDelay: 5_000, retryJitter: 0 },
  );
  try {
    const resource = fresh('lock:tls-other');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    const next = waiter.acquire(resource, 5_000, { waitTimeout: 3_000, fencing: true });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await lock.release();
    const second = await next; // within 3 s: woken by the release, not its 5 s retry
    expect(second.fence! > lock.fence!).toBe(true);
    expect((await second.release()).freed).toBe(true);
  } finally {
    await redlock.quit();
    await waiter.quit();
    for (const { close } of [...opened, ...waiting]) await close();
  }
});

it('refuses a client that does not trust the server certificate', async () => {
  const master = set.masters[0]!;
  const untrusting = new Redis({
    host: master.host,
    port: master.port,
    tls: { rejectUnauthorized: true },
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
  const errors: Error[] = [];
  untrusting.on('error', (error: Error) => errors.push(error));
  await expect(untrusting.connect()).rejects.toThrow(); // ioredis reports it as a closed connection
  expect(errors.map((error) => error.message).join(' ')).toMatch(/certificate/i); // the handshake's own reason
  untrusting.disconnect();
});
