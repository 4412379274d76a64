/**
 * Every error quorumlock throws, in one module that every layer may import: it imports nothing.
 *
 * - One base class, QuorumlockError, and on every error a stable `code`, one of `codes`: match on
 *   the code or the class, not on messages, which may be reworded.
 * - Errors carry what happened (per-member votes, timings, readings), not only a sentence. The
 *   records they carry are defined here too (votes, attempts, readings), so that this module needs
 *   no other: store/, quorum/, election/ and semaphore/ take those types from here.
 * - `instanceof` holds across copies of this module (the ESM and the CJS build loaded side by side,
 *   the quorumlock/testing bundle, two installed versions), as undici does it: each class has a
 *   brand, `Symbol.for('quorumlock.error.<Name>')` (the base class: `Symbol.for('quorumlock.error')`),
 *   the same symbol in every copy, on its prototype; its static `Symbol.hasInstance` looks for it.
 * - Bad arguments are TypeError / RangeError as ever (ArgumentTypeError, ArgumentRangeError,
 *   UnknownOptionError, with `parameter`): they carry the base brand, so they are
 *   `instanceof QuorumlockError` too.
 */

/**
 * Every `code` quorumlock puts on the errors it throws, each under its own name. The codes are
 * stable: match on them (or on the classes) rather than on messages, which may be reworded.
 */
export const codes = {
  /** LockAcquireError: acquire() or using() could not lock the resources (retries or wait budget exhausted). */
  QUORUMLOCK_ERR_ACQUIRE: 'QUORUMLOCK_ERR_ACQUIRE',
  /** LockExtendError: extend() did not renew the lock (its `reason` says whether the lock is still held). */
  QUORUMLOCK_ERR_EXTEND: 'QUORUMLOCK_ERR_EXTEND',
  /** LockLostError: the lock is no longer guaranteed (the reason of lock.signal and of using()'s signal). */
  QUORUMLOCK_ERR_LOCK_LOST: 'QUORUMLOCK_ERR_LOCK_LOST',
  /** ArgumentTypeError, a TypeError: an argument or option has the wrong type; `parameter` names it. */
  QUORUMLOCK_ERR_INVALID_ARG_TYPE: 'QUORUMLOCK_ERR_INVALID_ARG_TYPE',
  /** ArgumentRangeError, a RangeError: an argument or option has the right type but a value out of range; `parameter` names it. */
  QUORUMLOCK_ERR_OUT_OF_RANGE: 'QUORUMLOCK_ERR_OUT_OF_RANGE',
  /**
   * UnknownOptionError, a TypeError: an options object has a name the call does not take (a typo,
   * or another client's option, such as node-redlock's automaticExtensionThreshold); `parameter`
   * names it, and the message says what to use instead.
   */
  QUORUMLOCK_ERR_UNKNOWN_OPTION: 'QUORUMLOCK_ERR_UNKNOWN_OPTION',
  /**
   * ReentrancyError: a `{ reentrant: true }` acquire could not nest: deeper than the Redlock's
   * maxReentrancy, reentrancy is off (maxReentrancy 0), the outer lock is no longer held, or it
   * would upgrade a shared lock, or asks for a fencing token inside an unfenced lock. `resources`
   * and `depth` say which and how deep.
   */
  QUORUMLOCK_ERR_REENTRANCY: 'QUORUMLOCK_ERR_REENTRANCY',
  /** TestingOnlyError: `quorumlock/testing`'s resetMembers() refused to run (NODE_ENV=production, or no test runner detected). */
  QUORUMLOCK_ERR_TESTING_ONLY: 'QUORUMLOCK_ERR_TESTING_ONLY',
  /** ProtocolError: a member answered one of our scripts with a reply the protocol does not know (store/protocol.ts); never read as a yes. */
  QUORUMLOCK_ERR_PROTOCOL: 'QUORUMLOCK_ERR_PROTOCOL',
  /** SemaphoreUnavailableError: semaphore.holders() had answers from fewer than a quorum of members. */
  QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE: 'QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE',
  /** LeadershipLostError: the reason of leadership.signal; `why` says how the leadership ended. */
  QUORUMLOCK_ERR_LEADERSHIP_LOST: 'QUORUMLOCK_ERR_LEADERSHIP_LOST',
  /** LeaderUnknownError: election.leader() could not tell who leads (too few answers, absences inside a restart quarantine counting as none; or no quorum agrees yet). */
  QUORUMLOCK_ERR_LEADER_UNKNOWN: 'QUORUMLOCK_ERR_LEADER_UNKNOWN',
  /** ResetMembersError: `quorumlock/testing`'s resetMembers() could not use a member (closed, ended before it was ready, a Cluster with no master). */
  QUORUMLOCK_ERR_RESET_MEMBERS: 'QUORUMLOCK_ERR_RESET_MEMBERS',
  /**
   * EpochChangedError (a vote's error): a member refused a write because its epoch is not the one
   * this client last read there (it restarted, failed over or was flushed since, or evicted a key):
   * the call wrote nothing. `member`, `expected` and `found` name the epochs; the next call binds to `found`.
   */
  QUORUMLOCK_ERR_EPOCH_CHANGED: 'QUORUMLOCK_ERR_EPOCH_CHANGED',
  /** NotMasterError (a vote's error): a member refused a write because its server is not a plain master (a replica): it never counts. */
  QUORUMLOCK_ERR_NOT_MASTER: 'QUORUMLOCK_ERR_NOT_MASTER',
  /** EpochTooNewError: an operator's call (trust, restore-fencing) met an epoch that began after the call did: that member is not trusted. */
  QUORUMLOCK_ERR_EPOCH_TOO_NEW: 'QUORUMLOCK_ERR_EPOCH_TOO_NEW',
} as const;

/** `codes`, by its first name (the same object). */
export const errorCodes = codes;

/** One of `codes`. */
export type ErrorCode = (typeof codes)[keyof typeof codes];

/** The election codes, as quorumlock 0.1 exported them (the same values as in `codes`). */
export const electionErrorCodes = {
  /** LeadershipLostError's code. */
  QUORUMLOCK_ERR_LEADERSHIP_LOST: codes.QUORUMLOCK_ERR_LEADERSHIP_LOST,
  /** LeaderUnknownError's code. */
  QUORUMLOCK_ERR_LEADER_UNKNOWN: codes.QUORUMLOCK_ERR_LEADER_UNKNOWN,
} as const;

// --- Brands: `instanceof` across copies of this module -------------------------------------------

const BASE_BRAND = Symbol.for('quorumlock.error');
/** The brand each class of ours looks for; a user's subclass of one has none (see isInstance). */
const brandOf = new WeakMap<object, symbol>();
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];

/**
 * Brands `Class` (in its static block): its prototype gets the base brand and, with a `name`,
 * `Symbol.for('quorumlock.error.<name>')` (not enumerable: not in JSON or inspect), so every
 * instance of it or of a subclass carries them, whichever copy of this module made it.
 */
function brand(Class: abstract new (...args: never[]) => Error, name?: string): void {
  const key = name === undefined ? BASE_BRAND : Symbol.for(`quorumlock.error.${name}`);
  Object.defineProperty(Class.prototype, BASE_BRAND, { value: true });
  if (key !== BASE_BRAND) Object.defineProperty(Class.prototype, key, { value: true });
  brandOf.set(Class, key);
}

/**
 * `value instanceof Class`. For a class of ours: any object with its brand (made by any copy of
 * this module) and, failing that, what the prototype chain says. For a user's subclass of one of
 * ours, which inherits this check but has no brand: the prototype chain alone, so an instance of
 * our class is no instance of theirs.
 */
function isInstance(Class: object, value: unknown): boolean {
  const key = brandOf.get(Class);
  if (key !== undefined && typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[key] === true) return true;
  return ordinaryHasInstance.call(Class, value);
}

/**
 * The base class of every error quorumlock throws. `error instanceof QuorumlockError` holds for an
 * error of any copy of quorumlock (its ESM or CJS build, another version), the argument errors
 * included (they are TypeError / RangeError, and carry this class's brand); `code` says which.
 */
export abstract class QuorumlockError extends Error {
  /** Which error this is: one of `codes`, stable across versions. */
  abstract readonly code: ErrorCode;

  static {
    brand(this);
  }

  /** True for an error of this class (or a subclass) from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, value);
  }
}

// --- What errors carry: a round's votes ------------------------------------------------------------
// (quorum/votes.ts re-exports these for the algorithm.)

/**
 * Acquire and extend: 'locked' = every key now holds our value with the new TTL; 'taken' = held by
 * another owner (for extend: no longer ours); 'queued' = free, but kept for a waiter that came first;
 * 'quarantined' = set, but the member does not count: its data is younger than maxLockTtl
 * (restarted, flushed or new) or it is not a master.
 */
export type LockAnswer = 'locked' | 'taken' | 'queued' | 'quarantined';
/**
 * Extend: 'locked' = every key held our value and now has the new TTL; 'absent' = a key is gone
 * there (expired, evicted, deleted, or forgotten in a restart or flush); 'taken' = a key holds
 * another owner's value. Only 'locked' counts.
 */
export type ExtendAnswer = 'locked' | 'absent' | 'taken';
/** Release: 'released' = our keys were deleted here; 'absent' = nothing of ours was left to delete. */
export type ReleaseAnswer = 'released' | 'absent';
/**
 * No answer: 'timeout' = nothing within the per-member timeout; 'error' = the command failed;
 * 'pending' = the round was already decided (quorum reached or out of reach) before this member
 * answered, so it was not waited for.
 */
export type NoAnswer = 'timeout' | 'error' | 'pending';

/**
 * What one member said in one round. `Answer` is the round's kind of answer; the default covers
 * both rounds that leave a lock held (acquire and extend), so that `lock.votes`, which shows
 * whichever came last, reads as `readonly MemberVote[]`.
 */
export interface MemberVote<Answer extends string = LockAnswer | ExtendAnswer> {
  /** The member, as host:port/db. */
  member: string;
  /** Its answer, or why there is none: only the round's yes ('locked', 'released') counts, and only from a member that counts. */
  vote: Answer | NoAnswer;
  /** Milliseconds from the start of the round to this answer (0 for 'pending' and 'timeout' at the deadline). */
  ms: number;
  /** 'error': what failed (a refused connection, a script error, EpochChangedError, NotMasterError, ...). */
  error?: Error;
  /** 'taken': how much longer the holder's key lives on this member (the longest, for several keys). */
  heldForMs?: number;
  /** 'taken' / 'queued': our 0-based place in this member's line of waiters. */
  place?: number;
  /** 'quarantined': how long until this member counts again (very large for a non-master). */
  quarantinedForMs?: number;
  /** 'quarantined' for good while it lasts: why this member does not count (not a master, may evict lock keys, the same server as another member). */
  notCounting?: string;
  /** 'taken' / 'queued': part of this attempt's own hold is on the member all the same (a re-sent call: _acquired.lua, holdsAll). */
  holdsOwn?: true;
  /** 'taken': the key there holds this waiter's handover value: it abandons that value. */
  handedOver?: true;
  /**
   * An acquire's answer: the member's epoch it ran in, and whether that epoch is past its
   * quarantine (a fence sync may be bound only to such an epoch: src/quorum/fence.ts).
   */
  epoch?: {
    /** The epoch's id (unique per member): a later write bound to it is refused in any other. */
    id: string;
    /** Past its restart quarantine. */
    settled: boolean;
  };
  /** A fenced acquire's answer, and a fence round's refusal: the member's fence counter for the resources, and whether that reading is trusted. */
  fence?: {
    /** The highest token the member has issued for these resources. */
    highest: number;
    /** Whether that counter can be relied on (its epoch never lost data, or was given a floor). */
    trusted: boolean;
  };
}

/** A vote's notCounting when its member is the same server as `member`, another member: one failure domain, counted once. */
export const sameServerAs = (member: string): string => `the same server as ${member}`;
/** Whether a vote's notCounting says its member is the same server as another (sameServerAs). */
export const isSameServer = (notCounting: string | undefined): boolean => notCounting?.startsWith(sameServerAs('')) ?? false;

const votePhrases: Record<string, string> = {
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
  // A member that never counts shows as such, with its reason, whatever it answered: "quarantined"
  // would send the reader to the restart quarantine, which is not what keeps it out.
  const uncounted = votes.filter((vote) => vote.notCounting !== undefined);
  for (const vote of votes) if (!uncounted.includes(vote)) counts.set(vote.vote, (counts.get(vote.vote) ?? 0) + 1);
  const parts = [`${counts.get(yes) ?? 0}/${votes.length} ${votePhrases[yes] ?? yes}`];
  for (const [vote, phrase] of Object.entries(votePhrases)) {
    const count = counts.get(vote);
    if (!count || vote === yes) continue;
    const error = vote === 'error' ? votes.find((other) => other.error)?.error : undefined;
    parts.push(`${count} ${phrase}${error ? ` (${error.message})` : ''}`);
  }
  if (uncounted.length > 0) parts.push(`${uncounted.length} not counting (${[...new Set(uncounted.map((vote) => vote.notCounting))].join('; ')})`);
  return parts.join(', ');
}

// --- Bad arguments: refused before any I/O ----------------------------------------------------------

/**
 * An argument or option of the wrong type, e.g. a ttl given as a string: a TypeError (as before
 * this class existed) with code QUORUMLOCK_ERR_INVALID_ARG_TYPE, `parameter` naming it, and the
 * message `quorumlock: <parameter> <detail>`. `instanceof QuorumlockError` holds too.
 */
export class ArgumentTypeError extends TypeError {
  /** Which error this is (see `codes`): match on it rather than on the message. */
  readonly code = codes.QUORUMLOCK_ERR_INVALID_ARG_TYPE;

  constructor(
    /** The parameter or option, as the caller spelled it: 'ttl', 'members[2]', 'retryCount'. */
    readonly parameter: string,
    detail: string,
  ) {
    super(`quorumlock: ${parameter} ${detail}`);
  }

  static {
    brand(this, 'ArgumentTypeError');
  }

  /** True for an ArgumentTypeError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, value);
  }
}

/**
 * An argument or option of the right type but out of range, e.g. a driftFactor of 0.7: a
 * RangeError (as before this class existed) with code QUORUMLOCK_ERR_OUT_OF_RANGE, `parameter`
 * naming it, and the message `quorumlock: <parameter> <detail>`. `instanceof QuorumlockError` holds too.
 */
export class ArgumentRangeError extends RangeError {
  /** Which error this is (see `codes`): match on it rather than on the message. */
  readonly code = codes.QUORUMLOCK_ERR_OUT_OF_RANGE;

  constructor(
    /** The parameter or option, as the caller spelled it: 'ttl', 'members[2]', 'retryCount'. */
    readonly parameter: string,
    detail: string,
  ) {
    super(`quorumlock: ${parameter} ${detail}`);
  }

  static {
    brand(this, 'ArgumentRangeError');
  }

  /** True for an ArgumentRangeError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, value);
  }
}

/**
 * An option name the call does not take (a typo, or another client's setting): a TypeError (as
 * before this class existed) with code QUORUMLOCK_ERR_UNKNOWN_OPTION, `parameter` the name, and the
 * message `quorumlock: <name> <detail>`, which says what to use instead. `instanceof QuorumlockError` holds too.
 */
export class UnknownOptionError extends TypeError {
  /** Which error this is (see `codes`): match on it rather than on the message. */
  readonly code = codes.QUORUMLOCK_ERR_UNKNOWN_OPTION;

  constructor(
    /** The option name, as given. */
    readonly parameter: string,
    detail: string,
  ) {
    super(`quorumlock: ${parameter} ${detail}`);
  }

  static {
    brand(this, 'UnknownOptionError');
  }

  /** True for an UnknownOptionError from any copy of quorumlock (ESM or CJS build, another version). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isInstance(this, value);
  }
}

/** A bad argument: a TypeError or RangeError that also names the offending parameter in `parameter`. */
export type ArgumentError = ArgumentTypeError | ArgumentRangeError | UnknownOptionError;

/**
 * The error for a bad argument: an ArgumentTypeError (a TypeError: wrong type) or an
 * ArgumentRangeError (a RangeError: out of range), with the message `quorumlock: <parameter> <message>`.
 */
export function argumentError(Kind: typeof TypeError | typeof RangeError, parameter: string, message: string): ArgumentError {
  return Kind === RangeError ? new ArgumentRangeError(parameter, message) : new ArgumentTypeError(parameter, message);
}

/** The error for an option name the call does not take: an UnknownOptionError, the message `quorumlock: <name> <message>`. */
export function unknownOptionError(name: string, message: string): UnknownOptionError {
  return new UnknownOptionError(name, message);
}

// --- The lock's errors -------------------------------------------------------------------------------

/**
 * How one attempt ended:
 * - 'taken': at least one member holds the resource for another owner, and quorum was not reached;
 * - 'unavailable': not enough members answered (timeouts, errors) for a quorum (in the acquire
 *   round, or, fenced, in the fence round after it, where a member that no longer holds the lock,
 *   its key evicted or deleted, does not count either);
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
  /** How it ended: see AttemptOutcome. */
  outcome: AttemptOutcome;
  /** When the attempt started, in ms since acquire() was called. */
  startedMs: number;
  /** How long its round took, in ms. */
  elapsedMs: number;
  /** ttl − elapsed − drift at the decision: positive only when 'taken'/'unavailable' cut it short. */
  validityMs: number;
  /** What each member answered in this attempt's acquire round (never 'absent': that is an extend's answer). */
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
export class LockAcquireError extends QuorumlockError {
  /** 'LockAcquireError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'LockAcquireError';
  readonly code = errorCodes.QUORUMLOCK_ERR_ACQUIRE;
  /** The outcome of the last attempt. */
  readonly outcome: AttemptOutcome;

  constructor(
    /** The resources asked for, all or none. */
    readonly resources: readonly string[],
    /** Every attempt, in order. */
    readonly attempts: readonly AttemptRecord[],
    /** From the acquire() call to the end of the last rollback. */
    readonly elapsedMs: number,
    /** Why no further attempt was made ('clients closed': too many members' clients have ended, quit or given up reconnecting, for any to win). */
    readonly stoppedBecause: 'retries exhausted' | 'wait budget exhausted' | 'clients closed',
  ) {
    const last = attempts[attempts.length - 1];
    // Trust ends a restart quarantine only: for members that never count it cannot help, so it is
    // suggested only when some member is in its restart quarantine (no notCounting reason).
    const restarting = last?.votes.some((vote) => vote.vote === 'quarantined' && vote.notCounting === undefined) ?? false;
    const hints: Partial<Record<AttemptOutcome, string>> = {
      expired: `, but validity was used up (${Math.round(last?.validityMs ?? 0)} ms left)`,
      quarantined: restarting
        ? ': members whose data is younger than maxLockTtl (restarted, flushed or new) do not count until it has passed; if they are brand new, declare them trusted with redlock.trustMembers()'
        : ': members that never count cannot make a quorum, and trusting them would not change that: fix what their reason names, or lock on other members',
      unfenced:
        ': locked, but too few members have trusted fence counters to issue a token (a member that lost its data counts again once a token is written to it; after a majority lost its data at once, an operator names a floor at or above every token issued: redlock.restoreFencing(floor); only a brand-new deployment declares its members with redlock.trustMembers())',
    };
    const what = last ? `${describeVotes(last.votes)}${hints[last.outcome] ?? ''}` : 'no attempt fit in the wait budget';
    const count = `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`;
    super(`could not lock ${resourceList(resources)}: ${what}, after ${count} in ${Math.round(elapsedMs)} ms (${stoppedBecause})`);
    this.outcome = last?.outcome ?? 'unavailable';
  }

  static {
    brand(this, 'LockAcquireError');
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
export class LockExtendError extends QuorumlockError {
  /** 'LockExtendError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'LockExtendError';
  readonly code = errorCodes.QUORUMLOCK_ERR_EXTEND;

  constructor(
    /** The lock's resources. */
    readonly resources: readonly string[],
    /** See ExtendFailure. */
    readonly reason: ExtendFailure,
    /** What each member answered in the extend round; empty when none was sent ('released', 'expired', 'lost' before). */
    readonly votes: readonly MemberVote<string>[],
    /** How long the round took, ms (0 when none was sent). */
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
  }

  static {
    brand(this, 'LockExtendError');
  }
}

/**
 * The lock is no longer guaranteed: its validity ran out before an extension succeeded, or an
 * extension found it lost. It is the reason of `lock.signal` and of using()'s signal.
 */
export class LockLostError extends QuorumlockError {
  /** 'LockLostError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'LockLostError';
  readonly code = errorCodes.QUORUMLOCK_ERR_LOCK_LOST;
  /** Why, in detail (see LossCause): 'expired' for reason 'expired'; for 'extension failed', what the extension found. */
  readonly lostBecause: LossCause;

  constructor(
    /** The lock's resources. */
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

  static {
    brand(this, 'LockLostError');
  }
}

/**
 * A `{ reentrant: true }` acquire that could not nest: deeper than the Redlock's maxReentrancy,
 * reentrancy off (maxReentrancy 0), the lock the context holds no longer held, an exclusive
 * acquire inside a shared lock (an upgrade), or a fenced acquire inside an unfenced lock (the
 * nested handle would have no token). Nothing was sent to any member.
 */
export class ReentrancyError extends QuorumlockError {
  /** 'ReentrancyError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'ReentrancyError';
  readonly code = codes.QUORUMLOCK_ERR_REENTRANCY;

  constructor(
    /** The resources of the refused acquire. */
    readonly resources: readonly string[],
    /** How deep the refused handle would have nested: 1 for the first handle inside a using(). */
    readonly depth: number,
    message: string,
  ) {
    super(`quorumlock: ${message}`);
  }

  static {
    brand(this, 'ReentrancyError');
  }
}

/**
 * A member answered one of our scripts with a reply the protocol does not know (store/protocol.ts),
 * or an invariant of the wire layer failed: the member's vote is 'error' (this error), never a yes.
 */
export class ProtocolError extends QuorumlockError {
  /** 'ProtocolError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'ProtocolError';
  readonly code = codes.QUORUMLOCK_ERR_PROTOCOL;

  constructor(message: string) {
    super(`quorumlock: ${message}`);
  }

  static {
    brand(this, 'ProtocolError');
  }
}

/** A ProtocolError with the message `quorumlock: <message>`. */
export function protocolError(message: string): ProtocolError {
  return new ProtocolError(message);
}

// --- Epochs: a write bound to the epoch it was meant for (members/epochs.ts) -----------------------

/** A member refused a write bound to an epoch it is no longer in: it wrote nothing (a vote's error). */
export class EpochChangedError extends QuorumlockError {
  /** 'EpochChangedError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'EpochChangedError';
  readonly code = codes.QUORUMLOCK_ERR_EPOCH_CHANGED;

  constructor(
    /** The member, as host:port/db. */
    readonly member: string,
    /** The epoch the call was bound to (undefined: none was known). */
    readonly expected: string | undefined,
    /** The epoch the member is in: the next call binds to it. */
    readonly found: string,
  ) {
    super(`quorumlock: ${member} is in another epoch than the one this call was bound to (${expected ?? 'none'} -> ${found}): it wrote nothing`);
  }

  static {
    brand(this, 'EpochChangedError');
  }
}

/** A member refused a write: its server is not a plain master (src/lua/_bound.lua); it does not count (a vote's error). */
export class NotMasterError extends QuorumlockError {
  /** 'NotMasterError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'NotMasterError';
  readonly code = codes.QUORUMLOCK_ERR_NOT_MASTER;

  constructor(
    /** The member, as host:port/db. */
    readonly member: string,
  ) {
    super(`quorumlock: ${member} is not a plain master: it does not count`);
  }

  static {
    brand(this, 'NotMasterError');
  }
}

/** An operator's call (trust, restore-fencing) met an epoch that began after the call did: the member restarted or lost its data meanwhile, and is not trusted. */
export class EpochTooNewError extends QuorumlockError {
  /** 'EpochTooNewError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'EpochTooNewError';
  readonly code = codes.QUORUMLOCK_ERR_EPOCH_TOO_NEW;

  constructor(
    /** The member, as host:port/db. */
    readonly member: string,
    /** The epoch read, which may be another server process's. */
    readonly epoch: string,
  ) {
    super(
      `quorumlock: ${member} was not connected when this call began, or reconnected during it: its epoch ${epoch} may be a restarted process's, so it was not trusted (look at the member again, then retry)`,
    );
  }

  static {
    brand(this, 'EpochTooNewError');
  }
}

/** An EpochChangedError. */
export function epochChangedError(member: string, expected: string | undefined, found: string): EpochChangedError {
  return new EpochChangedError(member, expected, found);
}

/** A NotMasterError. */
export function notMasterError(member: string): NotMasterError {
  return new NotMasterError(member);
}

/** An EpochTooNewError. */
export function epochTooNewError(member: string, epoch: string): EpochTooNewError {
  return new EpochTooNewError(member, epoch);
}

// --- Semaphores --------------------------------------------------------------------------------------

/** What one member said when asked which permits it holds: its answer or why there was none. */
export interface PermitReading {
  /** The member, as host:port/db. */
  member: string;
  /** Per permit, the key's PTTL there (-2 absent); undefined when the member did not answer or does not count. */
  pttls: readonly number[] | undefined;
  /** Per permit, how many wait in its line there (ZCARD of the line); with pttls. */
  waiting?: readonly number[];
  /** Why there is no reading: the member's error, 'timeout', or why it does not count. */
  error?: string;
}

/**
 * semaphore.holders() could not tell: too few members answered to say what a quorum holds. It
 * carries what each member answered, like the lock's errors carry their votes.
 */
export class SemaphoreUnavailableError extends QuorumlockError {
  /** 'SemaphoreUnavailableError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'SemaphoreUnavailableError';
  readonly code = codes.QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE;

  constructor(
    /** The semaphore's name. */
    readonly semaphore: string,
    /** What each member answered, or why it did not. */
    readonly readings: readonly PermitReading[],
    /** The answers needed to say what a quorum holds. */
    readonly quorum: number,
  ) {
    const answered = readings.filter((reading) => reading.pttls !== undefined).length;
    const why = readings
      .filter((reading) => reading.pttls === undefined)
      .map((reading) => `${reading.member}: ${reading.error ?? 'no answer'}`)
      .join('; ');
    super(
      `could not read the holders of semaphore ${JSON.stringify(semaphore)}: ${answered} of ${readings.length} members answered, ${quorum} needed (${why})`,
    );
  }

  static {
    brand(this, 'SemaphoreUnavailableError');
  }
}

// --- Elections -----------------------------------------------------------------------------------------

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

/** The reason of leadership.signal: the leadership ended; `why` says how. */
export class LeadershipLostError extends QuorumlockError {
  /** 'LeadershipLostError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'LeadershipLostError';
  readonly code = codes.QUORUMLOCK_ERR_LEADERSHIP_LOST;
  constructor(
    /** The election's name. */
    readonly election: string,
    /** The ended leadership's term (its fencing token). */
    readonly term: number,
    /** How it ended: see LeadershipEnd. */
    readonly why: LeadershipEnd,
    options?: { cause?: unknown },
  ) {
    super(`quorumlock: the leadership of "${election}" (term ${term}) ended: ${leadershipPhrases[why]}`, options);
  }

  static {
    brand(this, 'LeadershipLostError');
  }
}

const leadershipPhrases: Record<LeadershipEnd, string> = {
  resigned: 'resigned',
  failing: 'extensions kept failing, and the leader stopped before its validity ran out',
  lost: 'its lock was lost',
};

/**
 * What one member's election record says, as leader() reads it. The shape store/protocol.ts
 * decodes (its LeaderReading), stated here because this module imports nothing; election.ts puts
 * the decoded one in a LeaderVote, so the compiler keeps the two alike.
 */
export interface LeaderReading {
  /** The leader its record names, if that record matches the lock. */
  leader:
    | {
        /** The leadership's term: its fencing token. */
        term: number;
        /** The leader's id (`election.id` of the campaigning process). */
        id: string;
      }
    | undefined;
  /** ms; -2 when the lock key is absent, -1 when it has no expiry (never set so by us). */
  pttl: number;
  /** The member's restart quarantine left, ms (0: past it, or off); very large when it is not a plain master. */
  quarantinedForMs: number;
}

/** One member's answer to a leader() read, or why there is none. */
export interface LeaderVote {
  /** The member, as host:port/db. */
  member: string;
  /** What its election record says; absent with `error`. */
  reading?: LeaderReading;
  /** Set when the member's answer cannot count: it failed, timed out, or the member does not count now. */
  error?: string;
}

/** election.leader() could not tell who leads: too few members answered, or no quorum names one leader yet. */
export class LeaderUnknownError extends QuorumlockError {
  /** 'LeaderUnknownError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'LeaderUnknownError';
  readonly code = codes.QUORUMLOCK_ERR_LEADER_UNKNOWN;
  constructor(
    /** The election's name. */
    readonly election: string,
    /** What each member said, or why it said nothing that counts. */
    readonly votes: readonly LeaderVote[],
    /** 'unavailable': too few answers that count; 'undecided': answers enough, but no quorum names one leader (a campaign or handover under way). */
    readonly why: 'unavailable' | 'undecided',
  ) {
    super(
      `quorumlock: cannot tell who leads "${election}": ${
        why === 'unavailable'
          ? 'too few members answered (an absence inside a restart quarantine is no answer)'
          : 'no quorum of members names one leader yet (an election or a handover is under way)'
      } (${votes.map((vote) => `${vote.member}: ${vote.error ?? describeLeaderReading(vote.reading)}`).join(', ')})`,
    );
  }

  static {
    brand(this, 'LeaderUnknownError');
  }
}

function describeLeaderReading(reading: LeaderReading | undefined): string {
  if (reading?.leader) return `term ${reading.leader.term}`;
  if (reading && reading.pttl !== -2) return 'held, no record';
  return reading && reading.quarantinedForMs > 0 ? `absent, but restarted (quarantined ${reading.quarantinedForMs} ms more)` : 'vacant';
}

// --- quorumlock/testing --------------------------------------------------------------------------------

/** resetMembers() refused to run: NODE_ENV=production, or no test runner detected (and no `outsideTests`). */
export class TestingOnlyError extends QuorumlockError {
  /** 'TestingOnlyError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'TestingOnlyError';
  readonly code = codes.QUORUMLOCK_ERR_TESTING_ONLY;

  constructor(message: string) {
    super(message);
  }

  static {
    brand(this, 'TestingOnlyError');
  }
}

/** resetMembers() could not use a member: its client was closed, ended before it was ready, or is a Cluster with no master. */
export class ResetMembersError extends QuorumlockError {
  /** 'ResetMembersError' (a subclass of Error would otherwise read 'Error' in stack traces and logs). */
  override readonly name = 'ResetMembersError';
  readonly code = codes.QUORUMLOCK_ERR_RESET_MEMBERS;

  constructor(
    /** The member, as host:port/db. */
    readonly member: string,
    /** What is wrong with it; the message is `quorumlock/testing: <member> <detail>`. */
    detail: string,
  ) {
    super(`quorumlock/testing: ${member} ${detail}`);
  }

  static {
    brand(this, 'ResetMembersError');
  }
}
