/**
 * Errors that carry what happened (per-member votes, timings), not only a sentence.
 * Bad arguments are plain TypeError / RangeError with a `parameter` field (see options.ts).
 */
import { describeVotes, type MemberVote } from './quorum/votes.js';

/**
 * How one attempt ended:
 * - 'taken': at least one member holds the resource for another owner, and quorum was not reached;
 * - 'unavailable': not enough members answered (timeouts, errors) for a quorum;
 * - 'quarantined': enough answered, but too many of them are in quarantine (their data is younger
 *   than maxLockTtl: restarted, flushed or new; or not a master);
 * - 'unfenced': locked, but no fencing token could be issued (too few members with trusted counters);
 * - 'expired': quorum was reached, but so late that no validity was left (ttl − elapsed − drift ≤ 0).
 */
export type AttemptOutcome = 'taken' | 'unavailable' | 'quarantined' | 'unfenced' | 'expired';

export interface AttemptRecord {
  /** 1 for the first attempt. */
  attempt: number;
  outcome: AttemptOutcome;
  /** When the attempt started, in ms since acquire() was called. */
  startedMs: number;
  /** How long its round took, in ms. */
  elapsedMs: number;
  /** ttl − elapsed − drift at the decision: positive only when 'taken'/'unavailable' cut it short. */
  validityMs: number;
  votes: MemberVote[];
}

function resourceList(resources: readonly string[]): string {
  return resources.join(', ');
}

export class LockAcquireError extends Error {
  override readonly name = 'LockAcquireError';
  /** The outcome of the last attempt. */
  readonly outcome: AttemptOutcome;

  constructor(
    readonly resources: readonly string[],
    /** Every attempt, in order. */
    readonly attempts: readonly AttemptRecord[],
    /** From the acquire() call to the end of the last rollback. */
    readonly elapsedMs: number,
    /** Why no further attempt was made. */
    readonly stoppedBecause: 'retries exhausted' | 'wait budget exhausted',
  ) {
    const last = attempts[attempts.length - 1];
    const hints: Partial<Record<AttemptOutcome, string>> = {
      expired: `, but validity was used up (${Math.round(last?.validityMs ?? 0)} ms left)`,
      quarantined: ': members whose data is younger than maxLockTtl (restarted, flushed or new) or that are not masters do not count; if they are brand new, declare them trusted with redlock.trustMembers()',
      unfenced: ': locked, but too few members have trusted fence counters to issue a token (members that lost their data do not count until a token is written to them; a brand-new deployment declares its members with redlock.trustMembers())',
    };
    const what = last ? `${describeVotes(last.votes)}${hints[last.outcome] ?? ''}` : 'no attempt fit in the wait budget';
    const count = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`;
    super(`could not lock ${resourceList(resources)}: ${what}, after ${count} in ${Math.round(elapsedMs)} ms (${stoppedBecause})`);
    this.outcome = last?.outcome ?? 'unavailable';
  }
}

/**
 * extend() did not renew the lock. The lock's old validity still applies (remainingMs() tells);
 * when `reason` is 'lost' another owner may hold the resource once that runs out.
 */
export class LockExtendError extends Error {
  override readonly name = 'LockExtendError';

  constructor(
    readonly resources: readonly string[],
    /**
     * 'released': release() was already called; 'expired': the validity had already run out, so
     * nothing was sent; 'lost': fewer than a quorum still held our value; 'unavailable': too few
     * members answered; 'late': quorum renewed but the round took longer than the new validity.
     */
    readonly reason: 'released' | 'expired' | 'lost' | 'unavailable' | 'late',
    readonly votes: readonly MemberVote[],
    readonly elapsedMs: number,
  ) {
    const detail = votes.length > 0 ? `: ${describeVotes(votes)}` : '';
    super(`could not extend the lock on ${resourceList(resources)} (${reason})${detail}`);
  }
}

/**
 * The lock is no longer guaranteed: its validity ran out before an extension succeeded, or an
 * extension failed. It is the reason of `lock.signal` and of using()'s signal.
 */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';

  constructor(
    readonly resources: readonly string[],
    /** 'expired': validity reached zero; 'extension failed': an extension did not reach quorum (see `cause`). */
    readonly reason: 'expired' | 'extension failed',
    options?: { cause?: unknown },
  ) {
    const detail = reason === 'expired' ? 'its validity ran out' : `an extension failed${options?.cause instanceof Error ? `: ${options.cause.message}` : ''}`;
    super(`lost the lock on ${resourceList(resources)}: ${detail}`, options);
  }
}
