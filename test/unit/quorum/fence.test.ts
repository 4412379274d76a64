/**
 * Fencing tokens (src/quorum/fence.ts) on fake members: one more than every counter read, over a
 * quorum of trusted readings; unfenced when too few members are trusted; proposed again when
 * outbid; the sync only to epochs known before the winning round.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock/index.js';
import { attemptLock, type AttemptResult } from '../../../src/quorum/attempt.js';
import { fenceToken } from '../../../src/quorum/fence.js';
import { readersKeyOf } from '../../../src/store/keys.js';
import type { Settings } from '../../../src/options/settings.js';
import { fakeMembers, FakeMember, releasedAfterAcquire, runFor, settingsOn, settle } from './fake-member.js';
import { quorumOf } from '../../../src/tally.js';

const waiter = { id: 'w', ticket: 0, leaseMs: 0 };

function fenced(members: FakeMember[], settings: Settings, ttl = 10_000): Promise<AttemptResult> {
  return attemptLock({
    members,
    quorum: quorumOf(members.length),
    settings,
    resources: ['r'],
    ttl,
    deadlines: { timeoutMs: settings.nodeTimeout },
    waiter,
    fencing: true,
  });
}

const syncs = (member: FakeMember) => member.callsOf('fence').filter((call) => call.mode === 'sync');

/** fenceToken for value 'v' of resource 'r' on `members`, each read trusted at `highest` in the acquire round. */
const fenceAfterReading = (clock: ManualClock, members: FakeMember[], highest: number) =>
  fenceToken(
    { members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', until: Infinity },
    { readings: members.map(() => ({ highest, trusted: true })), epochs: [] },
  );

describe('fenceToken', () => {
  it('issues one more than the highest counter read, once a quorum raised it from trusted readings', async () => {
    const clock = new ManualClock(0);
    const counters = [4, 7, 5];
    const members = fakeMembers(clock, 3, (i) => ({ latencyMs: i + 1, counters: { r: counters[i]! } }));
    const result = await settle(clock, fenced(members, settingsOn(clock)));
    expect(result.won).toBe(true);
    if (!result.won) return;
    expect(result.fence).toBe(8);
    await runFor(clock, 100);
    for (const member of members) {
      expect(member.callsOf('fence')[0]).toMatchObject({ mode: 'propose', token: 8, epoch: member.epoch });
      expect(member.counters.get('r')).toBe(8);
    }
    // The next holder's token is higher.
    await runFor(clock, 10_000);
    const next = await settle(clock, fenced(members, settingsOn(clock)));
    expect(next.won && next.fence).toBe(9);
  });

  it('counters are per resource: a token of another resource does not raise this one', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 2, other: 40 } }));
    const result = await settle(clock, fenced(members, settingsOn(clock)));
    expect(result.won && result.fence).toBe(3);
  });

  it("returns no token ('unfenced') when too few members read trusted; a candidate is never written to an untrusted member", async () => {
    const clock = new ManualClock(0);
    // m1 and m2 lost their data: no counter, and their epochs are not complete.
    const members = fakeMembers(clock, 3, (i) => (i === 0 ? { latencyMs: 1, counters: { r: 3 } } : { latencyMs: 1, complete: false }));
    const result = await settle(clock, fenced(members, settingsOn(clock)));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.round.won).toBe(true);
    expect(result.outcome).toBe('unfenced');
    const value = members[0]!.callsOf('acquire')[0]!.request.value;
    for (const member of members) {
      expect(member.callsOf('fence').map((call) => [call.mode, call.token])).toEqual([['propose', 4]]);
      expect(releasedAfterAcquire(member, value)).toBe(true);
    }
    expect(members[0]!.counters.get('r')).toBe(4); // the trusted one raised; no token came of it
    expect(members[1]!.counters.has('r')).toBe(false);
    expect(members[2]!.counters.has('r')).toBe(false);
    await settle(clock, result.rollback);
    for (const member of members) expect(member.holder('r')).toBeUndefined();
  });

  it('proposes again above what outbid it', async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 5 } }));
    for (const member of members) member.hold('r', 'v', 10_000);
    // Readings older than the counters (a holder raised them since): the first proposal loses.
    const stale = members.map(() => ({ highest: 1, trusted: true }));
    const fence = await settle(
      clock,
      fenceToken(
        { members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: 'v', until: Infinity },
        { readings: stale, epochs: members.map((member) => member.epoch) },
      ),
    );
    expect(typeof fence === 'object' && fence.token).toBe(6);
    for (const member of members) expect(member.callsOf('fence').map((call) => call.token)).toEqual([2, 6]);
  });

  it("gives up at once when a quorum no longer holds the key, as 'unavailable' (their counters are fine: no restore-fencing hint); nothing is raised there", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 5 } }));
    members[0]!.hold('r', 'v', 10_000);
    const fence = await settle(clock, fenceAfterReading(clock, members, 5));
    expect(fence).toBe('unavailable');
    expect(members.map((member) => member.counters.get('r'))).toEqual([6, 5, 5]);
    // No second round: with two of three gone, none could win.
    expect(members[0]!.callsOf('fence')).toHaveLength(1);
  });

  it("a round lost to one member that no longer holds the key and one that is silent ends 'unavailable', not 'unfenced'", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 5 } }));
    members[0]!.hold('r', 'v', 10_000);
    members[1]!.hold('r', 'v', 10_000);
    members[1]!.failure = 'down';
    // members[2] holds nothing (its key evicted): it answers, read nothing, and it is not an untrusted counter.
    const fence = await settle(clock, fenceAfterReading(clock, members, 5));
    expect(fence).toBe('unavailable');
    expect(members[2]!.callsOf('fence').length).toBeGreaterThan(0);
    expect(members[2]!.counters.get('r')).toBe(5);
  });

  it("tries a round lost for want of answers again, above what the member that answered took, and ends 'unavailable', not 'unfenced'", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 5 } }));
    for (const member of members) member.hold('r', 'v', 10_000);
    // Two of three stop answering after the acquire round: no trust problem, no answers.
    members[1]!.failure = 'down';
    members[2]!.failure = 'down';
    const fence = await settle(clock, fenceAfterReading(clock, members, 5));
    expect(fence).toBe('unavailable');
    expect(members[0]!.callsOf('fence').map((call) => call.token)).toEqual([6, 7, 8]);
    expect(members[0]!.counters.get('r')).toBe(8);
  });

  it("gives a reader's round lost for want of answers three tries too, not the whole validity", async () => {
    const clock = new ManualClock(0);
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 5 } }));
    // A reader's hold: its entry among the shared holders of r, on every member.
    for (const member of members) member.server.execute(['ZADD', readersKeyOf('r'), String(member.server.nowMs() + 10_000), '~v']);
    members[1]!.failure = 'error';
    members[2]!.failure = 'error';
    const fence = await settle(
      clock,
      fenceToken(
        { members, quorum: quorumOf(members.length), settings: settingsOn(clock), resources: ['r'], value: '~v', until: Infinity },
        { readings: members.map(() => ({ highest: 5, trusted: true })), epochs: [] },
      ),
    );
    expect(fence).toBe('unavailable');
    expect(members[0]!.callsOf('fence')).toHaveLength(3);
  });

  it('a fence round that uses up the validity hands out no lock', async () => {
    const clock = new ManualClock(0);
    // ttl 30, drift 3: acquire decided at 14, the fence round at 28; 30 − 3 − 28 < 0.
    const members = fakeMembers(clock, 3, () => ({ latencyMs: 14 }));
    const result = await settle(clock, fenced(members, settingsOn(clock), 30));
    expect(result.won).toBe(false);
    if (result.won) return;
    expect(result.outcome).toBe('expired');
    expect(result.validityMs).toBeLessThanOrEqual(0);
  });
});

describe('the sync', () => {
  it('goes only to members whose epoch was known before the winning propose round was sent, bound to that epoch, with a floor', async () => {
    const clock = new ManualClock(0);
    const members = [
      ...fakeMembers(clock, 3, () => ({ latencyMs: 10, counters: { r: 3 } })),
      // Refuses (a holder's key is still there) and lost its data, but answers in the acquire round: synced.
      new FakeMember(clock, 'taken', { latencyMs: 10, complete: false }),
      // Lost its data; its acquire answer comes after the propose round went out (the attempt
      // waits for stragglers at most nodeTimeout, 50 ms, after the decision): never synced.
      new FakeMember(clock, 'late', { latencyMs: 70, complete: false }),
    ];
    members[3]!.hold('r', 'other', 5);
    // One ms per turn of the loop: the acquire round is decided at 10, the propose round goes out
    // after waiting 50 ms for the late member, the late answer comes at 70, the propose round is
    // won after it.
    const result = await settle(clock, fenced(members, settingsOn(clock)), { stepMs: 1 });
    expect(result.won).toBe(true);
    if (!result.won) return;
    expect(result.fence).toBe(4);
    expect(members[4]!.callsOf('fence')[0]!.at).toBeLessThan(70); // the propose went out first
    expect(clock.now()).toBeGreaterThan(70); // won after the late answer was read
    expect(members.slice(0, 3).map(syncs)).toEqual([[], [], []]); // took the token: nothing to sync
    expect(syncs(members[3]!)).toEqual([expect.objectContaining({ token: 4, epoch: 'taken#1', floor: 4 })]);
    expect(syncs(members[4]!)).toEqual([]);
    await runFor(clock, 100);
    // The sync repaired 'taken': complete, and trusted at the token. 'late' stays untrusted.
    expect(members[3]!.complete).toBe(true);
    expect(members[3]!.reading(['r'])).toEqual({ highest: 4, trusted: true });
    expect(members[4]!.reading(['r']).trusted).toBe(false);
  });

  it('never goes to a member in its quarantine, nor to any member with the quarantine off', async () => {
    const sent = async (quarantine: boolean) => {
      const clock = new ManualClock(0);
      const members = [
        ...fakeMembers(clock, 3, () => ({ latencyMs: 1, counters: { r: 3 } })),
        new FakeMember(clock, 'young', { latencyMs: 1, complete: false, quarantineLeftMs: 30_000 }),
        new FakeMember(clock, 'taken', { latencyMs: 1, complete: false }),
      ];
      members[4]!.hold('r', 'other', 5);
      const result = await settle(clock, fenced(members, settingsOn(clock, { quarantine })));
      expect(result.won && result.fence).toBe(4);
      return members.map((member) => syncs(member).length);
    };
    expect(await sent(true)).toEqual([0, 0, 0, 0, 1]);
    expect(await sent(false)).toEqual([0, 0, 0, 0, 0]);
  });
});
