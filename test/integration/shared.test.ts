/**
 * Shared (read) locks on real masters: many readers at once, never a reader beside a writer, no
 * writer starvation, fencing tokens ordered across both kinds, the quarantine, and the rollback.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockAcquireError, Redlock, type Lock } from '../../src/index.js';
import { resourceKeys } from '../../src/store/keys.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, sleep } from './util.js';

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await servers.heal();
});
afterAll(() => servers?.close());

/** The readers ZSET of `resource` (keys.ts: the 4th key of a resource) on every master. */
const readersKeyOf = (resource: string) => resourceKeys([resource])[3]!;
const readerCounts = (resource: string) => Promise.all(servers.clients.map((c) => c.zcard(readersKeyOf(resource))));
/** Waits until every master shows `expected` reader entries (a round settles at a quorum; the rest arrive after). */
const expectReaders = (resource: string, expected: number) =>
  eventually(async () => expect(await readerCounts(resource)).toEqual([expected, expected, expected, expected, expected]));

/** An interval during which a holder's lock was guaranteed, on one performance.now() clock. */
interface Held {
  shared: boolean;
  from: number;
  to: number;
  who: string;
}

/** Pairs of intervals that must not overlap: a writer's with anyone's. */
function violations(intervals: readonly Held[]): [Held, Held][] {
  const found: [Held, Held][] = [];
  for (let i = 0; i < intervals.length; i++)
    for (let j = i + 1; j < intervals.length; j++) {
      const a = intervals[i]!;
      const b = intervals[j]!;
      if ((a.shared && b.shared) || a.to <= b.from || b.to <= a.from) continue;
      found.push([a, b]);
    }
  return found;
}

/** Holds `lock` for `ms`, and records the interval it was guaranteed in (ends before release is sent). */
async function hold(lock: Lock, ms: number, who: string, into: Held[]): Promise<void> {
  const from = performance.now();
  const until = from + lock.remainingMs();
  await sleep(ms);
  into.push({ shared: lock.shared, from, to: Math.min(performance.now(), until), who });
  await lock.release();
}

describe('shared locks', () => {
  it('several readers hold at once; a writer is refused while they hold, with the votes saying why', async () => {
    const resource = fresh('shared-many');
    // Connected first: a call made while connecting waits for the connection inside its 50 ms
    // nodeTimeout, which a loaded CI machine can miss (one attempt each, no retry).
    const connected = async () => {
      const clients = servers.connect();
      await Promise.all(clients.map((c) => c.ping()));
      return clients;
    };
    const readers = await Promise.all([0, 1, 2].map(async () => new Redlock(await connected(), { retryCount: 0 })));
    const locks = await Promise.all(readers.map((r) => r.acquire(resource, 10_000, { shared: true })));
    expect(locks.map((lock) => lock.shared)).toEqual([true, true, true]);
    expect(locks.every((lock) => lock.remainingMs() > 0)).toBe(true);
    await expectReaders(resource, 3);

    const writer = new Redlock(await connected(), { retryCount: 0 });
    expect(await writer.tryAcquire(resource, 10_000)).toBeNull();
    const refused = await errorOf(writer.acquire(resource, 10_000));
    expect(refused.outcome).toBe('taken');
    // Each member says the readers' entries live on for most of their ttl.
    for (const vote of refused.attempts[0]!.votes.filter((v) => v.vote !== 'pending')) {
      expect(vote.vote).toBe('taken');
      expect(vote.heldForMs).toBeGreaterThan(5_000);
    }

    // Release is owner-only: one reader leaving takes only its own entry.
    await locks[0]!.release();
    await expectReaders(resource, 2);
    expect(await writer.tryAcquire(resource, 10_000)).toBeNull();
    await Promise.all(locks.slice(1).map((lock) => lock.release()));
    const w = await writer.acquire(resource, 10_000);
    expect(w.shared).toBe(false);
    // Now the writer keeps readers out.
    expect(await readers[0]!.tryAcquire(resource, 10_000, { shared: true })).toBeNull();
    await w.release();
    expect(await readers[0]!.tryAcquire(resource, 10_000, { shared: true })).not.toBeNull();
  });

  it('using() with { shared: true }: two readers work at once, kept extended past their ttl; a writer waits for both', async () => {
    const resource = fresh('shared-using');
    const redlock = new Redlock(servers.clients, { retryCount: 100, retryDelay: 20, retryJitter: 10 });
    let inside = 0;
    let together = 0;
    const read = () =>
      redlock.using(
        resource,
        600,
        async (signal, lock) => {
          expect(lock.shared).toBe(true);
          inside++;
          await sleep(100);
          together = Math.max(together, inside);
          await sleep(1_000); // beyond the ttl: auto-extension keeps the entry alive
          inside--;
          return signal.aborted;
        },
        { shared: true },
      );
    const readers = [read(), read()];
    await sleep(300);
    const writer = redlock.acquire(resource, 1_000, { waitTimeout: 10_000 });
    expect(await Promise.all(readers)).toEqual([false, false]); // neither lost its lock
    expect(together).toBe(2);
    const w = await writer;
    expect(inside).toBe(0); // it got in only after both had finished
    await w.release();
  });

  it('reentrancy: a shared lock is re-entered shared, never upgraded to exclusive; an exclusive one covers a shared re-entry', async () => {
    const resource = fresh('shared-reentrant');
    const redlock = new Redlock(servers.clients, { retryCount: 0, maxReentrancy: 2 });
    await redlock.using(
      resource,
      5_000,
      async (_signal, outer) => {
        const inner = await redlock.acquire(resource, 5_000, { shared: true, reentrant: true });
        expect(inner.shared).toBe(true);
        expect(inner.value).toBe(outer.value); // the nested handle: no second entry on the members
        await inner.release();
        const upgrade = await redlock.acquire(resource, 5_000, { reentrant: true }).catch((error: unknown) => error);
        expect(upgrade).toMatchObject({ code: 'QUORUMLOCK_ERR_REENTRANCY', message: expect.stringMatching(/cannot be upgraded/) });
      },
      { shared: true },
    );
    await redlock.using(resource, 5_000, async (_signal, outer) => {
      const inner = await redlock.acquire(resource, 5_000, { shared: true, reentrant: true });
      expect(inner.value).toBe(outer.value);
      await inner.release();
    });
  });

  it('extend renews only its own entry, and an expired reader cannot be extended back', async () => {
    const resource = fresh('shared-extend');
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const short = await redlock.acquire(resource, 300, { shared: true });
    const long = await redlock.acquire(resource, 10_000, { shared: true });
    const before = await servers.clients[0]!.zscore(readersKeyOf(resource), long.value);
    await long.extend(20_000);
    const after = await servers.clients[0]!.zscore(readersKeyOf(resource), long.value);
    expect(Number(after) - Number(before)).toBeGreaterThan(5_000);
    await sleep(600);
    await expect(short.extend(10_000)).rejects.toThrow();
    expect(long.remainingMs()).toBeGreaterThan(10_000);
    await long.release();
    // Its entry is gone everywhere; the expired one is dead (a writer is let in) until pruned.
    expect(await Promise.all(servers.clients.map((c) => c.zscore(readersKeyOf(resource), long.value)))).toEqual([null, null, null, null, null]);
    const writer = await redlock.acquire(resource, 1_000);
    await writer.release();
    await expectReaders(resource, 0);
  });

  it('never lets a writer overlap anyone, with many readers and writers contending (one performance.now() clock)', async () => {
    const resource = fresh('shared-exclusion');
    const intervals: Held[] = [];
    const stopAt = performance.now() + 4_000;
    const worker = async (index: number) => {
      const shared = index % 3 !== 0; // 8 readers, 4 writers
      const redlock = new Redlock(servers.connect(), { retryCount: 200, retryDelay: 20, retryJitter: 10 });
      while (performance.now() < stopAt) {
        const lock = await redlock.acquire(resource, 2_000, { shared, waitTimeout: 20_000 });
        await hold(lock, 5 + (index % 4) * 5, `${shared ? 'reader' : 'writer'} ${index}`, intervals);
      }
    };
    await Promise.all(Array.from({ length: 12 }, (_, index) => worker(index)));
    expect(violations(intervals)).toEqual([]);
    expect(intervals.filter((held) => !held.shared).length).toBeGreaterThan(0);
    // Readers did share: some reader intervals overlap.
    const readers = intervals.filter((held) => held.shared);
    const overlapping = readers.some((a, i) => readers.some((b, j) => i !== j && a.from < b.to && b.from < a.to));
    expect(overlapping).toBe(true);
  });

  it('does not starve a writer under a continuous stream of readers; readers that came after it wait', async () => {
    const resource = fresh('shared-starve');
    const line = resourceKeys([resource])[1]!;
    const intervals: Held[] = [];
    let stop = false;
    const readerStarts: { at: number; from?: number }[] = [];
    const reader = async (index: number) => {
      const redlock = new Redlock(servers.connect(), { retryCount: 1_000, retryDelay: 50, retryJitter: 20 });
      await sleep(index * 80); // staggered, so that the resource is never free of readers
      while (!stop) {
        const start: { at: number; from?: number } = { at: performance.now() };
        readerStarts.push(start);
        const lock = await redlock.acquire(resource, 5_000, { shared: true, waitTimeout: 30_000 });
        start.from = performance.now();
        await hold(lock, 400, `reader ${index}`, intervals);
      }
    };
    const readers = Array.from({ length: 5 }, (_, index) => reader(index));
    await sleep(1_000);
    // A writer arrives while the resource is read-held without a gap.
    const writerRedlock = new Redlock(servers.connect(), { retryCount: 1_000, retryDelay: 50, retryJitter: 20 });
    const arrived = performance.now();
    const writing = writerRedlock.acquire(resource, 5_000, { waitTimeout: 30_000 });
    // The moment the writer's place in line is on every member (a waiter id without the shared mark).
    let joinedAt: number | undefined;
    let writer: Lock | undefined;
    void writing.then((lock) => (writer = lock));
    while (joinedAt === undefined && writer === undefined) {
      const lines = await Promise.all(servers.clients.map((c) => c.zrange(line, '0', '-1')));
      if (lines.every((waiters) => waiters.some((id) => !id.startsWith('~')))) joinedAt = performance.now();
      else await sleep(2);
    }
    const w = await writing;
    const writerFrom = performance.now();
    await hold(w, 100, 'writer', intervals);
    stop = true;
    await Promise.all(readers);
    expect(violations(intervals)).toEqual([]);
    // The stream was continuous: readers held when the writer arrived.
    expect(intervals.some((held) => held.shared && held.from < arrived && held.to > arrived)).toBe(true);
    // The writer waited in line (it found readers holding), and every reader that started after
    // its place was on every member got in only after the writer.
    expect(joinedAt).toBeDefined();
    const later = readerStarts.filter((start) => start.at > joinedAt! && start.at < writerFrom);
    expect(later.length).toBeGreaterThan(0);
    for (const start of later) expect(start.from).toBeGreaterThan(writerFrom);
    // Bounded: the writer waited for the readers ahead of it (each holds 400 ms), not for the stream.
    expect(writerFrom - arrived).toBeLessThan(10_000);
  });

  it('orders fencing tokens across readers and writers (one counter per resource)', async () => {
    const resource = fresh('shared-fence');
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const w1 = await redlock.acquire(resource, 10_000, { fencing: true });
    await w1.release();
    const [r1, r2] = await Promise.all([
      redlock.acquire(resource, 10_000, { shared: true, fencing: true }),
      new Redlock(servers.connect(), { retryCount: 5 }).acquire(resource, 10_000, { shared: true, fencing: true }),
    ]);
    expect(r1.fence).toBeGreaterThan(w1.fence!);
    expect(r2.fence).toBeGreaterThan(w1.fence!);
    expect(r1.fence).not.toBe(r2.fence);
    await Promise.all([r1.release(), r2.release()]);
    const w2 = await redlock.acquire(resource, 10_000, { fencing: true });
    expect(w2.fence).toBeGreaterThan(Math.max(r1.fence!, r2.fence!));
    await w2.release();
  });

  it('gives each of many readers arriving at once its own token, in one attempt each (readers outbid by readers propose again)', async () => {
    const resource = fresh('shared-fence-crowd');
    // Six Redlocks (as six processes would be), 30 readers, no retries: every reader's acquire round
    // wins (readers do not exclude each other), and all of them propose the same next token at first.
    // Each with its connections ready first (connected, epochs read, scripts loaded: a cold
    // start's round trips, on a busy machine, timed a first round out), and a nodeTimeout that a
    // burst of 30 fenced acquires on two loaded cores does not use up: this is about the fence.
    const redlocks = Array.from({ length: 6 }, () => new Redlock(servers.connect(), { retryCount: 0, nodeTimeout: 500 }));
    for (const redlock of redlocks) await (await redlock.acquire(fresh('shared-fence-warm'), 10_000, { shared: true, fencing: true })).release();
    const settled = await Promise.allSettled(
      Array.from({ length: 30 }, (_, i) => redlocks[i % redlocks.length]!.acquire(resource, 10_000, { shared: true, fencing: true })),
    );
    const locks = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const failures = settled.flatMap((result) => (result.status === 'rejected' ? [(result.reason as Error).message] : []));
    expect(failures).toEqual([]);
    expect(new Set(locks.map((lock) => lock.fence)).size).toBe(30);
    await Promise.all(locks.map((lock) => lock.release()));
    const writer = await redlocks[0]!.acquire(resource, 10_000, { fencing: true });
    expect(writer.fence).toBeGreaterThan(Math.max(...locks.map((lock) => lock.fence!)));
    await writer.release();
    await Promise.all(redlocks.map((redlock) => redlock.quit()));
  });

  it('rolls back on every member when a shared acquire fails, and names each vote', async () => {
    const resource = fresh('shared-rollback');
    // Another owner's lock key on three of five members: a reader can win only two.
    await Promise.all(servers.clients.slice(0, 3).map((c) => c.set(resource, 'someone-else', 'PX', 10_000)));
    const error = await errorOf(new Redlock(servers.clients, { retryCount: 0 }).acquire(resource, 10_000, { shared: true }));
    expect(error.outcome).toBe('taken');
    // Members 3 and 4 let it in ('pending' when the round was decided before their answer).
    const votes = error.attempts[0]!.votes.map((vote) => vote.vote);
    expect(votes.slice(0, 3)).toEqual(['taken', 'taken', 'taken']);
    for (const vote of votes.slice(3)) expect(['locked', 'pending']).toContain(vote);
    // The two entries it did set are gone again (these reads share the connections the attempt
    // and its rollback went on, so they run after both), and the other owner's keys are untouched.
    await expectReaders(resource, 0);
    expect(await servers.valuesOf(resource)).toEqual(['someone-else', 'someone-else', 'someone-else', null, null]);
    await Promise.all(servers.clients.map((c) => c.del(resource)));
  });

  it('counts no member restarted empty within the quarantine (a reader it forgot may still hold)', async () => {
    const resource = fresh('shared-quarantine');
    const reader = await new Redlock(servers.clients, { retryCount: 0, maxLockTtl: 5_000 }).acquire(resource, 5_000, { shared: true });
    for (const index of [0, 1, 2]) {
      await servers.masters[index]!.kill();
      await servers.masters[index]!.restart();
    }
    const clients = servers.connect();
    await Promise.all(clients.map((c) => c.ping()));
    // The three restarted members forgot the reader; without the quarantine a writer would win there.
    const error = await errorOf(new Redlock(clients, { retryCount: 0, maxLockTtl: 5_000 }).acquire(resource, 5_000));
    expect(error).toBeInstanceOf(LockAcquireError);
    // The round settles once a quorum is out of reach: members not heard by then are 'pending'.
    const votes = error.attempts[0]!.votes.map((vote) => vote.vote);
    expect(votes).not.toContain('locked');
    for (const vote of votes.slice(0, 3)) expect(['quarantined', 'pending']).toContain(vote);
    for (const vote of votes.slice(3)) expect(['taken', 'pending']).toContain(vote);
    expect(votes.filter((vote) => vote === 'quarantined').length).toBeGreaterThan(0);
    expect(reader.remainingMs()).toBeGreaterThan(0);
  });
});
