/**
 * The attempt loop (src/quorum/acquire-loop.ts) on fake members and a ManualClock: retryCount,
 * the wait budget (no round outlives it), why it stopped, the jittered delays, the abort. The
 * release announcements are stood in for by a real Watch (src/waiting/notifications.ts) that no
 * member ever announces to: every wait ends by its timer on the clock.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { driftMs, ManualClock } from '../../../src/clock/index.js';
import { LockAcquireError } from '../../../src/errors.js';
import type { AttemptPolicy, Settings } from '../../../src/options/settings.js';
import { acquireWithRetries } from '../../../src/quorum/acquire-loop.js';
import { retryDelayMs } from '../../../src/quorum/wait.js';
import { Watch, type Notifications } from '../../../src/waiting/notifications.js';
import { drive, fakeMembers, FakeMember, releasedAfterAcquire, rolledBack, settingsOn, type FakeMemberOptions } from './fake-member.js';
import { sharedName } from '../../../src/store/protocol.js';
import { quorumOf } from '../../../src/tally.js';
import { serverFacts, whyNotCounting } from '../../../src/store/server.js';

/** Notifications that subscribe to nothing: watch() hands out a Watch, ready after `readyMs`, that nobody announces to. */
function quietNotifications(clock: ManualClock, memberCount: number, readyMs = 0, listening = false) {
  const watched: string[] = [];
  let closed = 0;
  const notifications = {
    listener: 'listener',
    listening,
    watch(waiterId: string): Watch {
      watched.push(waiterId);
      const watch = new Watch(memberCount, () => closed++);
      // As Notifications.watch: listening already, there is nothing to wait for.
      if (!listening) watch.ready = clock.sleep(readyMs);
      return watch;
    },
  } as unknown as Notifications;
  return { notifications, watched, closed: () => closed };
}

const policyOf = (overrides: Partial<AttemptPolicy>): AttemptPolicy => ({
  fencing: false,
  shared: false,
  retryCount: 3,
  retryDelay: 100,
  retryJitter: 0,
  waitTimeout: 10_000,
  signal: undefined,
  ...overrides,
});

function run(clock: ManualClock, members: FakeMember[], policy: AttemptPolicy, settings: Settings = settingsOn(clock), ttl = 10_000, readyMs = 0) {
  const { notifications, watched, closed } = quietNotifications(clock, members.length, readyMs);
  const begin = clock.now();
  const outcome = drive(clock, acquireWithRetries({ members, quorum: quorumOf(members.length), settings, resources: ['r'], ttl, policy, notifications }));
  return { outcome, watched, closed, begin };
}

/** When each attempt reached member 0, from the start. */
const attemptTimes = (member: FakeMember, begin = 0) => member.callsOf('acquire').map((call) => call.at - begin);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('acquireWithRetries: retries', () => {
  it("makes retryCount + 1 attempts, then rejects with 'retries exhausted'; the first outside the line, the rest in it", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    const { outcome, watched, closed } = run(clock, members, policyOf({ retryCount: 3 }));
    const result = await outcome;
    expect(result.ok).toBe(false);
    const error = (result as { error: LockAcquireError }).error;
    expect(error).toBeInstanceOf(LockAcquireError);
    expect(error.stoppedBecause).toBe('retries exhausted');
    expect(error.outcome).toBe('taken');
    expect(error.attempts).toHaveLength(4);
    // The second attempt right after the refusal (once subscribed), then one delay after each.
    expect(error.attempts.map((attempt) => attempt.startedMs)).toEqual([0, 1, 102, 203]);
    for (const member of members) {
      const requests = member.callsOf('acquire').map((call) => call.request);
      expect(requests).toHaveLength(4);
      expect(requests[0]!.waiter.leaseMs).toBe(0);
      for (const request of requests.slice(1)) {
        expect(request.waiter.leaseMs).toBeGreaterThan(0);
        expect(request.waiter).toMatchObject({ id: requests[0]!.waiter.id, ticket: requests[0]!.waiter.ticket });
      }
      // Every attempt rolled back where it did not hear a refusal; the line left on the way out;
      // the other owner untouched.
      for (const request of requests) expect(rolledBack(member, request.value)).toBe(true);
      expect(member.callsOf('leave').map((call) => call.waiterId)).toEqual([requests[0]!.waiter.id]);
      expect(member.holder('r')).toBe('other');
    }
    // A member whose refusal the round heard got no release (it holds nothing of the attempt).
    error.attempts.forEach((attempt, k) =>
      attempt.votes.forEach((vote, i) => {
        const { value } = members[i]!.callsOf('acquire')[k]!.request;
        expect(releasedAfterAcquire(members[i]!, value)).toBe(vote.vote !== 'taken' && vote.vote !== 'queued');
      }),
    );
    expect(watched).toHaveLength(1);
    expect(closed()).toBe(1);
  });

  it('a Redlock already listening (it waited before): the first attempt takes its place in line, and the next comes after a delay', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    const { notifications, watched } = quietNotifications(clock, members.length, 0, true);
    const outcome = drive(
      clock,
      acquireWithRetries({
        members,
        quorum: quorumOf(members.length),
        settings: settingsOn(clock),
        resources: ['r'],
        ttl: 10_000,
        policy: policyOf({ retryCount: 2 }),
        notifications,
      }),
    );
    const error = ((await outcome) as { error: LockAcquireError }).error;
    // Watched from the start; no immediate second attempt (the subscription was already there).
    expect(watched).toHaveLength(1);
    expect(error.attempts.map((attempt) => attempt.startedMs)).toEqual([0, 101, 202]);
    for (const member of members) {
      const requests = member.callsOf('acquire').map((call) => call.request);
      for (const request of requests) expect(request.waiter.leaseMs).toBeGreaterThan(0);
      expect(member.callsOf('leave')).toHaveLength(1);
    }
  });

  it('subscriptions slower than nodeTimeout: the second attempt takes its place in line meanwhile, the third comes once they are in place, not a delay later', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    const settings = settingsOn(clock);
    const { outcome } = run(clock, members, policyOf({ retryCount: 3, retryDelay: 1_000 }), settings, 10_000, 500);
    const error = ((await outcome) as { error: LockAcquireError }).error;
    const [first, second, third, fourth] = error.attempts.map((attempt) => attempt.startedMs);
    expect(first).toBe(0);
    expect(second).toBe(1 + settings.nodeTimeout); // the refusal, then nodeTimeout waiting for the subscriptions
    // Subscribed at 500 (the drive's next step): a release between the second attempt and the SUBSCRIBE told nobody.
    expect([500, 501]).toContain(third);
    expect(fourth).toBe(third! + 1 + 1_000); // listening now: the timed retry
  });

  it('subscriptions slower than nodeTimeout, third in line: no attempt when they are in place (a release tells the head only), the timed retry', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    // Two waiters ahead in line on every member: earlier tickets, long leases. (Second in line
    // counts as first: the head is often the holder, who keeps its place: wait.ts, firstInLine.)
    for (const id of ['ahead-1', 'ahead-2']) {
      const ahead = { value: `${id}-value`, ttlMs: 10_000, waiter: { id, ticket: -1, leaseMs: 60_000 }, quarantineMs: 0, fencing: false };
      await Promise.all(members.map((member) => drive(clock, member.acquire(['r'], ahead))));
    }
    const settings = settingsOn(clock);
    const { outcome } = run(clock, members, policyOf({ retryCount: 3, retryDelay: 1_000 }), settings, 10_000, 500);
    const error = ((await outcome) as { error: LockAcquireError }).error;
    const [first, second, third] = error.attempts.map((attempt) => attempt.startedMs);
    expect(first).toBe(0);
    expect(second).toBe(1 + settings.nodeTimeout);
    expect(error.attempts[1]!.votes.filter((vote) => vote.place === 2)).toHaveLength(2); // the third not waited for: the round cannot win by then
    expect(third).toBe(second! + 1 + 1_000);
  });

  it('subscriptions slower than nodeTimeout, a reader third in line: the attempt when they are in place (a release tells every reader up to the first writer)', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    for (const id of ['ahead-1', 'ahead-2']) {
      const ahead = {
        value: sharedName(`${id}-value`),
        ttlMs: 10_000,
        waiter: { id: sharedName(id), ticket: -1, leaseMs: 60_000 },
        quarantineMs: 0,
        fencing: false,
      };
      await Promise.all(members.map((member) => drive(clock, member.acquire(['r'], ahead))));
    }
    const settings = settingsOn(clock);
    const { outcome } = run(clock, members, policyOf({ retryCount: 3, retryDelay: 1_000, shared: true }), settings, 10_000, 500);
    const error = ((await outcome) as { error: LockAcquireError }).error;
    const [, second, third] = error.attempts.map((attempt) => attempt.startedMs);
    expect(second).toBe(1 + settings.nodeTimeout);
    expect(error.attempts[1]!.votes.filter((vote) => vote.place === 2)).toHaveLength(2);
    expect([500, 501]).toContain(third);
  });

  it('retryCount 0: one attempt, no watch, no line', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    const { outcome, watched } = run(clock, members, policyOf({ retryCount: 0 }));
    const error = ((await outcome) as { error: LockAcquireError }).error;
    expect(error.attempts).toHaveLength(1);
    expect(error.stoppedBecause).toBe('retries exhausted');
    expect(watched).toHaveLength(0);
    for (const member of members) expect(member.callsOf('leave')).toHaveLength(0);
  });

  it('wins once the holder’s keys expire, keeps its place in line for its release to leave (no leave round), and reports the attempt’s deadline', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 250);
    const { outcome } = run(clock, members, policyOf({ retryCount: 10 }));
    const result = await outcome;
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    // Attempts at 0, 1, 102, 203 are refused. From the second on it is first in line (the real
    // acquire.lua names its place), so the refusal at 204 (the key expires at 250: heldForMs 46)
    // brings the next attempt at 251 rather than a whole delay later (nextTryMs); it finds the keys expired.
    expect(attemptTimes(members[0]!)).toEqual([0, 1, 102, 203, 251]);
    expect(result.value.deadline).toBe(251 + 10_000 - driftMs(10_000, 0.01));
    const waiterId = members[0]!.callsOf('acquire')[0]!.request.waiter.id;
    expect(result.value.inLineAs).toBe(waiterId);
    for (const member of members) {
      expect(member.holder('r')).toBe(result.value.value);
      expect(member.callsOf('leave')).toHaveLength(0);
    }
  });
});

describe('acquireWithRetries: the wait budget', () => {
  it("stops with 'wait budget exhausted' when no whole nodeTimeout is left for a retry; no round outlives the budget", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ failure: 'down' }));
    // nodeTimeout 50. Rounds 0–50, 50–100 (no delay: the retry right after subscribing), then a
    // 10 ms delay: 110–160; at 170 nothing is left.
    const { outcome } = run(clock, members, policyOf({ retryCount: Infinity, retryDelay: 10, waitTimeout: 170 }));
    const error = ((await outcome) as { error: LockAcquireError }).error;
    expect(error.stoppedBecause).toBe('wait budget exhausted');
    expect(error.outcome).toBe('unavailable');
    expect(error.attempts.map(({ startedMs, elapsedMs }) => [startedMs, elapsedMs])).toEqual([
      [0, 50],
      [50, 50],
      [110, 50],
    ]);
    expect(error.elapsedMs).toBe(170);
    // With 30 ms left at 110 (budget 140), a retry would be cut short: none is made.
    const clock2 = new ManualClock(0);
    const members2 = fakeMembers(clock2, 3, () => ({ failure: 'down' }));
    const error2 = ((await run(clock2, members2, policyOf({ retryCount: Infinity, retryDelay: 10, waitTimeout: 140 })).outcome) as { error: LockAcquireError })
      .error;
    expect(error2.stoppedBecause).toBe('wait budget exhausted');
    expect(error2.attempts).toHaveLength(2);
    expect(error2.elapsedMs).toBe(110);
  });

  it('a budget shorter than nodeTimeout cuts the first round at the budget', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ failure: 'down' }));
    const error = ((await run(clock, members, policyOf({ waitTimeout: 30 })).outcome) as { error: LockAcquireError }).error;
    expect(error.attempts).toEqual([expect.objectContaining({ startedMs: 0, elapsedMs: 30 })]);
    expect(error.stoppedBecause).toBe('wait budget exhausted');
  });

  it('a member still answering our earlier calls is waited for past nodeTimeout, but never past the budget', async () => {
    const outcomeWith = async (waitTimeout: number) => {
      const clock = new ManualClock(0);
      // Each call takes 60 ms, more than nodeTimeout (50): the first attempt times out at 50, and
      // its answers, read at 60 during the second attempt, show the members are alive.
      const members = fakeMembers(clock, 3, () => ({ latencyMs: 60 }));
      return run(clock, members, policyOf({ retryCount: 5, waitTimeout })).outcome;
    };
    // A budget of 1 s: the second attempt (from 50) waits for its answers at 110, and wins.
    const roomy = await outcomeWith(1_000);
    expect(roomy.ok).toBe(true);
    if (roomy.ok) expect(roomy.value.round).toMatchObject({ startedAt: 50, elapsedMs: 60 });
    // A budget of 100 ms: the second attempt is cut at 100, its members not waited for (no outage).
    const tight = await outcomeWith(100);
    expect(tight.ok).toBe(false);
    const error = (tight as { error: LockAcquireError }).error;
    expect(error.stoppedBecause).toBe('wait budget exhausted');
    expect(error.attempts.map(({ startedMs, elapsedMs }) => startedMs + elapsedMs)).toEqual([50, 100]);
    expect(error.attempts[1]!.votes.map((vote) => vote.vote)).toEqual(['pending', 'pending', 'pending']);
  });

  type Kind = 'free' | 'held' | 'down' | 'error' | 'slow';
  it('property: every round ends within the budget; the reason to stop matches the attempts made', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            kind: fc.constantFrom<Kind>('free', 'held', 'held', 'down', 'error', 'slow'),
            latencyMs: fc.integer({ min: 0, max: 70 }),
            heldMs: fc.integer({ min: 1, max: 2_000 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        fc.record({
          retryCount: fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constant(Infinity)),
          retryDelay: fc.integer({ min: 0, max: 300 }),
          retryJitter: fc.integer({ min: 0, max: 150 }),
          waitTimeout: fc.integer({ min: 1, max: 1_500 }),
        }),
        fc.integer({ min: 60, max: 5_000 }),
        // How long subscribing takes (a fresh subscriber connection): the first wait is bounded by nodeTimeout.
        fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 200 })),
        async (specs, policy, ttl, readyMs) => {
          const clock = new ManualClock(0);
          const settings = settingsOn(clock);
          const members = specs.map(({ kind, latencyMs, heldMs }, i) => {
            const options: FakeMemberOptions = { latencyMs, failure: kind === 'down' || kind === 'error' || kind === 'slow' ? kind : undefined, slowMs: 40 };
            const member = new FakeMember(clock, `m${i}`, options);
            if (kind === 'held') member.hold('r', 'other', heldMs);
            return member;
          });
          const { outcome } = run(clock, members, policyOf(policy), settings, ttl, readyMs);
          const result = await outcome;
          const nodeTimeout = settings.nodeTimeout;
          if (result.ok) {
            // Won within the budget, with validity left.
            expect(clock.now()).toBeLessThanOrEqual(policy.waitTimeout);
            expect(result.value.deadline).toBeGreaterThan(clock.now());
            return;
          }
          const error = result.error as LockAcquireError;
          expect(error).toBeInstanceOf(LockAcquireError);
          for (const attempt of error.attempts) {
            expect(attempt.startedMs + attempt.elapsedMs).toBeLessThanOrEqual(policy.waitTimeout);
            // A retry starts only with a whole nodeTimeout left.
            if (attempt.attempt > 1) expect(policy.waitTimeout - attempt.startedMs).toBeGreaterThanOrEqual(nodeTimeout);
          }
          expect(error.attempts.length).toBeLessThanOrEqual(policy.retryCount + 1);
          expect(error.stoppedBecause).toBe(error.attempts.length === policy.retryCount + 1 ? 'retries exhausted' : 'wait budget exhausted');
          // README: every acquire ends within waitTimeout plus one rollback (≤ nodeTimeout).
          expect(error.elapsedMs).toBeLessThanOrEqual(policy.waitTimeout + nodeTimeout);
          // Every attempt was rolled back on every member that did not refuse it.
          for (const member of members) for (const call of member.callsOf('acquire')) expect(rolledBack(member, call.request.value)).toBe(true);
        },
      ),
      { numRuns: 120 },
    );
  });
});

describe('retryDelayMs: the jitter', () => {
  it('is retryDelay ± retryJitter, never negative', () => {
    const policy = { retryDelay: 200, retryJitter: 100 };
    expect(retryDelayMs(policy, () => 0)).toBe(100);
    expect(retryDelayMs(policy, () => 0.5)).toBe(200);
    expect(retryDelayMs(policy, () => 0.999_999)).toBeCloseTo(300, 3);
    expect(retryDelayMs({ retryDelay: 10, retryJitter: 50 }, () => 0)).toBe(0);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (retryDelay, retryJitter, r) => {
          const delay = retryDelayMs({ retryDelay, retryJitter }, () => r);
          expect(delay).toBeGreaterThanOrEqual(Math.max(0, retryDelay - retryJitter));
          expect(delay).toBeLessThanOrEqual(retryDelay + retryJitter);
        },
      ),
    );
  });

  it('spaces the loop’s retries by retryDelay ± retryJitter', async () => {
    const gaps = async (random?: () => number) => {
      if (random) vi.spyOn(Math, 'random').mockImplementation(random);
      const clock = new ManualClock(0);
      const members = fakeMembers(clock, 3);
      for (const member of members) member.hold('r', 'other', 60_000);
      await run(clock, members, policyOf({ retryCount: 12, retryDelay: 100, retryJitter: 50 })).outcome;
      vi.restoreAllMocks();
      const times = attemptTimes(members[0]!);
      expect(times).toHaveLength(13);
      // From the third attempt on, each comes one jittered delay after the one before (rounds take 0 ms here).
      return times.slice(2).map((at, i) => at - times[i + 1]!);
    };
    for (const gap of await gaps()) {
      expect(gap).toBeGreaterThanOrEqual(50);
      expect(gap).toBeLessThanOrEqual(150);
    }
    expect(new Set(await gaps(() => 0))).toEqual(new Set([50]));
    for (const gap of await gaps(() => 0.999_999)) expect(gap).toBeCloseTo(150, 3);
  });
});

describe('acquireWithRetries: the signal', () => {
  it('an abort while waiting between attempts rejects with the reason, after the last rollback; no attempt follows', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1 }));
    for (const member of members) member.hold('r', 'other', 60_000);
    const controller = new AbortController();
    const reason = new Error('caller gave up');
    clock.setTimer(() => controller.abort(reason), 50); // while waiting for the third attempt (at 102)
    const { outcome, closed } = run(clock, members, policyOf({ retryCount: 10, signal: controller.signal }));
    expect(await outcome).toEqual({ ok: false, error: reason });
    for (const member of members) {
      const acquires = member.callsOf('acquire');
      expect(acquires).toHaveLength(2);
      for (const call of acquires) expect(rolledBack(member, call.request.value)).toBe(true);
      expect(member.callsOf('leave')).toHaveLength(1); // it had joined the line
    }
    expect(closed()).toBe(1);
    await drive(clock, clock.sleep(1_000));
    expect(members[0]!.callsOf('acquire')).toHaveLength(2);
  });
});

describe('acquireWithRetries: the message of members that never count', () => {
  // What the server watch makes of a hosted service's INFO: no replication section, so no role.
  const hostedInfo = '# Server\r\nredis_version:7.2.4\r\nrun_id:0f5c6a3e9e1b4d2c8a7f6e5d4c3b2a1908f7e6d5\r\n# Memory\r\nmaxmemory:0\r\n';
  const noRole = whyNotCounting(serverFacts(hostedInfo))!;

  it('names the reason (an INFO without role) and does not suggest trust, which cannot help', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: 1, notCounting: i < 2 ? noRole : undefined }));
    const result = await run(clock, members, policyOf({ retryCount: 0 })).outcome;
    expect(result.ok).toBe(false);
    const error = (result as { error: LockAcquireError }).error;
    expect(error.outcome).toBe('quarantined');
    expect(error.message).toContain(`2 not counting (${noRole})`);
    expect(error.message).toMatch(/INFO shows no role/);
    expect(error.message).not.toMatch(/trustMembers|declare them trusted/);
  });

  it('still suggests trust when members are in their restart quarantine', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: 1, quarantineLeftMs: i < 2 ? 30_000 : 0 }));
    const result = await run(clock, members, policyOf({ retryCount: 0 })).outcome;
    const error = (result as { error: LockAcquireError }).error;
    expect(error.outcome).toBe('quarantined');
    expect(error.message).toMatch(/2 quarantined.*redlock\.trustMembers\(\)/);
    expect(error.message).not.toMatch(/not counting/);
  });
});
