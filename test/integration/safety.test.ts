/**
 * Safety beyond plain Redlock, on real servers: the restart quarantine (and the hazard it
 * prevents), replica refusal, and fencing tokens that keep increasing across restarts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fencedWrite, LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import { processBackend } from '../harness/process.js';
import { appendOnly, client, startTestMasters, trust, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, sleep } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await servers.heal();
});
afterAll(() => servers?.close());

/** Clients that fail at once while their master is down, instead of queueing for its return. */
function failFastClients(): Redis[] {
  return servers.masters.map((master) => {
    const redis = new Redis({ host: master.host, port: master.port, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    redis.on('error', () => {});
    return redis;
  });
}

describe('restart quarantine', () => {
  /**
   * The textbook hazard: A holds a bare majority (m0, m1, m2; m3 and m4 were down), then m2
   * restarts empty and m3, m4 come back empty. Without the quarantine B locks m2, m3, m4 while A
   * still holds its lock. With it, the three fresh members do not count.
   */
  async function setUpHazard(resource: string): Promise<{ a: Lock; bClients: Redis[] }> {
    const aClients = failFastClients();
    await Promise.all(aClients.map((c) => new Promise((resolve) => c.once('ready', resolve))));
    for (const index of [3, 4]) await servers.masters[index]!.kill();
    const a = await new Redlock(aClients, { retryCount: 0, maxLockTtl: 3_000 }).acquire(resource, 3_000);
    expect(a.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'locked', 'error', 'error']);
    await servers.masters[2]!.kill();
    for (const index of [2, 3, 4]) await servers.masters[index]!.restart();
    for (const c of aClients) c.disconnect();
    const bClients = servers.connect();
    await Promise.all(bClients.map((c) => c.ping()));
    return { a, bClients };
  }

  it('without it, a member restarted empty lets a second client in while the first still holds the lock (the hazard)', async () => {
    const resource = fresh('hazard');
    const { a, bClients } = await setUpHazard(resource);
    const b = await new Redlock(bClients, { retryCount: 0, maxLockTtl: 3_000, quarantine: false }).acquire(resource, 3_000);
    // Two holders at once: exactly what a lock must never allow.
    expect(a.remainingMs()).toBeGreaterThan(0);
    expect(b.remainingMs()).toBeGreaterThan(0);
    await b.release();
  });

  it('with it, the restarted members do not count until maxLockTtl has passed', async () => {
    const resource = fresh('quarantined');
    const { a, bClients } = await setUpHazard(resource);
    const b = new Redlock(bClients, { retryCount: 0, maxLockTtl: 3_000 });
    const error = await errorOf(b.acquire(resource, 3_000));
    expect(a.remainingMs()).toBeGreaterThan(0);
    // m0, m1 are A's; m2..m4 said yes but are quarantined. Which of the two the outcome names
    // depends on who answered before the round was settled.
    expect(['taken', 'quarantined']).toContain(error.outcome);
    const votes = error.attempts[0]!.votes.map((vote) => vote.vote);
    expect(votes).not.toContain('locked'); // nothing counted (the round settles once quorum is out of reach)
    for (const vote of votes.slice(0, 2)) expect(['taken', 'pending']).toContain(vote);
    for (const vote of votes.slice(2)) expect(['quarantined', 'pending']).toContain(vote);
    expect(votes).toContain('quarantined');
    // Once A's lock has certainly expired, the quarantine is over too, and B gets in.
    await sleep(a.remainingMs() + 50);
    const later = await new Redlock(bClients, { maxLockTtl: 3_000 }).acquire(resource, 3_000, { waitTimeout: 5_000 });
    expect(later.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(3);
    await later.release();
  });

  it('FLUSHALL counts as losing data; trustMembers() is the explicit way to declare members new', async () => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    await Promise.all(servers.clients.slice(0, 3).map((c) => c.flushall()));
    const error = await errorOf(redlock.acquire(fresh('flushed'), 1_000));
    expect(error.outcome).toBe('quarantined');
    expect(error.message).toContain('redlock.trustMembers()');
    const results = await redlock.trustMembers();
    expect(results.every((result) => result.trusted)).toBe(true);
    expect(results.slice(0, 3).every((result) => result.quarantineLeftMs! > 0)).toBe(true);
    const lock = await redlock.acquire(fresh('flushed'), 1_000);
    await lock.release();
  });

  it('a restart from disk starts a new epoch: the member counts again only after maxLockTtl (the delayed restart)', async () => {
    // AOF with fsync always: the keys survive the crash. The next restart could just as well have
    // lost its last writes (a laxer fsync policy, a disk cache), so any new server process starts
    // a new epoch, recognised by its run id, whatever its data looks like.
    const directory = await mkdtemp(join(tmpdir(), 'quorumlock-aof-'));
    const set = await processBackend.start(3, {
      args: appendOnly(directory),
    });
    const clients = set.masters.map(client);
    try {
      await trust(clients);
      const redlock = new Redlock(clients, { retryCount: 0, maxLockTtl: 2_000 });
      const held = fresh('persisted');
      const lock = await redlock.acquire(held, 2_000, { fencing: true });
      const before = await clients[0]!.hgetall('quorumlock:epoch');
      expect(before.genesis).toBe('1');
      for (const master of set.masters) await master.restart();
      await Promise.all(clients.map((c) => c.ping()));
      // The data came back from disk, lock key and epoch hash included...
      expect(await clients[0]!.get(held)).not.toBeNull();
      // ...and still the members do not count: their epoch is another process's.
      const error = await errorOf(redlock.acquire(fresh('after-restart'), 1_000));
      expect(error.outcome).toBe('quarantined');
      expect(error.attempts[0]!.votes.every((vote) => vote.vote === 'quarantined' || vote.vote === 'pending')).toBe(true);
      const after = await clients[0]!.hgetall('quorumlock:epoch');
      expect(after.run_id).not.toBe(before.run_id);
      expect(Number(after.since)).toBeGreaterThan(Number(before.since));
      // Fence counters and genesis belonged to the old epoch: gone, so they are untrusted until synced.
      expect(Object.keys(after).sort()).toEqual(['evicted', 'id', 'replaced', 'replid', 'restart', 'run_id', 'since']);
      expect(lock.fence).toBeGreaterThan(0);
      await sleep(2_050);
      const later = await redlock.acquire(fresh('after-restart'), 1_000);
      await later.release();
    } finally {
      for (const c of clients) c.disconnect();
      await set.stop();
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('a writable replica never counts toward quorum', async () => {
    const upstream = await processBackend.start(1);
    const replicaSet = await processBackend.start(1, { args: ['--replicaof', '127.0.0.1', String(upstream.masters[0]!.port), '--replica-read-only', 'no'] });
    const replica = client(replicaSet.masters[0]!);
    try {
      const members = [servers.clients[0]!, servers.clients[1]!, replica];
      const redlock = new Redlock(members, { retryCount: 0 });
      // A replica cannot even be declared trusted: the script refuses any server that is not a master.
      const [trusted] = await new Redlock([replica]).trustMembers();
      expect(trusted!.trusted).toBe(false);
      expect(trusted!.error!.message).toMatch(/not a plain master/);
      while (redlock.members[2]!.role === undefined) await sleep(5);
      expect(redlock.members[2]!.role).toBe('slave');
      await servers.masters[1]!.pause(); // leaves m0 and the replica: a majority only if the replica counted
      const error = await errorOf(redlock.acquire(fresh('replica'), 1_000, { retryCount: 0 }));
      expect(error.attempts[0]!.votes[2]!.vote).toBe('quarantined');
      expect(error.outcome).toBe('quarantined');
    } finally {
      replica.disconnect();
      await replicaSet.stop();
      await upstream.stop();
    }
  });
});

describe('fencing tokens', () => {
  it('strictly increase across clients and resources, one round more than a plain acquire', async () => {
    const resource = fresh('fenced');
    const clients = [new Redlock(servers.clients), new Redlock(servers.connect()), new Redlock(servers.connect())];
    const fences: number[] = [];
    for (let i = 0; i < 12; i++) {
      const lock = await clients[i % 3]!.acquire(resource, 2_000, { fencing: true });
      expect(Number.isSafeInteger(lock.fence), JSON.stringify({ fence: lock.fence, votes: lock.votes })).toBe(true);
      fences.push(lock.fence!);
      await lock.release();
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!);
    // A multi-resource lock's token is above every earlier token of each of its resources.
    const other = fresh('fenced-other');
    const single = await clients[0]!.acquire(other, 2_000, { fencing: true });
    await single.release();
    const both = await clients[1]!.acquire([resource, other], 2_000, { fencing: true });
    expect(both.fence!).toBeGreaterThan(Math.max(fences.at(-1)!, single.fence!));
    await both.release();
    // Without fencing there is no token.
    const plain = await clients[2]!.acquire(resource, 2_000);
    expect(plain.fence).toBeUndefined();
    await plain.release();
  });

  it('keep increasing when members restart empty and lose their counters', async () => {
    const resource = fresh('fenced-restarts');
    const maxLockTtl = 400;
    const redlock = new Redlock(servers.clients, { maxLockTtl });
    let last = 0;
    for (const victim of [0, 1, 2, 3, 4, 0]) {
      const lock = await redlock.acquire(resource, 300, { fencing: true, waitTimeout: 5_000 });
      expect(lock.fence!).toBeGreaterThan(last);
      last = lock.fence!;
      await lock.release();
      await servers.masters[victim]!.restart(); // its counter is gone; it does not read 0 as the truth
      await servers.clients[victim]!.ping();
      // Its new epoch begins with the next script, and is synced (trusted again) only once past
      // its quarantine: restart members at least maxLockTtl apart (README, rolling restarts).
      await redlock.acquire(fresh('epoch-start'), 300).then((started) => started.release());
      // The victim may be one the round did not wait for: its epoch starts when its call runs.
      await eventually(async () => expect(await servers.clients[victim]!.hget('quorumlock:epoch', 'since')).not.toBeNull());
      await sleep(maxLockTtl + 100);
    }
    const lock = await redlock.acquire(resource, 300, { fencing: true });
    expect(lock.fence!).toBeGreaterThan(last);
    await lock.release();
  });

  it('are refused, with the reason, when a majority lost its counters, and the lock is rolled back', async () => {
    const resource = fresh('fenced-majority-lost');
    const redlock = new Redlock(servers.clients, { retryCount: 0, quarantine: false });
    const first = await redlock.acquire(resource, 1_000, { fencing: true });
    await first.release();
    for (const index of [0, 1, 2]) await servers.masters[index]!.restart();
    await Promise.all(servers.clients.map((c) => c.ping()));
    const outcome = await redlock.acquire(resource, 1_000, { fencing: true }).catch((e: unknown) => e);
    if (!(outcome instanceof LockAcquireError)) {
      const epochs = await Promise.all(servers.clients.map((c) => c.hgetall('quorumlock:epoch')));
      throw new Error(
        'issued a fence although a majority lost its counters: ' +
          JSON.stringify({ first: first.fence, fence: (outcome as Lock).fence, votes: (outcome as Lock).votes, epochs }),
      );
    }
    const error = outcome;
    expect(error.outcome).toBe('unfenced');
    expect(error.message).toMatch(/too few members have trusted fence counters/);
    expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(null));
  });

  it('let the protected store turn away a writer whose lock expired (fencedWrite)', async () => {
    const resource = fresh('guarded');
    const redlock = new Redlock(servers.clients);
    const store = servers.clients[0]!;
    const slow = await redlock.acquire(resource, 200, { fencing: true });
    await sleep(250); // paused past its validity
    const fast = await redlock.acquire(resource, 2_000, { fencing: true });
    expect(await fencedWrite(store, `data:${resource}`, 'from the current holder', fast.fence!)).toBe(true);
    expect(await fencedWrite(store, `data:${resource}`, 'from the paused one', slow.fence!)).toBe(false);
    expect(await store.get(`data:${resource}`)).toBe('from the current holder');
    expect(await fencedWrite(store, `data:${resource}`, 'again, same holder', fast.fence!)).toBe(true);
    await expect(fencedWrite(store, 'x', 'y', 0)).rejects.toMatchObject({ name: 'RangeError', parameter: 'fence' });
    await fast.release();
  });
});
