/**
 * Extend (src/quorum/extend.ts) and release (src/quorum/release.ts) on fake members that really
 * keep and expire keys: the extension's deadline and its failures, and a release that settles at
 * a quorum.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock/index.js';
import { decideExtension, extendOn, type ExtendAnswer } from '../../../src/quorum/extend.js';
import { releaseOn } from '../../../src/quorum/release.js';
import type { RoundResult } from '../../../src/quorum/round.js';
import { fakeMembers, runFor, settingsOn, settle, type FakeMemberOptions } from './fake-member.js';
import { quorumOf } from '../../../src/tally.js';

/** Members that hold resource r with value 'v' for `heldMs`. */
function holding(clock: ManualClock, count: number, optionsOf: (i: number) => FakeMemberOptions, heldMs = 1_000) {
  const members = fakeMembers(clock, count, optionsOf);
  for (const member of members) member.hold('r', 'v', heldMs);
  return members;
}

describe('extendOn', () => {
  it('extends at a quorum: the new deadline is ttl − drift from the round start, and the keys live ttl more', async () => {
    const clock = new ManualClock(1_000);
    const members = holding(clock, 3, (i) => ({ latencyMs: i + 1 }));
    const result = await settle(
      clock,
      extendOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', ttl: 10_000, previousDeadline: 1_900 }),
    );
    expect(result.extended).toBe(true);
    expect(result.deadline).toBe(1_000 + 10_000 - 102);
    expect(result.round.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'pending']);
    await runFor(clock, 10);
    for (const [i, member] of members.entries()) expect(member.keys.get('r')!.expiresAt).toBe(1_000 + i + 1 + 10_000);
  });

  it("'lapsed': a quorum that comes at the previous deadline does not count, although the members extended", async () => {
    const clock = new ManualClock(0);
    const members = holding(clock, 3, () => ({ latencyMs: 30 }));
    const result = await settle(
      clock,
      extendOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', ttl: 10_000, previousDeadline: 30 }),
    );
    expect(result).toMatchObject({ extended: false, failure: 'lapsed', lostBecause: 'lapsed', deadline: 30 });
    expect(result.round.won).toBe(true);
  });

  it("'lapsed' is judged at the quorum-th counting yes: a member that must not count is no part of it", () => {
    const round: RoundResult<ExtendAnswer> = {
      won: true,
      votes: [
        { member: 'm0', vote: 'locked', ms: 5, notCounting: 'not a master' },
        { member: 'm1', vote: 'locked', ms: 10 },
        { member: 'm2', vote: 'locked', ms: 60 },
      ],
      startedAt: 1_000,
      elapsedMs: 60,
    };
    expect(decideExtension(round, 1_050, 10_898, 1_060)).toMatchObject({ extended: false, failure: 'lapsed' });
    expect(decideExtension(round, 1_061, 10_898, 1_060)).toMatchObject({ extended: true, deadline: 10_898 });
  });

  it("'unavailable' keeps the lock: too few answers, none saying it is not ours", async () => {
    const clock = new ManualClock(0);
    const members = holding(clock, 3, (i) => (i === 0 ? { latencyMs: 1 } : i === 1 ? { failure: 'down' } : { failure: 'error', latencyMs: 2 }));
    const result = await settle(
      clock,
      extendOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', ttl: 500, previousDeadline: 900 }),
    );
    expect(result).toMatchObject({ extended: false, failure: 'unavailable', lostBecause: undefined });
    expect(result.round.votes.map((vote) => vote.vote)).toEqual(['locked', 'timeout', 'error']);
    // What holds: the shorter of the previous deadline and this round's (m0 now expires at 501).
    expect(result.deadline).toBe(500 - 7);
    expect(members[0]!.holder('r')).toBe('v');
  });

  it("'lost' when the members saying gone or taken alone put a quorum out of reach; taken is told from gone", async () => {
    const lost = async (setup: (members: ReturnType<typeof holding>) => void) => {
      const clock = new ManualClock(0);
      const members = holding(clock, 3, (i) => ({ latencyMs: i + 1 }));
      setup(members);
      await runFor(clock, 200); // keys held for 100 ms are gone by now
      const result = await settle(
        clock,
        extendOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', ttl: 10_000, previousDeadline: 900 }),
      );
      return result.extended ? 'extended' : `${result.failure}/${result.lostBecause}`;
    };
    expect(await lost((m) => (m[0]!.hold('r', 'v', 100), m[1]!.hold('r', 'v', 100)))).toBe('lost/gone');
    expect(await lost((m) => (m[0]!.hold('r', 'v', 100), m[1]!.hold('r', 'other', 1_000)))).toBe('lost/taken');
    expect(await lost((m) => m[0]!.hold('r', 'v', 100))).toBe('extended');
  });
});

describe('releaseOn', () => {
  it("settle 'quorum' resolves once a quorum confirmed, without waiting for the rest; they still run it", async () => {
    const clock = new ManualClock(0);
    const members = holding(clock, 5, (i) => (i < 3 ? { latencyMs: i + 1 } : i === 3 ? { latencyMs: 100 } : { failure: 'down' }), 60_000);
    const round = await settle(
      clock,
      releaseOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', settle: 'quorum' }),
    );
    expect(round.won).toBe(true);
    expect(round.elapsedMs).toBe(3);
    expect(round.votes.map((vote) => vote.vote)).toEqual(['released', 'released', 'released', 'pending', 'pending']);
    await runFor(clock, 200);
    expect(members.map((member) => member.holder('r'))).toEqual([undefined, undefined, undefined, undefined, 'v']);
  });

  it("'absent' counts toward the quorum: nothing of ours left there is as good as deleted", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, (i) => (i === 2 ? { failure: 'down' } : { latencyMs: i + 1 }));
    members[0]!.hold('r', 'v', 1_000);
    members[1]!.hold('r', 'other', 1_000); // another owner's key is never deleted
    const round = await settle(
      clock,
      releaseOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', settle: 'quorum' }),
    );
    expect(round.won).toBe(true);
    expect(round.votes.map((vote) => vote.vote)).toEqual(['released', 'absent', 'pending']);
    expect(members[1]!.holder('r')).toBe('other');
  });

  it("settle 'all' hears from every member, up to nodeTimeout", async () => {
    const clock = new ManualClock(0);
    const members = holding(clock, 3, (i) => (i === 2 ? { failure: 'down' } : { latencyMs: 1 }));
    const round = await settle(
      clock,
      releaseOn({ members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', settle: 'all' }),
    );
    expect(round.votes.map((vote) => vote.vote)).toEqual(['released', 'released', 'timeout']);
    expect(round.elapsedMs).toBe(50);
  });
});
