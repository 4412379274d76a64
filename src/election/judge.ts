/**
 * Who leads, as a quorum says (election.leader()). Pure: the readings in, a leader, a vacancy or
 * "cannot tell" out.
 *
 * A member's reading names a leader only while its lock key holds the value the record's writer
 * won with (election.lua compares digests), so a record is never older than the lock it names.
 * A leader is reported when a quorum of counting members name the same (term, id): a quorum held
 * that leader's lock at the moment of reading, which no other holder can have had at the same
 * time (any two quorums share a member). Vacant when no member that answered holds the lock key
 * and too few could hold it for a holder to be counting on a quorum: a member could when it was
 * not heard, or when it answered "absent" from inside its restart quarantine (restarted empty, it
 * forgot the keys it held; the quarantine keeps everyone else out of them meanwhile, so that
 * absence is no evidence). Otherwise (a handover under way, a new leader not yet recorded,
 * members unheard) nobody is named.
 */
import { driftMs } from '../clock/index.js';
import type { LeaderVote } from './errors.js';

/** What leader() resolves with. */
export interface LeaderInfo {
  /** The leader's id (ElectionOptions.id). */
  id: string;
  /** Its term: the fencing token of its lock, strictly increasing across leaders. */
  term: number;
  /**
   * A lower bound of how long a quorum of members will still hold its lock unless it is extended
   * or released: the quorum-th largest remaining expiry among the members naming it, less the
   * time the read took and the drift allowance. Not a promise that it still leads then.
   */
  remainingMs: number;
}

export type Judgement = { leader: LeaderInfo } | { vacant: true } | { unknown: 'unavailable' | 'undecided' };

export function judgeLeader(votes: readonly LeaderVote[], quorum: number, elapsedMs: number, driftFactor: number): Judgement {
  const answered = votes.filter((vote) => vote.reading !== undefined && vote.error === undefined);
  const unheard = votes.length - answered.length;
  const groups = new Map<string, { id: string; term: number; pttls: number[] }>();
  let held = 0;
  // Absent, but inside the member's quarantine: it may have forgotten a lock that still rests on it.
  let forgetful = 0;
  for (const { reading } of answered) {
    if (reading!.pttl === -2) {
      if (reading!.quarantinedForMs > 0) forgetful++;
      continue;
    }
    held++;
    const leader = reading!.leader;
    if (leader === undefined || reading!.pttl <= 0) continue;
    const key = `${leader.term} ${leader.id}`;
    const group = groups.get(key) ?? { ...leader, pttls: [] };
    group.pttls.push(reading!.pttl);
    groups.set(key, group);
  }
  for (const { id, term, pttls } of groups.values()) {
    if (pttls.length < quorum) continue;
    // The quorum-th largest: at least a quorum holds the lock at least this long.
    const pttl = pttls.sort((a, b) => b - a)[quorum - 1]!;
    return { leader: { id, term, remainingMs: Math.max(0, pttl - elapsedMs - driftMs(pttl, driftFactor)) } };
  }
  // Vacant only when no member that answered holds the lock key at all, and too few could: a
  // member restarted empty answers "absent" for a lock that still rests on it (its quarantine
  // keeps everyone else out), so absences alone must not outvote a holder's remaining keys, and
  // an absence from inside a quarantine counts as "could hold", as silence does.
  if (held === 0 && unheard + forgetful < quorum) return { vacant: true };
  return { unknown: answered.length - forgetful >= quorum ? 'undecided' : 'unavailable' };
}
