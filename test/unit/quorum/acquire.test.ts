/**
 * One acquire attempt (src/quorum/attempt.ts) on fake members and a ManualClock: the win and its
 * validity, each way to lose, the rollback on every member, and the abort.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { driftMs, ManualClock, validityMs } from '../../../src/clock/index.js';
import { attemptLock, failureOutcome, type AttemptResult } from '../../../src/quorum/attempt.js';
import { quorumOf } from '../../../src/tally.js';
import type { MemberVote } from '../../../src/quorum/votes.js';
import type { Settings } from '../../../src/options/settings.js';
import { drive, fakeMembers, FakeMember, releasedAfterAcquire, runFor, settingsOn, settle, type FakeMemberOptions } from './fake-member.js';

const waiter = { id: 'w', ticket: 0, leaseMs: 0 };

function attempt(
  members: FakeMember[],
  settings: Settings,
  ttl: number,
  options: { fencing?: boolean; signal?: AbortSignal; limitMs?: number } = {},
): Promise<AttemptResult> {
  return attemptLock({
    members,
    quorum: quorumOf(members.length),
    settings,
    resources: ['r'],
    ttl,
    deadlines: { timeoutMs: settings.nodeTimeout, limitMs: options.limitMs },
    waiter,
    fencing: options.fencing ?? false,
    signal: options.signal,
  });
}

/** The lock value the attempt sent (a lost attempt does not return it). */
const valueSent = (members: FakeMember[]): string => members[0]!.callsOf('acquire')[0]!.request.value;
const votesOf = (result: AttemptResult) => result.round.votes.map((vote) => vote.vote);

describe('attemptLock: winning', () => {
  it('wins at the quorum-th yes; the validity is ttl − elapsed − drift, counted from before the first send', async () => {
    const clock = new ManualClock(1_000);
    const members = fakeMembers(clock, 5, (i) => ({ latencyMs: i + 1 }));
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(true);
    if (!result.won) return;
    // Decided at the third yes, 3 ms in; the last two were not waited for.
    expect(votesOf(result)).toEqual(['locked', 'locked', 'locked', 'pending', 'pending']);
    expect(result.round.startedAt).toBe(1_000);
    expect(result.round.elapsedMs).toBe(3);
    expect(driftMs(10_000, 0.01)).toBe(102);
    expect(result.deadline).toBe(1_000 + 10_000 - 102);
    expect(clock.now()).toBe(1_003);
    expect(result.deadline - clock.now()).toBe(validityMs(10_000, result.round.elapsedMs, 102));
    expect(result.deadline - clock.now()).toBe(9_895);
    expect(result.fence).toBeUndefined();
    // The stragglers set the key too, and a won lock is not rolled back anywhere.
    await runFor(clock, 100);
    for (const member of members) {
      expect(member.holder('r')).toBe(result.value);
      expect(member.callsOf('release')).toHaveLength(0);
      // Every key outlives the deadline by at least the drift allowance.
      expect(member.keys.get('r')!.expiresAt - result.deadline).toBeGreaterThanOrEqual(102);
    }
  });

  it('a bigger driftFactor shortens the validity by ttl × driftFactor + 2', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 7 }));
    const result = await settle(clock, attempt(members, settingsOn(clock, { driftFactor: 0.1 }), 1_000));
    expect(result.won).toBe(true);
    if (!result.won) return;
    expect(result.deadline - clock.now()).toBe(1_000 - 7 - (100 + 2));
  });

  it('draws a fresh value for every attempt', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3);
    const values = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const result = await settle(clock, attempt(members, settingsOn(clock), 100));
      expect(result.won).toBe(true);
      if (result.won) values.add(result.value);
      await runFor(clock, 200); // the key expires
    }
    expect(values.size).toBe(5);
    for (const value of values) expect(value).toMatch(/^[A-Za-z0-9_-]{22}$/); // 128 bits, base64url
  });
});

describe('attemptLock: losing, and why', () => {
  it("'taken': another owner holds a majority; its keys survive our rollback", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: i + 1 }));
    members[0]!.hold('r', 'other', 5_000);
    members[1]!.hold('r', 'other', 5_000);
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.outcome).toBe('taken');
    expect(result.round.votes[0]).toMatchObject({ vote: 'taken', heldForMs: 4_999 });
    expect(result.round.votes[1]).toMatchObject({ vote: 'taken', heldForMs: 4_998 });
    await settle(clock, result.rollback);
    await runFor(clock, 100);
    expect(members.map((member) => member.holder('r'))).toEqual(['other', 'other', undefined]);
  });

  it("'unavailable': a majority times out or fails; silent members cost nodeTimeout, no more", async () => {
    const clock = new ManualClock(0);
    const members = [
      new FakeMember(clock, 'down', { failure: 'down' }),
      new FakeMember(clock, 'error', { failure: 'error', latencyMs: 2 }),
      new FakeMember(clock, 'up', { latencyMs: 1 }),
    ];
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.outcome).toBe('unavailable');
    expect(votesOf(result)).toEqual(['timeout', 'error', 'locked']);
    expect(result.round.votes[1]!.error?.message).toMatch(/connection refused/);
    expect(result.round.elapsedMs).toBe(50);
    expect(result.validityMs).toBe(10_000 - 50 - 102);
  });

  it("'quarantined': members younger than the quarantine set the key but do not count, until the quarantine is off", async () => {
    const clock = new ManualClock(0);
    const young = (i: number): FakeMemberOptions => ({ latencyMs: i < 2 ? 2 : 1, quarantineLeftMs: i < 2 ? 30_000 : 0 });
    const members = fakeMembers(clock, 3, young);
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.outcome).toBe('quarantined');
    expect(result.round.votes[0]).toMatchObject({ vote: 'quarantined', quarantinedForMs: 29_998 });
    expect(votesOf(result)).toEqual(['quarantined', 'quarantined', 'locked']);
    // The quarantine off (unsafe, for demonstrations): the same members count.
    const clock2 = new ManualClock(0);
    const result2 = await settle(clock2, attempt(fakeMembers(clock2, 3, young), settingsOn(clock2, { quarantine: false }), 10_000));
    expect(result2.won).toBe(true);
  });

  it("'quarantined': members that must not count (notCounting) never make a quorum", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: 1, notCounting: i < 2 ? 'may evict lock keys' : undefined }));
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.outcome).toBe('quarantined');
    expect(result.round.votes[0]).toMatchObject({ vote: 'quarantined', notCounting: 'may evict lock keys' });
  });

  it("'expired': a quorum, but only after the validity ran out", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 40 }));
    // ttl 40: drift 3, so 40 ms of latency leaves -3 ms.
    const result = await settle(clock, attempt(members, settingsOn(clock), 40));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.round.won).toBe(true);
    expect(result.outcome).toBe('expired');
    expect(result.validityMs).toBe(-3);
    for (const member of members) expect(releasedAfterAcquire(member, valueSent(members))).toBe(true);
  });

  it('failureOutcome: taken only when the refusals alone rule out a quorum, then quarantined, else unavailable; a won round is expired', () => {
    const votes = (...answers: MemberVote['vote'][]): MemberVote[] => answers.map((vote, i) => ({ member: `m${i}`, vote, ms: 0 }));
    expect(failureOutcome(false, votes('queued', 'taken', 'timeout'))).toBe('taken');
    expect(failureOutcome(false, votes('taken', 'taken', 'locked', 'error', 'locked'))).toBe('unavailable');
    expect(failureOutcome(false, votes('taken', 'taken', 'taken', 'error', 'locked'))).toBe('taken');
    // One member holding another's key (a stale key, an attempt in progress) while the others are
    // down is an outage, not "held by another": tryAcquire must not return null for it.
    expect(failureOutcome(false, votes('taken', 'error', 'error'))).toBe('unavailable');
    expect(failureOutcome(false, votes('queued', 'quarantined', 'timeout'))).toBe('quarantined');
    expect(failureOutcome(false, votes('quarantined', 'timeout', 'locked'))).toBe('quarantined');
    expect(failureOutcome(false, votes('timeout', 'error', 'pending'))).toBe('unavailable');
    expect(failureOutcome(true, votes('locked', 'locked', 'taken'))).toBe('expired');
  });
});

describe('attemptLock: the rollback', () => {
  it('a failed attempt releases on every member that did not refuse it: those that answered yes, failed, timed out, or were not waited for', async () => {
    const clock = new ManualClock(0);
    const members = [
      new FakeMember(clock, 'taken-1', { latencyMs: 1 }),
      new FakeMember(clock, 'taken-2', { latencyMs: 2 }),
      new FakeMember(clock, 'error', { latencyMs: 3, failure: 'error' }),
      new FakeMember(clock, 'down', { failure: 'down' }),
      new FakeMember(clock, 'slow', { failure: 'slow', slowMs: 500 }),
      new FakeMember(clock, 'mute', { latencyMs: 1, failure: 'mute' }), // runs our SET; its reply is lost
    ];
    members[0]!.hold('r', 'other', 60_000);
    members[1]!.hold('r', 'other', 60_000);
    const result = await settle(clock, attempt(members, settingsOn(clock), 10_000));
    expect(result.won).toBe(false);
    if (result.won) return;
    // 3 no's of 6: a quorum (4) is out of reach at 3 ms, before three members answered.
    expect(votesOf(result)).toEqual(['taken', 'taken', 'error', 'pending', 'pending', 'pending']);
    const value = valueSent(members);
    // The two that refused hold nothing of the attempt: no release for them.
    for (const member of members.slice(0, 2)) expect(member.callsOf('release'), member.id).toHaveLength(0);
    for (const member of members.slice(2)) expect(releasedAfterAcquire(member, value), member.id).toBe(true);
    // The rollback resolves, never rejects, with members down.
    expect((await drive(clock, result.rollback)).ok).toBe(true);
    expect(clock.now()).toBeLessThanOrEqual(3 + 50 + 1);
    // The slow member sets our key at 500 ms, and deletes it right after: the release queued behind.
    await runFor(clock, 1_000);
    expect(members.map((member) => member.holder('r'))).toEqual(['other', 'other', undefined, undefined, undefined, undefined]);
    expect(members[4]!.keys.has('r')).toBe(false);
  });

  it('an abort mid-round rolls back on every member and rejects with the reason', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: 10 * (i + 1) }));
    const controller = new AbortController();
    const reason = new Error('shutting down');
    clock.setTimer(() => controller.abort(reason), 15); // after one yes, before the quorum
    const outcome = await drive(clock, attempt(members, settingsOn(clock), 10_000, { signal: controller.signal }));
    expect(outcome).toEqual({ ok: false, error: reason });
    const value = valueSent(members);
    for (const member of members) expect(releasedAfterAcquire(member, value)).toBe(true);
    await runFor(clock, 200);
    for (const member of members) expect(member.holder('r')).toBeUndefined();
  });

  it('an abort during the fence round rolls back too; a signal aborted before the start sends nothing that stays', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 10 }));
    const controller = new AbortController();
    clock.setTimer(() => controller.abort('stop'), 15); // the fence round went out at 10
    const outcome = await drive(clock, attempt(members, settingsOn(clock), 10_000, { fencing: true, signal: controller.signal }));
    expect(outcome).toEqual({ ok: false, error: 'stop' });
    for (const member of members) expect(member.callsOf('fence').map((call) => call.mode)).toEqual(['propose']);
    await runFor(clock, 200);
    for (const member of members) expect(member.holder('r')).toBeUndefined();

    const clock2 = new ManualClock(0);
    const members2 = fakeMembers(clock2, 3, () => ({ latencyMs: 5 }));
    const already = AbortSignal.abort(new Error('gone already'));
    const outcome2 = await drive(clock2, attempt(members2, settingsOn(clock2), 10_000, { signal: already }));
    expect(outcome2.ok).toBe(false);
    expect((outcome2 as { error: Error }).error.message).toBe('gone already');
    await runFor(clock2, 100);
    for (const member of members2) {
      expect(releasedAfterAcquire(member, valueSent(members2))).toBe(true);
      expect(member.holder('r')).toBeUndefined();
    }
  });
});

describe('attemptLock: a property over random members', () => {
  type Kind = 'locked' | 'taken' | 'quarantined' | 'notCounting' | 'down' | 'error' | 'mute';
  const memberArb = fc.record({
    kind: fc.constantFrom<Kind>('locked', 'locked', 'locked', 'locked', 'locked', 'taken', 'quarantined', 'notCounting', 'down', 'error', 'mute'),
    // The edges of the deadline (nodeTimeout 50) come up often.
    latencyMs: fc.oneof(fc.integer({ min: 0, max: 80 }), fc.constantFrom(0, 49, 50, 51)),
  });

  it('wins iff a quorum of counting members said locked within nodeTimeout and validity is left; otherwise every member that did not refuse got a release', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(memberArb, { minLength: 1, maxLength: 7 }), fc.integer({ min: 5, max: 200 }), async (specs, ttl) => {
        const clock = new ManualClock(0);
        const settings = settingsOn(clock);
        const members = specs.map(({ kind, latencyMs }, i) => {
          const member = new FakeMember(clock, `m${i}`, {
            latencyMs,
            failure: kind === 'down' || kind === 'error' || kind === 'mute' ? kind : undefined,
            quarantineLeftMs: kind === 'quarantined' ? 30_000 : 0,
            notCounting: kind === 'notCounting' ? 'not a master' : undefined,
          });
          if (kind === 'taken') member.hold('r', 'other', 60_000);
          return member;
        });
        const result = await settle(clock, attempt(members, settings, ttl));

        // The model: yes answers that arrive by the deadline (an answer at the deadline is read
        // before it is acted on), the quorum-th of them deciding the round.
        const yes = specs
          .filter(({ kind, latencyMs }) => kind === 'locked' && latencyMs <= settings.nodeTimeout)
          .map(({ latencyMs }) => latencyMs)
          .sort((a, b) => a - b);
        const quorum = quorumOf(specs.length);
        const roundWon = yes.length >= quorum;
        const expectWin = roundWon && ttl - driftMs(ttl, settings.driftFactor) - yes[quorum - 1]! > 0;
        expect(result.round.won).toBe(roundWon);
        expect(result.won).toBe(expectWin);
        if (result.won) {
          expect(result.deadline - clock.now()).toBe(ttl - yes[quorum - 1]! - driftMs(ttl, settings.driftFactor));
          for (const member of members) expect(member.callsOf('release')).toHaveLength(0);
          return;
        }
        expect(result.outcome).toBe(roundWon ? 'expired' : failureOutcome(false, result.round.votes));
        const value = valueSent(members);
        // Released on each member, except one whose refusal the round heard (it holds nothing of ours).
        result.round.votes.forEach((vote, index) => {
          const refused = vote.vote === 'taken' || vote.vote === 'queued';
          expect(releasedAfterAcquire(members[index]!, value)).toBe(!refused);
        });
        // And none keeps our key once every call ran (down members ran none).
        await drive(clock, result.rollback);
        await runFor(clock, 500);
        for (const member of members) expect(member.holder('r')).not.toBe(value);
      }),
      { numRuns: 150 },
    );
  });
});
