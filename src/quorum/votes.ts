/**
 * What one member said in one round. Every outcome is data, so errors, logs and metrics all read
 * the same record.
 */

/**
 * Acquire and extend: 'locked' = every key now holds our value with the new TTL; 'taken' = held by
 * another owner (for extend: no longer ours); 'queued' = free, but kept for a waiter that came first;
 * 'quarantined' = set, but the member does not count: its data is younger than maxLockTtl
 * (restarted, flushed or new) or it is not a master.
 */
export type LockAnswer = 'locked' | 'taken' | 'queued' | 'quarantined';
/** Release: 'released' = our keys were deleted here; 'absent' = nothing of ours was left to delete. */
export type ReleaseAnswer = 'released' | 'absent';
/**
 * No answer: 'timeout' = nothing within the per-member timeout; 'error' = the command failed;
 * 'pending' = the round was already decided (quorum reached or out of reach) before this member
 * answered, so it was not waited for.
 */
export type NoAnswer = 'timeout' | 'error' | 'pending';

export interface MemberVote<Answer extends string = LockAnswer> {
  /** The member, as host:port/db. */
  member: string;
  vote: Answer | NoAnswer;
  /** Milliseconds from the start of the round to this answer (0 for 'pending' and 'timeout' at the deadline). */
  ms: number;
  error?: Error;
  /** 'taken': how much longer the holder's key lives on this member (the longest, for several keys). */
  heldForMs?: number;
  /** 'taken' / 'queued': our 0-based place in this member's line of waiters. */
  place?: number;
  /** 'quarantined': how long until this member counts again (very large for a non-master). */
  quarantinedForMs?: number;
  /** 'quarantined' for good while it lasts: why this member does not count (not a master, may evict lock keys, the same server as another member). */
  notCounting?: string;
  /** 'taken' / 'queued': part of this attempt's own hold is on the member all the same (a re-sent call: Refusal.holdsOwn). */
  holdsOwn?: true;
  /** 'taken': the key there holds this waiter's handover value (Refusal.handedOver): it abandons that value. */
  handedOver?: true;
}

/** The answer that counts toward quorum in acquire, extend and fence rounds. */
export const isLocked = (answer: LockAnswer): boolean => answer === 'locked';

/** What a round's `send` may resolve with: the answer alone, or with details. */
export type Answered<Answer extends string> =
  | Answer
  | {
      vote: Answer;
      heldForMs?: number | undefined;
      place?: number | undefined;
      quarantinedForMs?: number | undefined;
      notCounting?: string | undefined;
      holdsOwn?: true | undefined;
      handedOver?: true | undefined;
    };

const phrases: Record<string, string> = {
  locked: 'locked',
  taken: 'held by another owner',
  queued: 'kept for an earlier waiter',
  quarantined: 'quarantined',
  released: 'released',
  absent: 'not held',
  timeout: 'timed out',
  error: 'failed',
  pending: 'not waited for',
};

/**
 * "2/5 locked, 2 held by another owner, 1 failed (connect ECONNREFUSED)": what a round's votes
 * add up to, in words. `yes` is the answer that counts toward quorum.
 */
export function describeVotes(votes: readonly MemberVote<string>[], yes: string = 'locked'): string {
  const counts = new Map<string, number>();
  const uncounted = votes.filter((vote) => vote.notCounting !== undefined && vote.vote !== 'quarantined');
  for (const vote of votes) if (!uncounted.includes(vote)) counts.set(vote.vote, (counts.get(vote.vote) ?? 0) + 1);
  const parts = [`${counts.get(yes) ?? 0}/${votes.length} ${phrases[yes] ?? yes}`];
  for (const [vote, phrase] of Object.entries(phrases)) {
    const count = counts.get(vote);
    if (!count || vote === yes) continue;
    const error = vote === 'error' ? votes.find((other) => other.error)?.error : undefined;
    parts.push(`${count} ${phrase}${error ? ` (${error.message})` : ''}`);
  }
  if (uncounted.length > 0) parts.push(`${uncounted.length} not counting (${uncounted[0]!.notCounting})`);
  return parts.join(', ');
}
