/**
 * Bound script copies (src/members/binding.ts): the acquire and fence scripts called without
 * reading INFO server, on real redis-server processes, and what keeps a bound call from ever
 * running in a process other than the one it names: a flushed cache, and a call that ioredis
 * re-sends to a restarted process.
 */
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import type { RedisMember } from '../../src/members/redis-member.js';
import { contextOf } from '../../src/redlock.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { eventually, fresh, scriptCalls, sleep } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterEach(() => servers.heal());
afterAll(() => servers?.close());

const membersOf = (redlock: Redlock) => contextOf(redlock).members as RedisMember[];
const runIdOf = async (client: Redis) => /run_id:(\w+)/.exec(await client.info('server'))![1]!;

/** Waits until every member of `redlock` uses bound copies, and returns them. */
async function boundCopies(redlock: Redlock) {
  return eventually(async () => {
    const copies = membersOf(redlock).map((member) => member.bound);
    if (copies.some((copy) => copy === undefined)) throw new Error('not bound yet');
    return copies.map((copy) => copy!);
  });
}

const infoCalls = async (client: Redis) => Number(/cmdstat_info:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);

describe('bound script copies', () => {
  it('bind each member to its own process, and acquire without reading INFO server', async () => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const copies = await boundCopies(redlock);
    expect(copies.map((copy) => copy.runId)).toEqual(await Promise.all(servers.clients.map(runIdOf)));
    await Promise.all(servers.clients.map((client) => client.config('RESETSTAT')));
    for (let i = 0; i < 20; i++) await (await redlock.acquire(fresh('bound'), 5_000, { fencing: i % 2 === 0 })).release();
    // Every script call reads INFO replication (its epoch binding: _bound.lua), the 20 acquires
    // and the one epoch read (epoch.lua) INFO stats too (evictions); a generic copy reads INFO
    // server on every call besides. The test's own INFO commandstats counts once more.
    for (const client of servers.clients) {
      const calls = await scriptCalls(client);
      expect(calls).toBeGreaterThanOrEqual(40);
      expect(await infoCalls(client)).toBeLessThanOrEqual(calls + 20 + 1 + 1);
    }
  });

  it('a flushed script cache: the member votes error once (NOSCRIPT, never counted), then binds a new copy', async () => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const [before] = await boundCopies(redlock);
    await servers.clients[0]!.script('FLUSH');
    const lock = await redlock.acquire(fresh('flushed'), 5_000);
    // Its NOSCRIPT may come after the other two decided the round ('pending' then); either way it
    // was never counted, and it makes the member bind a new copy (below).
    const flushedVote = lock.votes[0]!;
    expect(['error', 'pending']).toContain(flushedVote.vote);
    if (flushedVote.vote === 'error') expect(flushedVote.error!.message).toMatch(/NOSCRIPT/);
    await lock.release();
    // The member's NOSCRIPT (of the acquire, or of the release behind it) may be read after both
    // rounds decided: wait for the new copy, which must carry a fresh text, never the old one.
    const after = await eventually(async () => {
      const [copy] = await boundCopies(redlock);
      expect(copy!.shas.quorumlockAcquire).not.toBe(before!.shas.quorumlockAcquire);
      return copy;
    });
    expect(after!.runId).toBe(before!.runId);
    // The new copy runs there: member 0 sets the key (its answer may come after the quorum's).
    const resource = fresh('flushed');
    const next = await redlock.acquire(resource, 5_000);
    expect(['locked', 'pending']).toContain(next.votes[0]!.vote);
    await eventually(async () => expect((await servers.valuesOf(resource))[0]).toBe(next.value));
    await next.release();
  });

  it('a bound acquire that ioredis re-sends to a restarted process fails there with NOSCRIPT: nothing runs', async () => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const [copy] = await boundCopies(redlock);
    const [m0] = servers.masters;
    // m0 takes our call into its socket but runs nothing; the other two decide the round.
    await m0!.pause();
    const resource = fresh('resent');
    const lock = await redlock.acquire(resource, 10_000);
    expect(['pending', 'timeout']).toContain(lock.votes[0]!.vote);
    // The process dies with our EVALSHA unanswered; ioredis re-sends it to the new one.
    await m0!.kill();
    await m0!.restart();
    await eventually(async () => {
      expect(await servers.clients[0]!.ping()).toBe('PONG');
    });
    await sleep(100); // the re-sent call has run (or failed) by now: it was queued before the PING
    expect(await servers.clients[0]!.get(resource)).toBeNull();
    expect(await servers.clients[0]!.script('EXISTS', copy!.shas.quorumlockAcquire)).toEqual([0]);
    // The member binds to the new process, and its epoch starts afresh there.
    const [rebound] = await boundCopies(redlock);
    expect(rebound!.runId).toBe(await runIdOf(servers.clients[0]!));
    expect(rebound!.runId).not.toBe(copy!.runId);
    await lock.release();
    await trust(servers.clients);
  });
});

describe('bound script copies: what they cost and where they are not made', () => {
  const cachedScripts = async (client: Redis) => Number(/number_of_cached_scripts:(\d+)/.exec(await client.info('memory'))![1]);

  it('one binding per client: more Redlocks on the same clients load no more copies', async () => {
    const first = new Redlock(servers.clients);
    await boundCopies(first);
    const before = await Promise.all(servers.clients.map(cachedScripts));
    const others = Array.from({ length: 5 }, () => new Redlock(servers.clients));
    for (const redlock of others) await boundCopies(redlock);
    for (const redlock of others) await (await redlock.acquire(fresh('shared-binding'), 5_000)).release();
    expect(await Promise.all(servers.clients.map(cachedScripts))).toEqual(before);
  });

  it('a user without SCRIPT LOAD or MULTI: a warning once, no binding, and locks as before', async () => {
    await Promise.all(
      servers.clients.map((admin) => admin.call('ACL', 'SETUSER', 'nobind', 'on', '>nobind-secret', '~*', '&*', '+@all', '-script|load', '-multi', '-exec')),
    );
    const users = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, username: 'nobind', password: 'nobind-secret' }));
    try {
      const warnings: string[] = [];
      const logger = { debug() {}, info() {}, error() {}, warn: (_: object, message: string) => warnings.push(message) };
      const redlock = new Redlock(users, { logger, retryCount: 0 });
      await eventually(async () => expect(warnings.filter((w) => w.includes('no permission to load bound scripts'))).toHaveLength(3));
      for (let i = 0; i < 3; i++) await (await redlock.acquire(fresh('nobind'), 5_000, { fencing: true })).release();
      expect(membersOf(redlock).map((member) => member.bound)).toEqual([undefined, undefined, undefined]);
      await sleep(200);
      expect(warnings.filter((w) => w.includes('no permission to load bound scripts'))).toHaveLength(3); // once per member, not per try
    } finally {
      for (const user of users) user.disconnect();
      await Promise.all(servers.clients.map((admin) => admin.call('ACL', 'DELUSER', 'nobind')));
    }
  });

  it('a client whose reconnectOnError could re-send a call that met NOSCRIPT forever is never bound', async () => {
    const users = servers.masters.map((master) => new Redis({ host: master.host, port: master.port, reconnectOnError: () => 2 }));
    try {
      await Promise.all(users.map((user) => user.ping()));
      // A wide per-member timeout: the first call on new connections reads each epoch too, and the suite keeps both cores busy.
      const redlock = new Redlock(users, { retryCount: 0, nodeTimeout: 1_000 });
      await (await redlock.acquire(fresh('reconnect-on-error'), 5_000)).release();
      await sleep(200);
      expect(membersOf(redlock).map((member) => member.bound)).toEqual([undefined, undefined, undefined]);
    } finally {
      for (const user of users) user.disconnect();
    }
  });
});
