/**
 * Errors that carry what happened (per-member votes, timings), not only a sentence, and a stable
 * `code` (see errorCodes). Bad arguments are plain TypeError / RangeError with `parameter` and
 * `code` fields (see argumentError).
 *
 * `instanceof` holds across copies of this module (the ESM and the CJS build loaded side by side,
 * or two installed versions): each class brands its instances with a `Symbol.for()` key, which is
 * the same in every copy, and its `Symbol.hasInstance` looks for that brand, as undici does.
 */
import { describeVotes, type MemberVote } from './quorum/votes.js';

/**
 * Every `code` quorumlock puts on the errors it throws. The codes are stable: match on them (or on
 * the classes) rather than on messages, which may be reworded.
 */
export const errorCodes = {
  /** LockAcquireError: acquire() or using() could not lock the resources (retries or wait budget exhausted). */
  QUORUMLOCK_ERR_ACQUIRE: 'QUORUMLOCK_ERR_ACQUIRE',
  /** LockExtendError: extend() did not renew the lock (its `reason` says whether the lock is still held). */
  QUORUMLOCK_ERR_EXTEND: 'QUORUMLOCK_ERR_EXTEND',
  /** LockLostError: the lock is no longer guaranteed (the reason of lock.signal and of using()'s signal). */
  QUORUMLOCK_ERR_LOCK_LOST: 'QUORUMLOCK_ERR_LOCK_LOST',
  /** TypeError (an ArgumentError): an argument or option has the wrong type; `parameter` names it. */
  QUORUMLOCK_ERR_INVALID_ARG_TYPE: 'QUORUMLOCK_ERR_INVALID_ARG_TYPE',
  /** RangeError (an ArgumentError): an argument or option has the right type but a value out of range; `parameter` names it. */
  QUORUMLOCK_ERR_OUT_OF_RANGE: 'QUORUMLOCK_ERR_OUT_OF_RANGE',
  /**
   * TypeError (an ArgumentError): an options object has a name the call does not take (a typo, or
   * another client's option, such as node-redlock's automaticExtensionThreshold); `parameter` names
   * it, and the message says what to use instead.
   */
  QUORUMLOCK_ERR_UNKNOWN_OPTION: 'QUORUMLOCK_ERR_UNKNOWN_OPTION',
  /**
   * Error: a `{ reentrant: true }` acquire could not nest: deeper than the Redlock's maxReentrancy,
   * reentrancy is off (maxReentrancy 0), or the outer lock is no longer held. `resources` and
   * `depth` say which and how deep.
   */
  QUORUMLOCK_ERR_REENTRANCY: 'QUORUMLOCK_ERR_REENTRANCY',
  /** Error: `quorumlock/testing`'s resetMembers() refused to run (NODE_ENV=production, or no test runner detected). */
  QUORUMLOCK_ERR_TESTING_ONLY: 'QUORUMLOCK_ERR_TESTING_ONLY',
  /** Error: a member answered one of our scripts with a reply the protocol does not know (store/protocol.ts); never read as a yes. */
  QUORUMLOCK_ERR_PROTOCOL: 'QUORUMLOCK_ERR_PROTOCOL',
} as const;

/** One of errorCodes. */
export type ErrorCode = (typeof errorCodes)[keyof typeof errorCodes];

/** A TypeError or RangeError that also names the offending parameter in `parameter`. */
export type ArgumentError = (TypeError | RangeError) & {
  parameter: string;
  code: typeof errorCodes.QUORUMLOCK_ERR_INVALID_ARG_TYPE | typeof errorCodes.QUORUMLOCK_ERR_OUT_OF_RANGE | typeof errorCodes.QUORUMLOCK_ERR_UNKNOWN_OPTION;
};

/**
 * The error for a bad argument: a TypeError (wrong type, code QUORUMLOCK_ERR_INVALID_ARG_TYPE) or
 * a RangeError (out of range, code QUORUMLOCK_ERR_OUT_OF_RANGE), with the message
 * `quorumlock: <parameter> <message>`.
 */
export function argumentError(Kind: typeof TypeError | typeof RangeError, parameter: string, message: string): ArgumentError {
  const code = Kind === RangeError ? errorCodes.QUORUMLOCK_ERR_OUT_OF_RANGE : errorCodes.QUORUMLOCK_ERR_INVALID_ARG_TYPE;
  return Object.assign(new Kind(`quorumlock: ${parameter} ${message}`), { parameter, code });
}

/**
 * The error for an option name the call does not take: a TypeError with code
 * QUORUMLOCK_ERR_UNKNOWN_OPTION, `parameter` the name, and the message `quorumlock: <name> <message>`.
 */
export function unknownOptionError(name: string, message: string): ArgumentError {
  return Object.assign(new TypeError(`quorumlock: ${name} ${message}`), { parameter: name, code: errorCodes.QUORUMLOCK_ERR_UNKNOWN_OPTION });
}

/** A member's reply that store/protocol.ts cannot decode: the vote becomes 'error', never a yes. */
export function protocolError(message: string): Error & { code: 'QUORUMLOCK_ERR_PROTOCOL' } {
  return Object.assign(new Error(`quorumlock: ${message}`), { code: errorCodes.QUORUMLOCK_ERR_PROTOCOL });
}

const brands = {
  LockAcquireError: Symbol.for('quorumlock.error.LockAcquireError'),
  LockExtendError: Symbol.for('quorumlock.error.LockExtendError'),
  LockLostError: Symbol.for('quorumlock.error.LockLostError'),
} as const;

/** Marks `error` as an instance of the class of `brand`, in every copy of this module (not enumerable: not in JSON or inspect). */
function brand(error: Error, key: symbol): void {
  Object.defineProperty(error, key, { value: true, configurable: true });
}

type ErrorClass = abstract new (...args: never[]) => Error;
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];

/**
 * `value instanceof Class`, where Class is `Base` (a branded class of ours) or a subclass of it that
 * inherits this check. `Base` itself accepts any value with its brand (an instance of Base or of a
 * subclass, from any copy of this module) and, failing that, what its prototype chain says. A
 * subclass has no brand of its own, so for it only the prototype chain counts: an instance of
 * Base is no instance of a subclass.
 */
function isInstance(Class: ErrorClass, Base: ErrorClass, key: symbol, value: unknown): boolean {
  if (Class === Base && typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[key] === true) return true;
  return ordinaryHasInstance.call(Class, value);
}

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

/** One acquire attempt, as `LockAcquireError.attempts` lists them. */
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

/**
 * acquire(), tryAcquire() or using() could not lock the resources: retries or the wait budget ran
 * out (tryAcquire: too few members answered). `outcome` says why the last attempt failed;
 * `attempts` holds every attempt's per-member votes. Nothing it set is left on any member.
 */
export class LockAcquireError extends Error {
  override readonly name = 'LockAcquireError';
  readonly code = errorCodes.QUORUMLOCK_ERR_ACQUIRE;
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
      quarantined:
        ': members whose data is younger than maxLockTtl (restarted, flushed or new) or that are not masters do not count; if they are brand new, declare them trusted with redlock.trustMembers()',
      unfenced:
        ': locked, but too few members have trusted fence counters to issue a token (members that lost their data do not count until a token is written to them; a brand-new deployment declares its members with redlock.trustMembers())',
    };
    const what = last ? `${describeVotes(last.votes)}${hints[last.outcome] ?? ''}` : 'no attempt fit in the wait budget';
    const count = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`;
    super(`could not lock ${resourceList(resources)}: ${what}, after ${count} in ${Math.round(elapsedMs)} ms (${stoppedBecause})`);
    this.outcome = last?.outcome ?? 'unavailable';
    brand(this, brands.LockAcquireError);
  }

  /** True for a LockAcquireError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, LockAcquireError, brands.LockAcquireError, value);
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
  readonly code = errorCodes.QUORUMLOCK_ERR_EXTEND;

  constructor(
    readonly resources: readonly string[],
    /** See ExtendFailure. */
    readonly reason: ExtendFailure,
    readonly votes: readonly MemberVote<string>[],
    readonly elapsedMs: number,
    /** When the lock is lost ('lost', 'lapsed', 'late'): why. See LossCause. */
    readonly lostBecause?: LossCause,
  ) {
    const why =
      reason === 'lost'
        ? lostBecause === undefined
          ? 'the lock was lost'
          : lostBecause === 'gone' || lostBecause === 'taken'
            ? lossPhrases[lostBecause]
            : `the lock was lost before: ${lossPhrases[lostBecause]}`
        : extendPhrases[reason];
    const detail = votes.length > 0 ? `: ${describeVotes(votes)}` : '';
    super(`could not extend the lock on ${resourceList(resources)} (${reason}: ${why})${detail}`);
    brand(this, brands.LockExtendError);
  }

  /** True for a LockExtendError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, LockExtendError, brands.LockExtendError, value);
  }
}

/**
 * The lock is no longer guaranteed: its validity ran out before an extension succeeded, or an
 * extension found it lost. It is the reason of `lock.signal` and of using()'s signal.
 */
export class LockLostError extends Error {
  override readonly name = 'LockLostError';
  readonly code = errorCodes.QUORUMLOCK_ERR_LOCK_LOST;
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
    brand(this, brands.LockLostError);
  }

  /** True for a LockLostError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, LockLostError, brands.LockLostError, value);
  }
}
