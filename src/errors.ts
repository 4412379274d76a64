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
 * Why a lock was lost: `LockLostError.lostBecause`, and `LockExtendError.lostBecause` when an
 * extension found the lock lost (or was refused because it had been lost before).
 * - 'expired': the validity ran out before an extension succeeded (none was due yet,
 *   maxExtensions was reached, or every try lacked answers);
 * - 'gone': too many members no longer have our keys for a quorum to hold them (they expired
 *   there, were evicted or deleted, or the member forgot them in a restart or flush), and none of
 *   those members holds another owner's value;
 * - 'taken': as 'gone', but at least one of those members holds another owner's value;
 * - 'lapsed': a quorum extended, but only after the previous validity had run out: another owner
 *   may have held the lock in between (a delayed or re-sent acquire can set our value again after
 *   such a gap, so finding it is no proof of continuity);
 * - 'late': a quorum extended in time, but the round took so long that no new validity was left.
 */
export type LossCause = 'expired' | 'gone' | 'taken' | 'lapsed' | 'late';

/**
 * Why extend() did not renew the lock (`LockExtendError.reason`):
 * - 'released': release() was already called; nothing was sent;
 * - 'expired': the validity had already run out; nothing was sent;
 * - 'unavailable': too few members answered for a quorum. The lock is **not** lost: the previous
 *   validity still applies (shortened to this extend's own, if that was shorter), and a later
 *   extend may succeed. using() retries these by itself;
 * - 'lost': the lock is lost: a quorum says the keys are ours no longer (`lostBecause` 'gone' or
 *   'taken'), or it had been lost before (`lostBecause` says how); nothing is sent then;
 * - 'lapsed': a quorum extended, but only after the previous validity had run out; the lock is lost;
 * - 'late': a quorum extended, but no new validity was left; the lock is lost.
 */
export type ExtendFailure = 'released' | 'expired' | 'unavailable' | 'lost' | 'lapsed' | 'late';

const lossPhrases: Record<LossCause, string> = {
  expired: 'its validity ran out',
  gone: 'our keys are gone on too many members (expired, evicted, deleted or forgotten)',
  taken: 'held by another owner',
  lapsed: 'a quorum extended only after the previous validity had run out, so another owner may have held it in between',
  late: 'a quorum extended, but no validity was left',
};

const extendPhrases: Record<Exclude<ExtendFailure, 'lost'>, string> = {
  released: 'release() was already called',
  expired: 'its validity had already run out',
  unavailable: 'too few members answered; the previous validity still applies',
  lapsed: lossPhrases.lapsed,
  late: lossPhrases.late,
};

/**
 * extend() did not renew the lock. With reason 'unavailable' the lock is still held for
 * remainingMs(); with 'lost', 'lapsed' or 'late' it is lost (lock.signal aborts), and another owner
 * may hold the resource.
 */
export class LockExtendError extends Error {
  override readonly name = 'LockExtendError';

  constructor(
    readonly resources: readonly string[],
    /** See ExtendFailure. */
    readonly reason: ExtendFailure,
    readonly votes: readonly MemberVote<string>[],
    readonly elapsedMs: number,
    /** When the lock is lost ('lost', 'lapsed', 'late'): why. See LossCause. */
    readonly lostBecause?: LossCause,
  ) {
    const why = reason === 'lost' ? (lostBecause === undefined ? 'the lock was lost' : lostBecause === 'gone' || lostBecause === 'taken' ? lossPhrases[lostBecause] : `the lock was lost before: ${lossPhrases[lostBecause]}`) : extendPhrases[reason];
    const detail = votes.length > 0 ? `: ${describeVotes(votes)}` : '';
    super(`could not extend the lock on ${resourceList(resources)} (${reason}: ${why})${detail}`);
  }
}

/**
 * The lock is no longer guaranteed: its validity ran out before an extension succeeded, or an
 * extension found it lost. It is the reason of `lock.signal` and of using()'s signal.
 */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  /** Why, in detail (see LossCause): 'expired' for reason 'expired'; for 'extension failed', what the extension found. */
  readonly lostBecause: LossCause;

  constructor(
    readonly resources: readonly string[],
    /**
     * 'expired': validity reached zero; 'extension failed': an extension found the lock lost (a
     * quorum says the keys are ours no longer, or the quorum came too late; see `lostBecause`
     * and `cause`, the LockExtendError). An extension that merely lacked answers is no loss.
     */
    readonly reason: 'expired' | 'extension failed',
    options?: { cause?: unknown; lostBecause?: LossCause },
  ) {
    const { lostBecause: given, ...errorOptions } = options ?? {};
    const fromCause = options?.cause instanceof LockExtendError ? options.cause.lostBecause : undefined;
    const detail = reason === 'expired' ? 'its validity ran out' : `an extension failed${options?.cause instanceof Error ? `: ${options.cause.message}` : ''}`;
    super(`lost the lock on ${resourceList(resources)}: ${detail}`, errorOptions);
    // 'taken' is the conservative guess for an extension failure whose cause does not say.
    this.lostBecause = given ?? fromCause ?? (reason === 'expired' ? 'expired' : 'taken');
  }
}
