/**
 * Safety when a command does not run once, in order, on the process and data it was sent to
 * (issue 10; docs/internals.md#re-send-after-reconnect and #redis). Each test drives one mechanism on purpose against real
 * redis-server processes:
 * - ioredis re-sends unanswered commands to a NEW process after a restart (defect 1);
 * - a failover then a failback replaces a master's data without changing its run id (defect 2);
 * - maxmemory with an evicting policy drops lock keys (defect 3);
 * - one server listed under two addresses (defect 10);
 * - trust ends a quarantine whatever ttl the callers use; fencing survives a rolling restart
 *   (defect 11) and comes back after a majority lost its data only by an operator's floor.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import { processBackend } from '../harness/process.js';
import { client, startTestMasters, trust, type TestMasters } from './masters.js';
import { connected, errorOf, fresh, sleep } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await servers.heal();
});
afterAll(() => servers?.close());

/** The epoch hash of a member, as an object (what the scripts keep: src/store/server.ts). */
async function epochOf(redis: Redis): Promise<Record<string, string>> {
  return redis.hgetall('quorumlock:epoch');
}

/** Resolves once `redis` has reconnected and run everything queued or re-sent before this PING. */
async function drained(redis: Redis): Promise<void> {
  await redis.ping();
}

describe('a command re-sent to a new process (ioredis autoResendUnfulfilledCommands)', () => {
  /**
   * Defect 1. A's acquire, fence and release are written to m4 while it is stopped; B then gets a
   * higher token on the other four; m4 is killed and restarted empty, and ioredis re-sends A's
   * unanswered commands to the new process. There the acquire re-creates A's key, so on b9d7392
   * the sync passed its only check and wrote A's old token into the new epoch, which then read
   * as trusted: a lock on m4 got B's token again. Now a sync runs only in the epoch its acquire
   * was answered from, and only on members heard in the acquire round.
   */
  it('never makes a restarted member trust a token it replayed: no token is reused or goes back', async () => {
    const resource = fresh('replayed');
    const aClients = servers.connect();
    await Promise.all(aClients.map(drained));
    await servers.masters[4]!.pause();
    const a = await new Redlock(aClients, { retryCount: 0 }).acquire(resource, 5_000, { fencing: true });
    expect(a.votes[4]!.vote).not.toBe('locked');
    await sleep(20); // the fence sync (fire and forget) is written to m4 too, if it is sent
    await a.release();
    // B's own commands to m4 must not be replayed there too (they would carry B's token): B
    // never reaches m4.
    const bClients = servers.connect();
    bClients[4]!.disconnect();
    const b = await new Redlock(bClients, { retryCount: 0 }).acquire(resource, 5_000, { fencing: true });
    expect(b.fence!).toBeGreaterThan(a.fence!);
    await b.release();

    await servers.masters[4]!.kill(); // still stopped: the commands written to it never ran
    await servers.masters[4]!.restart();
    await drained(aClients[4]!); // ioredis reconnected and re-sent A's acquire, fence and release
    await drained(servers.clients[4]!);

    // What m4 now claims: a counter it trusts must be at least every token issued before its epoch.
    const epoch = await epochOf(servers.clients[4]!);
    const claimed = Object.entries(epoch).filter(([field]) => field.startsWith('fence') || field === 'floor');
    for (const [, counter] of claimed) expect(Number(counter)).toBeGreaterThanOrEqual(b.fence!);
    // And as a lock sees it: a fenced lock on m4 alone (quarantine off, so only fencing decides)
    // gets a token above B's, or none at all. A second's nodeTimeout: m4 just restarted (an empty
    // script cache) answers slowly on a busy machine, and a fence round it does not answer ends
    // 'unavailable', which says nothing of its counters.
    const alone = new Redlock([servers.clients[4]!], { retryCount: 0, quarantine: false, nodeTimeout: 1_000 });
    const probe = await alone.acquire(resource, 5_000, { fencing: true }).catch((error: unknown) => error);
    if (probe instanceof LockAcquireError) expect(probe.outcome).toBe('unfenced');
    else expect((probe as Lock).fence!).toBeGreaterThan(b.fence!);
    if (!(probe instanceof LockAcquireError)) await (probe as Lock).release();
    for (const c of aClients) c.disconnect();
  });
});

describe('a failover and a failback (the data changes, the run id does not)', () => {
  /**
   * Defect 2. Member 2 is a master S1 with a replica S2. S2 is promoted (REPLICAOF NO ONE); A then
   * locks on m0 and S1 (m1 busy). S1 is demoted under S2 (a full resync replaces its data: A's
   * key is gone) and promoted back. Its epoch hash, replicated back from S2, still names S1's own
   * run id, so on b9d7392 no new epoch started, and B locked on m1 and S1 while A held the lock.
   * Now the epoch also records master_replid, which changes at every promotion and full resync.
   */
  it('starts a new epoch: the member sits out its quarantine and no second owner gets in', async () => {
    // Each in its own directory: a full resync writes an RDB file there.
    const dirs = await Promise.all([0, 1].map(() => mkdtemp(join(tmpdir(), 'quorumlock-failback-'))));
    const s1Set = await processBackend.start(1, { args: ['--dir', dirs[0]!, '--repl-diskless-sync-delay', '0'] });
    const s1 = s1Set.masters[0]!;
    const s2Set = await processBackend.start(1, { args: ['--dir', dirs[1]!, '--repl-diskless-sync-delay', '0', '--replicaof', s1.host, String(s1.port)] });
    const s2 = s2Set.masters[0]!;
    const [s1Client, s2Client] = [client(s1), client(s2)];
    try {
      // Trusted only once S2 is attached: Redis gives a master a new replication id when its first
      // replica attaches (a new backlog), which starts a new epoch, as the README says.
      while (!(await s2Client.info('replication')).includes('master_link_status:up')) await sleep(20);
      await trust([s1Client]);
      await s1Client.set('marker', '1');
      while ((await s2Client.get('marker')) !== '1') await sleep(10); // S2 has S1's epoch hash too

      await s2Client.replicaof('NO', 'ONE'); // failover: S2 is a master with its own replication id
      const resource = fresh('failback');
      const maxLockTtl = 10_000;
      const aMembers = [servers.connect()[0]!, servers.connect()[1]!, client(s1)];
      // m1 is busy with another owner's short-lived key, so A's quorum is m0 and S1.
      await servers.clients[1]!.set(resource, 'another owner', 'PX', 300);
      const a = await new Redlock(aMembers, { retryCount: 0, maxLockTtl }).acquire(resource, 10_000);
      expect(a.votes.map((vote) => vote.vote === 'locked')).toEqual([true, false, true]); // m1: 'taken' (or not waited for)

      // Failback: S1 resyncs from S2 (its data replaced: A's key gone), then is promoted again.
      await s1Client.replicaof(s2.host, String(s2.port));
      while (!(await s1Client.info('replication')).includes('master_link_status:up')) await sleep(20);
      expect(await s1Client.get(resource)).toBeNull();
      await s1Client.replicaof('NO', 'ONE');
      while ((await servers.clients[1]!.exists(resource)) === 1) await sleep(20); // the other owner's key expired
      await servers.masters[0]!.pause();

      // 500 ms per member, not 50: B's connections are new, and on loaded cores m1's first answer
      // once came after paused m0's timeout had decided the round ('pending', not 'locked').
      const b = new Redlock([servers.connect()[0]!, servers.connect()[1]!, client(s1)], { retryCount: 0, maxLockTtl, nodeTimeout: 500 });
      const refused = await errorOf(b.acquire(resource, 10_000, { retryCount: 0 }));
      expect(a.remainingMs()).toBeGreaterThan(0); // A still holds it
      expect(refused.attempts[0]!.votes.map((vote) => vote.vote)).toEqual(['timeout', 'locked', 'quarantined']);
      expect(refused.outcome).toBe('quarantined');
      await servers.masters[0]!.resume();
      await a.release();
    } finally {
      s1Client.disconnect();
      s2Client.disconnect();
      await s2Set.stop();
      await s1Set.stop();
      for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('eviction', () => {
  /**
   * Defect 3. A member with maxmemory and volatile-lru can evict a held lock key (it has a TTL)
   * while its epoch hash survives: no quarantine starts. On b9d7392 a filler evicted A's key and B
   * locked on that member and another while A held the lock. Now a member whose eviction policy
   * can drop lock keys never counts (read from INFO at connect: no extra round trip).
   */
  it('a member that may evict lock keys does not count, so a filler cannot hand the lock to a second owner', async () => {
    const evictingSet = await processBackend.start(1, { args: ['--maxmemory', '3mb', '--maxmemory-policy', 'volatile-lru'] });
    const evicting = client(evictingSet.masters[0]!);
    try {
      await trust([evicting]);
      const resource = fresh('evicted');
      const aClients = [servers.connect()[0]!, servers.connect()[1]!, client(evictingSet.masters[0]!)];
      const aRedlock = new Redlock(aClients, { retryCount: 0 });
      // Connected, and each epoch read (sent at 'ready', before the PING): one attempt with no
      // retry must not spend its 50 ms per member on connecting (a busy machine takes longer).
      await Promise.all(aClients.map((c) => c.ping()));
      // m1 is busy with another owner's short-lived key, so A's quorum is m0 and the evicting member.
      await servers.clients[1]!.set(resource, 'another owner', 'PX', 300);
      const aResult = await aRedlock.acquire(resource, 20_000).catch((error: unknown) => error);
      // Memory pressure: keys with a TTL are what volatile-lru evicts.
      const filler = 'x'.repeat(50_000);
      for (let i = 0; i < 200; i++) await evicting.set(`filler:${i}`, filler, 'PX', 60_000).catch(() => undefined);
      const lockKeyLeft = await evicting.exists(resource);
      while ((await servers.clients[1]!.exists(resource)) === 1) await sleep(20); // the other owner's key expired
      await servers.masters[0]!.pause();
      const bRedlock = new Redlock([servers.connect()[0]!, servers.connect()[1]!, client(evictingSet.masters[0]!)], { retryCount: 0 });
      const bResult = await bRedlock.acquire(resource, 20_000).catch((error: unknown) => error);
      await servers.masters[0]!.resume();
      const held = [aResult, bResult].filter((result) => !(result instanceof Error)) as Lock[];
      // Never two owners at once; with the fix, neither gets it through the evicting member.
      expect(held.length, `A's key left on the evicting member: ${lockKeyLeft}`).toBeLessThanOrEqual(1);
      expect(aResult).toBeInstanceOf(LockAcquireError);
      const vote = (aResult as LockAcquireError).attempts[0]!.votes[2]!;
      expect(vote.vote).toBe('quarantined');
      expect(vote.notCounting).toMatch(/maxmemory-policy volatile-lru/);
      for (const lock of held) await lock.release();
    } finally {
      evicting.disconnect();
      await evictingSet.stop();
    }
  });
});

describe('one server under two addresses', () => {
  /**
   * Defect 10. 127.0.0.1:p and localhost:p are one server. On b9d7392 an extend succeeded with the
   * only other real member stopped, on that one server counted twice. Members are now identified
   * by the run id their server reports, and the later duplicate never counts.
   */
  it('counts one server once, in acquire and extend', async () => {
    const port = servers.masters[0]!.port;
    const twice = new Redis({ host: 'localhost', port });
    twice.on('error', () => {});
    try {
      const redlock = new Redlock([servers.connect()[0]!, twice, servers.connect()[1]!], { retryCount: 0 });
      await connected(redlock);
      expect(redlock.members[1]!.notCounting).toMatch(/the same server as/);
      const lock = await redlock.acquire(fresh('twice'), 2_000);
      await servers.masters[1]!.pause();
      const error = await lock.extend(2_000).catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(Error);
      await servers.masters[1]!.resume();
      await lock.release();
    } finally {
      twice.disconnect();
    }
  });
});

describe('operator actions and maintenance', () => {
  it('trustMembers() ends the quarantine of the epoch whatever maxLockTtl the callers use', async () => {
    const restarted = servers.masters.slice(0, 3);
    for (const master of restarted) await master.restart();
    await Promise.all(servers.clients.map(drained));
    // An operator trusts with a short maxLockTtl; a service uses a 1 h one.
    await new Redlock(servers.clients, { maxLockTtl: 1_000 }).trustMembers();
    const service = await connected(new Redlock(servers.connect(), { retryCount: 0, maxLockTtl: 3_600_000 }));
    const lock = await service.acquire(fresh('trusted'), 1_000);
    expect(lock.votes.filter((vote) => vote.vote === 'quarantined')).toEqual([]);
    await lock.release();
  });

  /**
   * Defect 11. Routine maintenance: every member restarted once, one at a time, each waiting out
   * its quarantine. On b9d7392 resources already in use kept increasing tokens, but every NEW
   * resource failed 'unfenced' forever (an absent counter was trusted only on a genesis member).
   * Now each member keeps one counter for all resources, and one sync restores it.
   */
  it('fencing survives a rolling restart, for resources old and new, without operator action', async () => {
    const maxLockTtl = 600;
    const redlock = new Redlock(servers.clients, { retryCount: 5, retryDelay: 50, maxLockTtl });
    const old = fresh('rolling-old');
    const first = await redlock.acquire(old, 500, { fencing: true });
    await first.release();
    let last = first.fence!;
    // The documented procedure: one member at a time; its new epoch begins with the next lock
    // and sits out its quarantine; then fenced locks go on, and one of them re-syncs it (the one
    // that hears it before its propose round: usually the first).
    for (const [index, master] of servers.masters.entries()) {
      await master.restart();
      await drained(servers.clients[index]!);
      await redlock.acquire(fresh('rolling-epoch'), 500).then((lock) => lock.release());
      await sleep(maxLockTtl + 50);
      let synced = false;
      for (let i = 0; i < 5 && !synced; i++) {
        const lock = await redlock.acquire(old, 500, { fencing: true });
        expect(lock.fence!).toBeGreaterThan(last);
        last = lock.fence!;
        await lock.release();
        await sleep(20);
        await drained(servers.clients[index]!);
        synced = (await epochOf(servers.clients[index]!)).floor !== undefined; // repaired: a floor for every resource
      }
      expect(synced).toBe(true);
    }
    // A resource never fenced before gets a token too (every member is complete again: floors).
    // Tokens are per resource: it need not be above the other resource's.
    const fresher = await redlock.acquire(fresh('rolling-new'), 500, { fencing: true });
    expect(Number.isSafeInteger(fresher.fence) && fresher.fence! > 0).toBe(true);
    await fresher.release();
  });

  /**
   * A restarted member that answers 'taken' (a waiter took over while a release was still on its
   * way there) or is not waited for must still be repaired by the next fenced lock: otherwise
   * restarts spread over a few seconds leave a majority untrusted, and fencing fails for good
   * (found by the combined chaos scenario). The sync goes to every member heard in the acquire
   * round, bound to the epoch it answered from; it needs no lock key.
   */
  it('the next fenced lock repairs a restarted member even where it was refused', async () => {
    const maxLockTtl = 500;
    const redlock = new Redlock(servers.clients, { retryCount: 5, retryDelay: 20, maxLockTtl });
    const resource = fresh('repaired');
    await servers.masters[3]!.restart();
    await drained(servers.clients[3]!);
    await redlock.acquire(fresh('start-epoch'), 400).then((lock) => lock.release()); // its new epoch begins
    await sleep(maxLockTtl + 50);
    expect((await epochOf(servers.clients[3]!)).floor).toBeUndefined(); // untrusted: lost its counters
    await servers.clients[3]!.set(resource, 'another owner', 'PX', 5_000);
    // m3 refuses every one of these locks (it keeps the other key). Its answer is usually read
    // before the first lock is handed out, and then that lock repairs it; on a loaded machine it
    // may come later, and a following lock does: the sync goes where an answer was read.
    let repairedBy: number | undefined;
    for (let i = 0; i < 5 && repairedBy === undefined; i++) {
      const lock = await redlock.acquire(resource, 400, { fencing: true });
      expect(lock.votes[3]!.vote).not.toBe('locked');
      await sleep(20); // the sync is sent after the lock is won, without waiting
      await drained(servers.clients[3]!);
      const repaired = await epochOf(servers.clients[3]!);
      const counter = repaired[`fence:${resource}`];
      if (counter !== undefined) repairedBy = lock.fence;
      if (counter !== undefined) expect(Number(counter)).toBe(lock.fence);
      if (counter !== undefined) expect(Number(repaired.floor)).toBeGreaterThanOrEqual(lock.fence!);
      await lock.release();
    }
    expect(repairedBy).toBeDefined();
    expect(await servers.clients[3]!.get(resource)).toBe('another owner');
  });

  /**
   * A sync makes an epoch trust a token, so the token must cover every token that member held
   * before the epoch began, for every resource (one counter per member). A review showed that
   * syncing into an epoch still in quarantine breaks this: X's token for r1, raised on k and n1,
   * is lost in k's restart; a lock of r2 syncs its lower token into k's new epoch; a later lock of
   * r1 on k and n2 gets X's token again. Only an epoch past its quarantine is synced (by then every
   * token it may have held was issued, and the propose round's quorum covers it).
   */
  it('never syncs a token into an epoch still in quarantine; once past it, the next fenced lock does', async () => {
    const maxLockTtl = 1_500;
    const redlock = new Redlock(servers.clients, { retryCount: 3, retryDelay: 20, maxLockTtl });
    await servers.masters[3]!.restart();
    await drained(servers.clients[3]!);
    const during = await redlock.acquire(fresh('quarantined-sync'), 1_000, { fencing: true });
    await sleep(20); // a sync, if any, is sent without waiting
    await drained(servers.clients[3]!);
    const epoch = await epochOf(servers.clients[3]!);
    expect(epoch.id).toBeDefined(); // the acquire reached m3: its new epoch began
    // ...and no token or floor was synced into it during the quarantine.
    expect(Object.keys(epoch).filter((field) => field.startsWith('fence') || field === 'floor' || field === 'max')).toEqual([]);
    await during.release();
    await sleep(maxLockTtl + 50);
    // Past it: a fenced lock that hears m3 before its propose round repairs it (usually the first).
    let repaired = false;
    for (let i = 0; i < 5 && !repaired; i++) {
      const after = await redlock.acquire(fresh('settled-sync'), 1_000, { fencing: true });
      await sleep(20);
      await drained(servers.clients[3]!);
      const floor = (await epochOf(servers.clients[3]!)).floor;
      repaired = floor !== undefined && Number(floor) >= after.fence!;
      await after.release();
    }
    expect(repaired).toBe(true);
  });

  it('after a majority lost its data, fencing fails safe until an operator restores a floor; the next token is above it', async () => {
    const maxLockTtl = 500;
    const redlock = new Redlock(servers.clients, { retryCount: 3, retryDelay: 50, maxLockTtl });
    const resource = fresh('majority-lost');
    const before = await redlock.acquire(resource, 400, { fencing: true });
    await before.release();
    for (const master of servers.masters.slice(0, 3)) await master.restart();
    await Promise.all(servers.clients.map(drained));
    // Their new epochs begin with the first script they run; then they sit out the quarantine.
    await errorOf(redlock.acquire(resource, 400, { retryCount: 0 }));
    await sleep(maxLockTtl + 50);
    const unfenced = await errorOf(redlock.acquire(resource, 400, { fencing: true, retryCount: 0 }));
    expect(unfenced.outcome).toBe('unfenced');
    await expect(redlock.restoreFencing(0)).rejects.toThrow(/floor must be an integer >= 1/);
    const floor = before.fence! + 1_000; // e.g. the highest token the protected store accepted
    const results = await redlock.restoreFencing(floor);
    expect(results.every((result) => result.restored)).toBe(true);
    const after = await redlock.acquire(resource, 400, { fencing: true });
    expect(after.fence!).toBeGreaterThan(floor);
    await after.release();
  });
});
