/**
 * judgeLeader (src/election/judge.ts): who leads as a quorum says, from each member's reading.
 * A pure function: fake readings, no members.
 */
import { describe, expect, it } from 'vitest';
import { judgeLeader } from '../../src/election/judge.js';
import type { LeaderVote } from '../../src/election/errors.js';

const leads = (term: number, id: string, pttl: number, member = 'm'): LeaderVote => ({ member, reading: { leader: { term, id }, pttl, quarantinedForMs: 0 } });
const heldNoRecord = (pttl = 1000): LeaderVote => ({ member: 'm', reading: { leader: undefined, pttl, quarantinedForMs: 0 } });
const free: LeaderVote = { member: 'm', reading: { leader: undefined, pttl: -2, quarantinedForMs: 0 } };
/** Absent on a member restarted empty, inside its quarantine: it may have forgotten a lock that still rests on it. */
const forgot: LeaderVote = { member: 'm', reading: { leader: undefined, pttl: -2, quarantinedForMs: 40_000 } };
const silent: LeaderVote = { member: 'm', error: 'no answer within 50 ms' };

describe('judgeLeader', () => {
  it('names the leader a quorum agrees on, with the quorum-th largest PTTL less the read time and drift', () => {
    const judged = judgeLeader([leads(7, 'a', 900), leads(7, 'a', 1000), leads(7, 'a', 800), free, silent], 3, 10, 0.01);
    // Quorum-th largest of 1000, 900, 800 is 800; drift = 800 × 0.01 + 2 = 10; 800 − 10 − 10.
    expect(judged).toEqual({ leader: { id: 'a', term: 7, remainingMs: 780 } });
  });

  it('names nobody when two leaders each have less than a quorum (a handover under way): undecided, not vacant', () => {
    expect(judgeLeader([leads(7, 'a', 500), leads(7, 'a', 500), leads(8, 'b', 900), leads(8, 'b', 900), free], 3, 0, 0.01)).toEqual({ unknown: 'undecided' });
  });

  it('a lock held on a quorum whose record is not written yet is undecided', () => {
    expect(judgeLeader([heldNoRecord(), heldNoRecord(), heldNoRecord(), free, free], 3, 0, 0.01)).toEqual({ unknown: 'undecided' });
  });

  it('vacant only when no member that answered holds the key and no quorum can be unheard', () => {
    expect(judgeLeader([free, free, free, free, free], 3, 0, 0.01)).toEqual({ vacant: true });
    expect(judgeLeader([free, free, free, silent, silent], 3, 0, 0.01)).toEqual({ vacant: true });
    // A member holding the key: its holder may rest on members restarted empty (absent, yet
    // quarantined for everyone else), so absences elsewhere do not make it vacant.
    expect(judgeLeader([free, free, free, heldNoRecord(), silent], 3, 0, 0.01)).toEqual({ unknown: 'undecided' });
  });

  it('an absence from a member inside its quarantine counts as "could hold", as silence does: never vacant on it', () => {
    // Issue 21, defect 5: a leader on m1 + m2; m2 restarted empty; m1 unheard.
    expect(judgeLeader([free, silent, forgot], 2, 0, 0.01)).toEqual({ unknown: 'unavailable' });
    expect(judgeLeader([free, free, forgot, forgot, silent], 3, 0, 0.01)).toEqual({ unknown: 'unavailable' });
    expect(judgeLeader([free, free, forgot, forgot, forgot], 3, 0, 0.01)).toEqual({ unknown: 'unavailable' });
    // Too few could hold for a holder to have a quorum: vacant, however they answered.
    expect(judgeLeader([free, free, free, forgot, silent], 3, 0, 0.01)).toEqual({ vacant: true });
    expect(judgeLeader([free, free, free, forgot, forgot], 3, 0, 0.01)).toEqual({ vacant: true });
    expect(judgeLeader([free, free, forgot], 2, 0, 0.01)).toEqual({ vacant: true });
  });

  it('cannot tell with too few answers: a silent majority could hold a lock', () => {
    expect(judgeLeader([free, free, silent, silent, silent], 3, 0, 0.01)).toEqual({ unknown: 'unavailable' });
    expect(judgeLeader([leads(7, 'a', 900), leads(7, 'a', 900), silent, silent, silent], 3, 0, 0.01)).toEqual({ unknown: 'unavailable' });
  });

  it('a member that does not count (its reading carries an error) is not counted for the leader', () => {
    const notCounting: LeaderVote = {
      member: 'm',
      reading: { leader: { term: 7, id: 'a' }, pttl: 900, quarantinedForMs: 0 },
      error: 'does not count: not a master',
    };
    expect(judgeLeader([leads(7, 'a', 900), leads(7, 'a', 900), notCounting, free, free], 3, 0, 0.01)).toEqual({ unknown: 'undecided' });
  });
});
