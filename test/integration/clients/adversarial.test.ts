/**
 * The adversarial cases of the ioredis suite (safety.test, wire.test, stall.test, lineage.test),
 * through each other adapter: iovalkey, node-redis 6 and 5, and Valkey GLIDE, on real
 * redis-server processes. The members' clients are made as the chaos scenarios make them
 * (test/chaos/clients.ts, 'fail-fast': no offline queue, no re-send, fast reconnect); admin
 * connections (keys, CONFIG, REPLICAOF, trust) stay on ioredis.
 * 1. A member killed with an acquire in flight to it, and restarted empty with another of the
 *    holder's members: no second holder while the first holds (the quarantine).
 * 2. Eviction switched on at runtime (CONFIG SET maxmemory-policy allkeys-lru, maxmemory): a member
 *    that evicted the lock key says yes but does not count, at once.
 * 3. A member stopped (SIGSTOP) while a lock is taken: the acquire ends within its deadline, the
 *    stalled member does not count, and what it runs late is undone; a stalled majority fails.
 * 4. A failover and a failback (the data replaced, the run id not): a new epoch, quarantined.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, Redlock, type Lock } from '../../../src/index.js';
import { openMembersOf, type ChaosLibrary, type Members } from '../../chaos/clients.js';
import { processBackend } from '../../harness/process.js';
import type { Master } from '../../harness/types.js';
import { client, startTestMasters, trust, type TestMasters } from '../masters.js';
import { connected, errorOf, eventually, evictUntilGone, fresh, sleep, stopEvicting } from '../util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(5);
}, 30_000);
afterAll(() => servers?.close());

const libraries: { name: string; library: ChaosLibrary }[] = [
  { name: 'iovalkey', library: 'iovalkey' },
  { name: 'node-redis 6', library: 'node-redis' },
  { name: 'node-redis 5', library: 'node-redis5' },
  { name: 'Valkey GLIDE', library: 'glide' },
];

describe.each(libraries)('$name', ({ library }) => {
  const opened: Members[] = [];
  const redlocks: Redlock[] = [];
  afterEach(async () => {
    await Promise.all(redlocks.splice(0).map((redlock) => redlock.quit()));
    for (const members of opened.splice(0)) members.close();
    await servers.heal();
  }, 30_000);

  /** Member clients of `library` to `masters` (every master by default), connected. */
  async function members(masters: readonly Master[] = servers.masters): Promise<Members> {
    const made = await openMembersOf(
      library,
      masters.map(({ host, port }) => ({ host, port })),
      'fail-fast',
    );
    opened.push(made);
    return made;
  }
  function redlockOf(made: Members, options: ConstructorParameters<typeof Redlock>[1] = {}): Redlock {
    const redlock = new Redlock(made.clients, options);
    redlocks.push(redlock);
    return redlock;
  }
  const votesOf = (error: LockAcquireError) => error.attempts.at(-1)!.votes.map((vote) => vote.vote);

  it('a member killed with an acquire in flight and restarted empty lets no second holder in while the first holds', async () => {
    const resource = fresh('killed-in-flight');
    const maxLockTtl = 3_000;
    const a = await members();
    const b = await members();
    const aRedlock = await connected(redlockOf(a, { retryCount: 0, maxLockTtl }));
    const bRedlock = await connected(redlockOf(b, { maxLockTtl, retryDelay: 50, retryJitter: 25 }));
    // A's quorum is exactly m0, m1, m2: m4 is down, m3 stopped, so A's acquire to m3 stays in flight.
    await servers.masters[4]!.kill();
    await servers.masters[3]!.pause();
    const lock = await aRedlock.acquire(resource, maxLockTtl);
    const aValidUntil = performance.now() + lock.remainingMs();
    expect(lock.votes.map((vote) => vote.vote === 'locked')).toEqual([true, true, true, false, false]);
    expect(a.inFlight(3), 'A has a command in flight to the stopped m3').toBeGreaterThan(0);

    // m3 dies with A's acquire unanswered; m2 (one of A's three) restarts empty with it; m4 comes back.
    await servers.masters[3]!.restart();
    await servers.masters[2]!.restart();
    await servers.masters[4]!.restart();

    // B sees the hazard: m2, m3, m4 free, m0 and m1 A's. Once B reaches the restarted members,
    // they say yes and do not count (the round settles once a quorum is out of reach: the
    // members not heard by then stay 'pending').
    let refused: LockAcquireError | undefined;
    await eventually(async () => {
      refused = await errorOf(bRedlock.acquire(resource, maxLockTtl, { retryCount: 0 }));
      const votes = votesOf(refused);
      for (const vote of votes.slice(0, 2)) expect(['taken', 'pending']).toContain(vote);
      for (const vote of votes.slice(2)) expect(['quarantined', 'pending']).toContain(vote);
      expect(votes).toContain('quarantined');
    }, 2_000);
    expect(performance.now()).toBeLessThan(aValidUntil); // all of that while A still held the lock
    expect(votesOf(refused!)).not.toContain('locked');

    // B keeps trying, and gets the lock only once A's has run out.
    const next = await bRedlock.acquire(resource, maxLockTtl, { retryCount: Infinity, waitTimeout: 10_000 });
    expect(performance.now()).toBeGreaterThan(aValidUntil);
    await next.release();
  }, 30_000);

  it('eviction switched on at runtime: a member that evicted the lock key does not count, at once', async () => {
    const resource = fresh('evicted-at-runtime');
    const holder = await (await connected(redlockOf(await members(), { retryCount: 0 }))).acquire(resource, 30_000);
    const second = await connected(redlockOf(await members(), { retryCount: 0 }));
    await (await second.acquire(fresh('warm'), 5_000)).release(); // its connections and readings are up before the switch
    const admins = servers.clients.slice(0, 3); // a majority, so that the evictions alone would let `second` in
    try {
      await evictUntilGone(admins, resource);
      const result = await second.acquire(resource, 5_000).catch((error: unknown) => error);
      if (!(result instanceof Error)) await (result as Lock).release();
      expect(result).toBeInstanceOf(LockAcquireError);
      // The evicting members granted nothing that counted.
      expect(votesOf(result as LockAcquireError).slice(0, 3)).not.toContain('locked');
    } finally {
      await stopEvicting(admins);
      await holder.release().catch(() => undefined);
    }
  }, 30_000);

  it('a member stopped while a lock is taken: the acquire ends in time without it, and what it runs late is undone', async () => {
    const resource = fresh('stalled');
    const redlock = await connected(redlockOf(await members(), { retryCount: 0 }));
    await servers.masters[0]!.pause();
    let started = performance.now();
    const lock = await redlock.acquire(resource, 10_000);
    // nodeTimeout (50 ms) past the call, plus a busy machine's scheduling.
    expect(performance.now() - started).toBeLessThan(50 + 1_000);
    expect(lock.votes[0]!.vote).not.toBe('locked');
    // A quorum of the others (the round settles once it has one: a later answer stays 'pending').
    expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(3);

    // A stalled majority is an outage, also within the deadline.
    const other = fresh('stalled-majority');
    await servers.masters[1]!.pause();
    await servers.masters[2]!.pause();
    started = performance.now();
    const error = await errorOf(redlock.tryAcquire(other, 10_000));
    expect(performance.now() - started).toBeLessThan(350 + 50 + 1_000);
    expect(error.outcome).toBe('unavailable');
    expect(votesOf(error).filter((vote) => vote === 'locked').length).toBeLessThan(3);

    await servers.resumeAll();
    await lock.release();
    // The stalled members ran A's acquire and the failed attempt late; the release and the
    // rollback came after them on each connection, so nothing is left.
    await eventually(async () => {
      expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
      expect(await servers.valuesOf(other)).toEqual(Array(5).fill(null));
    }, 5_000);
  }, 30_000);

  it('a failover and a failback start a new epoch: the member sits out its quarantine and no second owner gets in', async () => {
    const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'quorumlock-failback-'))));
    const s1Set = await processBackend.start(1, { args: ['--dir', dirs[0]!, '--repl-diskless-sync-delay', '0'] });
    const s1 = s1Set.masters[0]!;
    const s2Set = await processBackend.start(1, { args: ['--dir', dirs[1]!, '--repl-diskless-sync-delay', '0', '--replicaof', s1.host, String(s1.port)] });
    const s2 = s2Set.masters[0]!;
    const [s1Admin, s2Admin] = [client(s1), client(s2)];
    try {
      while (!(await s2Admin.info('replication')).includes('master_link_status:up')) await sleep(20);
      await trust([s1Admin]);
      await s1Admin.set('marker', '1');
      while ((await s2Admin.get('marker')) !== '1') await sleep(10); // S2 has S1's epoch hash too

      await s2Admin.replicaof('NO', 'ONE'); // failover
      const resource = fresh('failback');
      const maxLockTtl = 10_000;
      const [m0, m1] = servers.masters as [Master, Master];
      const aRedlock = await connected(redlockOf(await members([m0, m1, s1]), { retryCount: 0, maxLockTtl }));
      // m1 is busy with another owner's short-lived key, so A's quorum is m0 and S1.
      await servers.clients[1]!.set(resource, 'another owner', 'PX', 300);
      const a = await aRedlock.acquire(resource, 10_000);
      expect(a.votes.map((vote) => vote.vote === 'locked')).toEqual([true, false, true]);

      // Failback: S1 resyncs from S2 (its data replaced: A's key gone), then is promoted again.
      await s1Admin.replicaof(s2.host, String(s2.port));
      while (!(await s1Admin.info('replication')).includes('master_link_status:up')) await sleep(20);
      expect(await s1Admin.get(resource)).toBeNull();
      await s1Admin.replicaof('NO', 'ONE');
      while ((await servers.clients[1]!.exists(resource)) === 1) await sleep(20); // the other owner's key expired
      const b = await connected(redlockOf(await members([m0, m1, s1]), { retryCount: 0, maxLockTtl }));
      await servers.masters[0]!.pause();

      const refused = await errorOf(b.acquire(resource, 10_000));
      expect(a.remainingMs()).toBeGreaterThan(0); // A still holds it
      expect(votesOf(refused)).toEqual(['timeout', 'locked', 'quarantined']);
      expect(refused.outcome).toBe('quarantined');
      await servers.masters[0]!.resume();
      await a.release();
    } finally {
      s1Admin.disconnect();
      s2Admin.disconnect();
      for (const members of opened.splice(0)) members.close();
      await s2Set.stop();
      await s1Set.stop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
