/**
 * Waiting for a held lock, on real masters: in arrival order, woken by the release (not by a
 * timer), one waiter per release, with the timed retry as the fallback.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Lock } from '../../src/index.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { runCli } from '../cli/spawn.js';
import { eventually, fresh, hearsReleases, heldOnEvery, lineLengths, lineOf, listeningInLine, onMajority, sleep, scriptCalls, warmedUp } from './util.js';

let servers: TestMasters;
const { client, quitAll } = redlocksOn(() => servers);

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await quitAll();
  await servers.resumeAll();
});
afterAll(() => servers?.close());

const lines = (resource: string) => Promise.all(servers.clients.map((c) => c.zrange(lineOf(resource), '0', '-1')));
const inLine = (resource: string) => lineLengths(servers.clients, resource);
/** Whether a release on a majority would reach the waiter at `place` in line (util.ts, hearsReleases). */
const heardOnMajority = async (resource: string, place = 0) => onMajority(await hearsReleases(servers.clients, resource, place));

describe('waiting in line', () => {
  it('hands the lock to waiters in the order they arrived, and a returning holder goes to the back', async () => {
    const resource = fresh('fifo');
    const holder = client();
    const first = await holder.acquire(resource, 10_000);
    // Held on every member (not only the majority that answered first), so every member refuses
    // the waiters and lines them up.
    await heldOnEvery(servers.clients, resource, first.value);
    const order: string[] = [];
    const waiters: Promise<void>[] = [];
    for (const [index, name] of ['w1', 'w2', 'w3'].entries()) {
      waiters.push(
        (async () => {
          const lock = await client().acquire(resource, 10_000, { waitTimeout: 10_000 });
          order.push(name);
          await sleep(20);
          await lock.release();
        })(),
      );
      // Arrive in this order: each one in line everywhere, behind the ones before it, before the
      // next one comes (on a busy machine a fixed sleep between them did not say so).
      await eventually(async () => expect(await inLine(resource)).toEqual(Array(5).fill(index + 1)));
    }
    await first.release();
    const again = holder.acquire(resource, 10_000, { waitTimeout: 10_000 }).then((lock) => {
      order.push('holder again');
      return lock.release();
    });
    await Promise.all([...waiters, again]);
    expect(order).toEqual(['w1', 'w2', 'w3', 'holder again']);
  });

  it('wakes the waiter on release, not on its timed retry', async () => {
    const resource = fresh('woken');
    const lock = await client().acquire(resource, 10_000);
    // With a 5 s retry delay, only the release announcement can wake the waiter within its 3 s budget.
    const waiting = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 3_000 });
    // Waiting: in line and listening on a majority. (After a fixed 100 ms, on a busy machine, it
    // could be in line but not yet subscribed: the release then told nobody.)
    await eventually(async () => expect(await heardOnMajority(resource)).toBe(true));
    await lock.release();
    const next = await waiting;
    expect(next.remainingMs()).toBeGreaterThan(0);
    await next.release();
  });

  it('one release wakes one waiter: the scripts run per handoff stay bounded with 20 waiters in line', async () => {
    const resource = fresh('no-stampede');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value); // so each waiter is lined up on member 0 too
    // Long timed retries: between handoffs, only announcements make anyone try.
    const acquired: Lock[] = [];
    const waiters = Array.from({ length: 20 }, () =>
      client({ retryDelay: 20_000, retryJitter: 0 })
        .acquire(resource, 10_000, { waitTimeout: 30_000 })
        .then((lock) => acquired.push(lock)),
    );
    const member = servers.clients[0]!;
    // Everyone has tried, subscribed, and joined the line (on a busy machine this takes longer
    // than any fixed sleep): from then on only announcements make anyone try. Each one listens on a
    // majority of the members where it is in line, so that the release that makes it the head
    // wakes it (its timed retry is 20 s away).
    await eventually(async () => {
      expect(await member.zcard(lineOf(resource))).toBe(20);
      const listening = await listeningInLine(servers.clients, resource);
      for (let place = 0; place < 20; place++) expect(onMajority(listening.map((places) => places[place] ?? false))).toBe(true);
    }, 20_000);
    await sleep(50); // their last replies are read
    const before = await scriptCalls(member);
    await holder.release();
    while (acquired.length === 0) await sleep(5);
    await sleep(50); // let any stampede show up
    const during = (await scriptCalls(member)) - before;
    // The release, the head's acquire, and at most its step out of line; a stampede would be 20+.
    expect(during).toBeLessThanOrEqual(4);
    expect(acquired).toHaveLength(1);
    // Drain the line: each release hands over to the next.
    while (acquired.length < 20) {
      const next = acquired.length;
      await acquired[next - 1]!.release();
      while (acquired.length === next) await sleep(1);
    }
    await acquired[19]!.release();
    await Promise.all(waiters);
  });

  it("falls back to the holder's expiry when a lock is not released", async () => {
    const resource = fresh('expired-holder');
    await client().acquire(resource, 400); // never released
    // When to come back is read from the refusals of a majority (each with the holder's expiry):
    // nodeTimeout leaves a busy machine the time to give them, not 50 ms.
    const lock = await client({ retryDelay: 5_000, retryJitter: 0, nodeTimeout: 1_000 }).acquire(resource, 10_000, { waitTimeout: 3_000 });
    expect(lock.remainingMs()).toBeGreaterThan(0);
    await lock.release();
  });

  it('a waiter that gives up (abort) leaves the line, so the next one is not held up', async () => {
    const resource = fresh('abandon');
    const holder = await client().acquire(resource, 10_000);
    const controller = new AbortController();
    const quitter = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { signal: controller.signal, waitTimeout: 30_000 });
    await eventually(async () => expect(await heardOnMajority(resource, 0)).toBe(true)); // first in line (and listening) on a majority
    const next = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 3_000 });
    // Behind the quitter, and listening, on a majority: a release there wakes it once the quitter left.
    await eventually(async () => expect(await heardOnMajority(resource, 1)).toBe(true));
    controller.abort(new Error('not needed any more'));
    await expect(quitter).rejects.toThrow('not needed any more');
    await holder.release();
    // The quitter had a 15 s lease on its place: only its leaving lets the next one in this soon.
    const lock = await next;
    await lock.release();
  });

  it('one signal shared by many waiters: no "possible memory leak" warning from Node, and its abort ends every wait', async () => {
    // A shutdown signal passed to every acquire is what AbortSignal is for: each round, sleep and
    // wait listening on it apiece made Node warn past 10 listeners (src/clock/abort.ts).
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
    process.on('warning', onWarning);
    try {
      const resource = fresh('shared-signal');
      const holder = await client().acquire(resource, 10_000);
      const controller = new AbortController();
      const waiter = client({ retryDelay: 20, retryJitter: 0, retryCount: Infinity });
      // Rounds and sleeps of 16 waiters, all on the one signal; and 16 uncontended locks taken on it meanwhile.
      const waiting = Array.from({ length: 16 }, () => waiter.acquire(resource, 10_000, { signal: controller.signal }).catch((error: unknown) => error));
      const others = await Promise.all(Array.from({ length: 16 }, (_, i) => waiter.acquire(`${resource}:${i}`, 10_000, { signal: controller.signal })));
      await Promise.all(others.map((lock) => lock.release()));
      await sleep(200); // several retries each, all listening to the signal
      controller.abort(new Error('shutting down'));
      for (const outcome of await Promise.all(waiting)) expect((outcome as Error).message).toBe('shutting down');
      await holder.release();
      await new Promise((resolve) => setImmediate(resolve)); // Node emits the warning on a later tick
      expect(warnings.filter((warning) => warning.includes('MaxListenersExceeded'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a waiter that vanished without leaving loses its place when its lease runs out', async () => {
    const resource = fresh('crashed');
    // 30 s: the holder outlives a cold CLI start on loaded cores (it is released below).
    const holder = await client().acquire(resource, 30_000);
    // A process that waits in line and is killed: all its connections close without a word, its
    // subscriber's too. (Disconnecting a waiter's clients in this process left its subscriber
    // listening: a release then rightly handed it the lock, and it held it.)
    const members = servers.masters.map((master) => `redis://${master.host}:${master.port}`).join(',');
    const crashed = runCli(members, resource, '10s', 'console.log("ran")', ['--wait', '30s']);
    try {
      await eventually(async () => expect(onMajority((await inLine(resource)).map((count) => count > 0))).toBe(true), 15_000); // in line, first, on a majority
    } finally {
      crashed.child.kill('SIGKILL');
    }
    expect(await crashed.done).toMatchObject({ signal: 'SIGKILL', stdout: '' });
    const next = client({ retryDelay: 100, retryJitter: 0, retryCount: Infinity }).acquire(resource, 10_000, { waitTimeout: 10_000 });
    await sleep(50);
    await holder.release();
    const lock = await next; // after the crashed waiter's 1 s lease, not never
    await lock.release();
  });
});

describe('a waiter that won', () => {
  it('keeps its place until its release, which leaves every line and wakes the next: no round of its own to leave', async () => {
    const resource = fresh('leave-at-release');
    const holder = await client().acquire(resource, 10_000);
    // Held on every member, so the waiter is lined up on every member (its attempt is granted,
    // and rolled back, where the holder's key has not landed yet), and listening on a majority
    // (that is what hears the hand-over; its timed retry is 5 s away).
    await heldOnEvery(servers.clients, resource, holder.value);
    const waiter = client({ retryDelay: 5_000, retryJitter: 0 });
    const won = waiter.acquire(resource, 10_000, { waitTimeout: 10_000 });
    await eventually(async () => {
      expect((await lines(resource)).every((line) => line.length === 1)).toBe(true);
      expect(await heardOnMajority(resource)).toBe(true);
    });
    const [[waiterId]] = (await lines(resource)) as [[string]];
    const leavesBefore = await Promise.all(servers.clients.map(scriptCalls));
    await holder.release();
    const lock = await won;
    await Promise.all(servers.clients.map((c) => c.ping()));
    // Still in line everywhere, and no leave was sent: the script calls since are the holder's
    // release alone, one per member, which handed the lock over (docs/handover.md): the waiter
    // ran no acquire round of its own either.
    expect(await lines(resource)).toEqual(Array(5).fill([waiterId]));
    const calls = await Promise.all(servers.clients.map(scriptCalls));
    expect(calls.map((count, index) => count - leavesBefore[index]!)).toEqual(Array(5).fill(1));
    expect(await Promise.all(servers.clients.map((c) => c.get(resource)))).toEqual(Array(5).fill(lock.value));

    // The next waiter, with a 5 s retry delay, is woken by the winner's release.
    const next = client({ retryDelay: 5_000, retryJitter: 0 }).acquire(resource, 10_000, { waitTimeout: 3_000 });
    await eventually(async () => {
      expect((await lines(resource)).every((line) => line.length === 2)).toBe(true);
      expect(await heardOnMajority(resource, 1)).toBe(true);
    });
    const releasedAt = performance.now();
    await lock.release();
    await (await next).release();
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    await Promise.all(servers.clients.map((c) => c.ping()));
    expect((await lines(resource)).flat()).not.toContain(waiterId);
  });

  it('and dies unreleased keeps no place in line past its key: the next waiter gets the lock at its expiry, not at the end of its lease', async () => {
    const resource = fresh('winner-died');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    // A lease of 3 × (1000 + 100 + 50) = 3450 ms on its place in line; woken by the release.
    const doomed = client({ retryDelay: 1_000 }).acquire(resource, 400, { waitTimeout: 10_000 });
    await eventually(async () => {
      expect((await lines(resource)).every((line) => line.length === 1)).toBe(true);
      expect(await heardOnMajority(resource)).toBe(true);
    });
    await holder.release();
    await doomed; // held for 400 ms, never released
    const wonAt = performance.now();
    const next = await client({ retryDelay: 50, retryJitter: 0, retryCount: Infinity }).acquire(resource, 10_000, { waitTimeout: 5_000 });
    // Its keys lapse at 400 ms; its place in line lapsed with them where it was granted (3.4 s
    // later without that bound).
    expect(performance.now() - wonAt).toBeLessThan(2_000);
    await next.release();
  });
});

describe('a winner that shortened its hold, or dies unreleased', () => {
  it('extend(shorter) and gone: the next waiter gets the lock within the winner’s lease (about 1 s), not its original ttl', async () => {
    const resource = fresh('shortened');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    const winner = client().acquire(resource, 5_000, { waitTimeout: 10_000 }); // lease 1050 ms
    await eventually(async () => expect((await inLine(resource)).every((count) => count === 1)).toBe(true));
    await holder.release();
    const lock = await winner;
    await lock.extend(300); // then never released
    const gaveUpAt = performance.now();
    const next = await client({ retryDelay: 100, retryJitter: 0, retryCount: Infinity }).acquire(resource, 10_000, { waitTimeout: 8_000 });
    expect(performance.now() - gaveUpAt).toBeLessThan(3_000); // 5 s if its place lasted its ttl
    await next.release();
  });

  it('a waiter second in line behind a holder that dies unreleased comes back at its expiry, not after its retry delay', async () => {
    const resource = fresh('behind-holder');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    const winner = client().acquire(resource, 400, { waitTimeout: 10_000 });
    await eventually(async () => expect((await inLine(resource)).every((count) => count === 1)).toBe(true));
    await holder.release();
    await winner; // held 400 ms, never released; it stays first in line meanwhile
    const startedAt = performance.now();
    // Its come-back time is read from the refusals of a majority: nodeTimeout leaves a busy
    // machine the time to give them, not 50 ms.
    const next = await client({ retryDelay: 3_000, retryJitter: 0, nodeTimeout: 1_000 }).acquire(resource, 10_000, { waitTimeout: 8_000 });
    expect(performance.now() - startedAt).toBeLessThan(2_000); // 3 s with the retry delay
    await next.release();
  });
});

describe('fairness under contention', () => {
  it('8 workers with ~1 ms holds share the lock evenly: no worker takes it straight back', async () => {
    const resource = fresh('fair');
    const counts = Array(8).fill(0) as number[];
    let handoffs = 0;
    let lastHolder = -1;
    // Every worker's Redlock first takes a lock of its own, so all have connected and read their
    // members before the contention starts: on a busy machine the first one ready otherwise
    // cycles alone while the others connect (a quarter of all acquisitions, once, in CI).
    const redlocks = await Promise.all(counts.map(() => warmedUp(client())));
    // 200 acquisitions (a second or so), or 8 s on a machine too busy for that: enough to judge shares.
    const stopAt = performance.now() + 8_000;
    const enough = () => counts.reduce((a, b) => a + b, 0) >= 200;
    await Promise.all(
      redlocks.map(async (redlock, worker) => {
        while (performance.now() < stopAt && !enough()) {
          const lock = await redlock.acquire(resource, 2_000, { waitTimeout: 5_000 }).catch(() => undefined);
          if (!lock) continue;
          counts[worker]!++;
          if (lastHolder !== -1 && lastHolder !== worker) handoffs++;
          lastHolder = worker;
          await sleep(1);
          await lock.release();
        }
      }),
    );
    const total = counts.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(100);
    // Peers give one worker 23–41 % and hand over to another worker a few times a second.
    expect(Math.max(...counts) / total).toBeLessThan(0.2);
    expect(handoffs / total).toBeGreaterThan(0.8);
  });
});

describe('aborting a waiter', () => {
  it('leaves nothing behind at any point of the wait: no key of its own, no place in line', async () => {
    const resource = fresh('abort-anywhere');
    const holder = await client().acquire(resource, 10_000);
    await heldOnEvery(servers.clients, resource, holder.value);
    for (const afterMs of [0, 1, 3, 10, 40]) {
      const controller = new AbortController();
      const waiting = client({ retryDelay: 5, retryJitter: 2, retryCount: Infinity }).acquire(resource, 10_000, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('stop')), afterMs);
      await expect(waiting).rejects.toThrow('stop');
      expect(await servers.valuesOf(resource)).toEqual(Array(5).fill(holder.value));
    }
    // The fire-and-forget leave commands land: within 500 ms, well before the places would have
    // lapsed by their 1 s lease.
    await eventually(async () => expect(await inLine(resource)).toEqual(Array(5).fill(0)), 500);
    await holder.release();
  });
});
