/**
 * The Lock handle (its own doc comment is on the class, which the API reference shows).
 *
 * Events (src/diagnostics.ts): a lock ends its holding exactly once on the plain channels, with
 * `release` or with `lost`, whichever comes first, so that a gauge fed by acquire:end, release and
 * lost stays right.
 */
import { inspect } from 'node:util';
import { clearBackgroundTimer, setBackgroundTimer, type BackgroundTimer } from '../clock/index.js';
import { channels, traced, tracing } from '../diagnostics.js';
import { LockExtendError, LockLostError } from '../errors.js';
import type { Member } from '../members/member.js';
import { checkTtl } from '../options/check.js';
import type { Settings } from '../options/settings.js';
import { extendOn, type ExtendAnswer } from '../quorum/extend.js';
import { releaseOn } from '../quorum/release.js';
import { describeVotes, type LockAnswer, type MemberVote, type ReleaseAnswer } from '../quorum/votes.js';
import { isShared } from '../store/protocol.js';

/** What `lock.release()` resolves with. */
export interface ReleaseResult {
  /**
   * true when at least a quorum of members confirmed our keys are gone there (deleted now, or
   * already expired): nobody can still count on this lock. When false, the rest expire by TTL.
   */
  freed: boolean;
  /** What each member answered ('pending': not waited for once a quorum confirmed; it runs the release when it gets to it). */
  votes: MemberVote<ReleaseAnswer>[];
  /** How long the release round took, ms. */
  elapsedMs: number;
}

/** What a Lock is made from: a won acquire (quorum/acquire-loop.ts, Won: the same object), or an outer lock's data for a nested handle. */
export interface HeldLock {
  id: string;
  resources: readonly string[];
  value: string;
  /** Until when (on the settings' clock) the lock is guaranteed. */
  deadline: number;
  votes: readonly MemberVote<LockAnswer | ExtendAnswer>[];
  fence: number | undefined;
  /** The waiter id its acquire kept a place in line as (Won.inLineAs): its release leaves every line. */
  inLineAs?: string | undefined;
  /** Handover values its acquire abandoned (Won.abandoned): its release takes them back. */
  abandoned?: string | undefined;
  /**
   * A handle on a lock held elsewhere (a nested handle, lock/reentrancy.ts): no validity of its
   * own, so no expiry timer and no 'lost' event of its own (the outer lock has both).
   */
  borrowed?: boolean;
}

/** What a Lock needs from its Redlock: the members, their quorum, and the settings. */
export interface LockContext {
  readonly members: readonly Member[];
  /** quorumOf(members.length), computed once: every round of the Redlock's counts to it. */
  readonly quorum: number;
  readonly settings: Settings;
}

/**
 * A held lock: what it covers, how long it is guaranteed, and the means to extend and release it.
 * Made by `Redlock.acquire()`, `tryAcquire()` and `using()`. extend() renews this same handle (no
 * new object to swap in); release() is idempotent. `signal` aborts the moment the lock stops being
 * guaranteed; `await using` releases it at the end of the block.
 */
export class Lock implements AsyncDisposable {
  /** What the lock covers, all or none: the names given to acquire, frozen. */
  readonly resources: readonly string[];
  /** The random value stored on the members: the capability to extend and release. Keep it secret. */
  readonly value: string;
  readonly #context: LockContext;
  #deadline: number;
  #votes: readonly MemberVote<LockAnswer | ExtendAnswer>[];
  /** HeldLock.inLineAs: left with the release. */
  readonly #inLineAs: string | undefined;
  /** HeldLock.abandoned: taken back with the release. */
  readonly #abandoned: string | undefined;
  #released = false;
  #extending: Promise<unknown> = Promise.resolve();
  /** Created on first use of `signal`, so locks nobody watches cost no timer. */
  #controller: AbortController | undefined;
  /**
   * Whether the expiry timer runs: once `signal` is read, or from the start when 'quorumlock:lost'
   * had subscribers as the lock was made (they are told of an expiry nobody else watches).
   */
  #expiryWatched: boolean;
  #expiryTimer: BackgroundTimer | undefined;
  #lost: LockLostError | undefined;

  /**
   * With `{ fencing: true }`: a token that is larger than every token issued before for any of
   * these resources, by any client. Hand it to the protected resource with each write, and have it
   * reject writes carrying a smaller token than the largest it has seen (README, "Fencing").
   */
  readonly fence: number | undefined;

  /** Names this lock in logs and diagnostics events (`lockId`): unique per process, not secret, no capability. */
  readonly id: string;

  /** A shared (read) lock, from `{ shared: true }`: others may hold it shared too, nobody exclusively. */
  get shared(): boolean {
    return isShared(this.value);
  }

  /** @internal Made by Redlock (acquire, tryAcquire, using), never by users. */
  constructor(context: LockContext, held: HeldLock) {
    this.#context = context;
    this.id = held.id;
    // The acquire's own array when it is frozen already (Redlock freezes it): members made its
    // keys for it once (serverTopology in members/redis-member.ts), and release() reuses them.
    this.resources = Object.isFrozen(held.resources) ? held.resources : Object.freeze([...held.resources]);
    this.value = held.value;
    this.#deadline = held.deadline;
    this.#votes = held.votes;
    this.fence = held.fence;
    this.#inLineAs = held.inLineAs;
    this.#abandoned = held.abandoned;
    // One boolean check when nobody listens: no timer for locks nobody observes.
    this.#expiryWatched = held.borrowed !== true && channels.lost.hasSubscribers;
    if (this.#expiryWatched) this.#armExpiry();
  }

  /**
   * Milliseconds for which the lock is still guaranteed: ttl − drift from the start of the last
   * successful acquire or extend round, less the time since, on the monotonic clock (earlier, if
   * a failed extend with a shorter ttl may have shortened the keys). 0 once expired, lost or released.
   */
  remainingMs(): number {
    // Lost: a quorum said the keys are gone or taken, or the validity ran out. Whatever our keys
    // still hold somewhere guarantees nothing: another owner may hold the lock now.
    if (this.#released || this.#lost) return 0;
    return Math.max(0, this.#deadline - this.#context.settings.clock.now());
  }

  /** True until release() is called or the validity runs out. */
  get held(): boolean {
    return this.remainingMs() > 0;
  }

  /** True once release() was called (whether or not a quorum confirmed it): extend() is refused from then on. */
  get released(): boolean {
    return this.#released;
  }

  /**
   * How each member voted in the last successful acquire or extend round. An extend round may
   * also show 'absent': our keys were gone on that member.
   */
  get votes(): readonly MemberVote<LockAnswer | ExtendAnswer>[] {
    return this.#votes;
  }

  /**
   * Aborted, with a LockLostError as reason, the moment the lock's validity runs out (a timer set
   * to the deadline, re-armed by every extension) or an extension finds the lock lost (a quorum
   * says the keys are ours no longer, or its quorum came after the previous deadline). An
   * extension that only lacked answers does not abort it: the lock holds until its deadline.
   * Never aborted by release(). Pass it to the work the lock protects.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#lost) this.#controller.abort(this.#lost);
      else if (!this.#expiryWatched) {
        this.#expiryWatched = true;
        this.#armExpiry();
      }
    }
    return this.#controller.signal;
  }

  #armExpiry(): void {
    clearBackgroundTimer(this.#context.settings.clock, this.#expiryTimer);
    if (!this.#expiryWatched || this.#released || this.#lost) return;
    const remaining = this.remainingMs();
    if (remaining <= 0) return this.#lose(new LockLostError(this.resources, 'expired', { lostBecause: 'expired' }));
    // In the background: a lock nobody works under must not keep the process alive. Re-checked
    // when it fires, since an extension may have moved the deadline meanwhile.
    this.#expiryTimer = setBackgroundTimer(this.#context.settings.clock, () => this.#armExpiry(), remaining);
  }

  #lose(error: LockLostError): void {
    if (this.#released || this.#lost) return;
    this.#lost = error;
    clearBackgroundTimer(this.#context.settings.clock, this.#expiryTimer);
    this.#context.settings.logger.warn(
      {
        lockId: this.id,
        resources: this.resources,
        reason: error.reason,
        lostBecause: error.lostBecause,
        cause: error.cause instanceof Error ? error.cause.message : undefined,
      },
      'lock lost',
    );
    // The end of holding when no release came first (#lose does nothing after release()).
    if (channels.lost.hasSubscribers)
      channels.lost.publish({ lockId: this.id, resources: this.resources, reason: error.reason, lostBecause: error.lostBecause });
    this.#controller?.abort(error);
  }

  /**
   * Sets the keys' expiry to `ttl` ms on every member that still holds our value. Succeeds only
   * when a quorum did so before the previous deadline, and validity is left; it is then counted
   * from this round's start. Extends are serialized: concurrent calls run one after another.
   * Throws LockExtendError: with reason 'unavailable' (too few answers) the lock stays held for
   * remainingMs() and a later extend may succeed; with 'lost', 'lapsed' or 'late' it is lost and
   * `signal` aborts.
   */
  extend(ttl: number): Promise<this> {
    const { settings } = this.#context;
    try {
      checkTtl(ttl, settings);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.#extending.then(() =>
      tracing.extend.hasSubscribers
        ? traced(
            tracing.extend,
            { lockId: this.id, resources: this.resources, ttl },
            () => this.#extendOnce(ttl),
            () => ({ remainingMs: this.remainingMs() }),
          )
        : this.#extendOnce(ttl),
    );
    this.#extending = run.catch(() => undefined);
    return run;
  }

  async #extendOnce(ttl: number): Promise<this> {
    const { members, quorum, settings } = this.#context;
    if (this.#released) throw new LockExtendError(this.resources, 'released', [], 0);
    // Once lost, always lost: the work under it was told to stop, and a later success would not
    // undo that. Only a real loss gets here; a round that merely lacked answers is no loss.
    // (Before the expiry check: a lost lock's remainingMs() is 0 too, and 'lost' says why.)
    if (this.#lost) throw new LockExtendError(this.resources, 'lost', [], 0, this.#lost.lostBecause);
    // The doc's rule: re-acquire only within the validity time. Past it, another owner may
    // already hold the resource, and extending would hide that gap from the caller.
    if (this.remainingMs() <= 0) throw new LockExtendError(this.resources, 'expired', [], 0);

    const result = await extendOn({ members, quorum, settings, resources: this.resources, value: this.value, ttl, previousDeadline: this.#deadline });
    const { round } = result;
    if (this.#released) throw new LockExtendError(this.resources, 'released', round.votes, round.elapsedMs);
    // Lost during the round (the expiry timer ran out meanwhile): a quorum decided in time would
    // not have let the deadline pass, so this one did not count.
    const lostMeanwhile = this.#lost as LockLostError | undefined; // TypeScript forgets the await
    if (lostMeanwhile) throw new LockExtendError(this.resources, 'lost', round.votes, round.elapsedMs, lostMeanwhile.lostBecause);
    // Success or not, this is the deadline that holds now. A failed round's commands may still
    // run on members (they were sent; Redis cannot cancel them) and set our keys to expire `ttl`
    // after: with a ttl shorter than what was left, the old deadline no longer holds. Stragglers
    // of earlier rounds run before this round's command on the same member (Member.#call: one
    // ordered path per connection, kept by ioredis' re-sends), so the last round's ttl is the one
    // that stays.
    this.#deadline = result.deadline;
    if (result.extended) {
      this.#votes = round.votes;
      this.#armExpiry();
      if (settings.debugging()) settings.logger.debug({ lockId: this.id, resources: this.resources, remainingMs: this.remainingMs() }, 'lock extended');
      if (channels.extend.hasSubscribers) channels.extend.publish({ lockId: this.id, resources: this.resources, extended: true, elapsedMs: round.elapsedMs });
      return this;
    }
    const { failure: reason, lostBecause } = result;
    settings.logger.warn(
      { lockId: this.id, resources: this.resources, reason, lostBecause, votes: describeVotes(round.votes), remainingMs: this.remainingMs() },
      'lock extension failed',
    );
    const error = new LockExtendError(this.resources, reason, round.votes, round.elapsedMs, lostBecause);
    if (channels.extend.hasSubscribers)
      channels.extend.publish({
        lockId: this.id,
        resources: this.resources,
        extended: false,
        elapsedMs: round.elapsedMs,
        reason,
        ...(lostBecause ? { lostBecause } : {}),
      });
    if (reason === 'unavailable') {
      // Not lost: Q0 (and whoever this round reached) still holds our value until the deadline,
      // and nobody said otherwise. The expiry timer follows the (possibly earlier) deadline.
      this.#armExpiry();
    } else {
      this.#lose(new LockLostError(this.resources, 'extension failed', { cause: error, lostBecause }));
    }
    throw error;
  }

  /**
   * Compare-and-delete, sent to every member. Resolves as soon as a quorum confirmed (the others
   * show as 'pending' and run it when they get to it), or after nodeTimeout. Never throws for
   * members that are down; the result says what each answered. Safe to call more than once: each
   * call sends the release again and resolves with what it found, but only the first, if the lock
   * was not lost before, publishes on 'quorumlock:release' and writes the lock's end log line.
   */
  async release(): Promise<ReleaseResult> {
    if (!tracing.release.hasSubscribers) return this.#releaseOnce();
    return traced(
      tracing.release,
      { lockId: this.id, resources: this.resources },
      () => this.#releaseOnce(),
      ({ freed, elapsedMs }) => ({ freed, elapsedMs }),
    );
  }

  async #releaseOnce(): Promise<ReleaseResult> {
    const { members, quorum, settings } = this.#context;
    // Set before the round, so that a concurrent second call does not count as the first, and a
    // loss found meanwhile is not reported: holding ends with this release.
    const endsHolding = !this.#released && !this.#lost;
    // Past its validity with nobody watching the expiry (no #lose): this release ends a lock
    // that was no longer guaranteed, which its one end line says.
    const overdueMs = settings.clock.now() - this.#deadline;
    this.#released = true;
    clearBackgroundTimer(settings.clock, this.#expiryTimer);
    // A release burst (thousands of locks released at once) queues on each member: a member still
    // answering our earlier calls is waited for while the lock would still be valid, so the
    // release is confirmed rather than reported unconfirmed.
    const limitMs = Math.max(settings.nodeTimeout, -overdueMs);
    const round = await releaseOn({
      members,
      quorum,
      settings,
      resources: this.resources,
      value: this.value,
      settle: 'quorum',
      limitMs,
      leaving: this.#inLineAs,
      abandoned: this.#abandoned,
    });
    // A release round counts 'released' and 'absent' toward quorum: won = freed on a quorum.
    const freed = round.won;
    // Only the release that ends the holding, in the log as in the events: a second release(), or
    // one after the lock was lost ('lock lost' said so), is no new end, and a reader counting
    // ends (or a gauge) would count it twice.
    if (endsHolding) {
      this.#logEnd(freed, overdueMs, round.elapsedMs, round.votes);
      if (channels.release.hasSubscribers) channels.release.publish({ lockId: this.id, resources: this.resources, freed, elapsedMs: round.elapsedMs });
    }
    return { freed, votes: round.votes, elapsedMs: round.elapsedMs };
  }

  /** The lock's one end line, when a release ends it (#lose writes the other kind, 'lock lost'). */
  #logEnd(freed: boolean, overdueMs: number, elapsedMs: number, votes: readonly MemberVote<ReleaseAnswer>[]): void {
    const { logger } = this.#context.settings;
    const lock = { lockId: this.id, resources: this.resources };
    if (!freed) logger.warn({ ...lock, votes: describeVotes(votes, 'released') }, 'lock release not confirmed by a quorum; the keys expire by their TTL');
    else if (overdueMs >= 0) logger.warn({ ...lock, overdueMs, elapsedMs }, 'lock released after its validity had run out: the work under it ran unprotected');
    else if (this.#context.settings.debugging()) logger.debug({ ...lock, elapsedMs }, 'lock released');
  }

  /** What JSON.stringify (and so a pino log line) shows of a lock: never the value. */
  toJSON(): {
    /** `lock.id`. */
    id: string;
    /** `lock.resources`. */
    resources: readonly string[];
    /** `lock.remainingMs()` at the time of the call. */
    remainingMs: number;
    /** `lock.released`. */
    released: boolean;
    /** `lock.fence`, when fenced. */
    fence?: number;
  } {
    const json = { id: this.id, resources: this.resources, remainingMs: this.remainingMs(), released: this.#released };
    return this.fence === undefined ? json : { ...json, fence: this.fence };
  }

  /** What console.log and util.inspect show: toJSON()'s fields, never the value. */
  [inspect.custom](): string {
    return `Lock ${inspect(this.toJSON())}`;
  }

  /** `await using lock = await redlock.acquire(...)` releases at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#released) await this.release();
  }
}
