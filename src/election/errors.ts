/**
 * The errors of elections. Codes are stable, like those in src/errors.ts: match on them (or on
 * the classes) rather than on messages.
 */
import type { LeaderReading } from '../store/protocol.js';

export const electionErrorCodes = {
  /** LeadershipLostError: the reason of leadership.signal; `why` says how the leadership ended. */
  QUORUMLOCK_ERR_LEADERSHIP_LOST: 'QUORUMLOCK_ERR_LEADERSHIP_LOST',
  /** LeaderUnknownError: election.leader() could not tell who leads (too few answers, or no quorum agrees yet). */
  QUORUMLOCK_ERR_LEADER_UNKNOWN: 'QUORUMLOCK_ERR_LEADER_UNKNOWN',
} as const;

/**
 * How a leadership ended:
 *   'resigned' resign() was called;
 *   'failing'  extensions kept failing (members unreachable or slow) and the validity fell to the
 *              stop margin: the leader stops while its lock is still guaranteed, so it is never
 *              still acting when a successor can be elected;
 *   'lost'     the lock was lost (an extension found it gone or taken, or its validity ran out:
 *              `cause` is the lock's LockLostError).
 */
export type LeadershipEnd = 'resigned' | 'failing' | 'lost';

export class LeadershipLostError extends Error {
  override readonly name = 'LeadershipLostError';
  readonly code = electionErrorCodes.QUORUMLOCK_ERR_LEADERSHIP_LOST;
  constructor(
    readonly election: string,
    readonly term: number,
    readonly why: LeadershipEnd,
    options?: { cause?: unknown },
  ) {
    super(`quorumlock: the leadership of "${election}" (term ${term}) ended: ${phrases[why]}`, options);
  }
}

const phrases: Record<LeadershipEnd, string> = {
  resigned: 'resigned',
  failing: 'extensions kept failing, and the leader stopped before its validity ran out',
  lost: 'its lock was lost',
};

/** One member's answer to a leader() read, or why there is none. */
export interface LeaderVote {
  member: string;
  reading?: LeaderReading;
  /** Set when the member's answer cannot count: it failed, timed out, or the member does not count now. */
  error?: string;
}

export class LeaderUnknownError extends Error {
  override readonly name = 'LeaderUnknownError';
  readonly code = electionErrorCodes.QUORUMLOCK_ERR_LEADER_UNKNOWN;
  constructor(
    readonly election: string,
    readonly votes: readonly LeaderVote[],
    readonly why: 'unavailable' | 'undecided',
  ) {
    super(
      `quorumlock: cannot tell who leads "${election}": ${
        why === 'unavailable' ? 'too few members answered' : 'no quorum of members names one leader yet (an election or a handover is under way)'
      } (${votes.map((vote) => `${vote.member}: ${vote.error ?? (vote.reading?.leader ? `term ${vote.reading.leader.term}` : vote.reading && vote.reading.pttl !== -2 ? 'held, no record' : 'vacant')}`).join(', ')})`,
    );
  }
}
