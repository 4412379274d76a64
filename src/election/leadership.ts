/**
 * A won election: the election's lock, held fenced and kept extended, and what the leader needs
 * from it (its term, a signal, resign()).
 *
 * Keeping it (not keep-extended.ts, which using() uses, because a leadership also stops early):
 *   - extend when 2/3 of the ttl is left (every third of it); after each success, re-write the
 *     leader record so that readers find it for as long as the lock lives;
 *   - an extension that only lacked answers is retried after 1/4 of what is left, as
 *     keep-extended does;
 *   - STOP MARGIN: once the validity falls to 1/5 of the ttl without an extension succeeding, the
 *     leadership ends ('failing'): the signal aborts while the lock is still guaranteed for
 *     about ttl/5, so the leader's work can stop before any successor can be elected (a
 *     successor needs the keys gone from a quorum, which is after our deadline). The lock is then
 *     released, so that a successor need not wait for it to expire where members answer.
 *   - the lock's own signal (at its deadline, or an extension that found it lost) ends it too
 *     ('lost'): that covers an event loop that stalled past both timers.
 * A stalled event loop cannot be interrupted by any timer: a leader that pauses past its validity
 * learns it only when it runs again. That is what the term is for: pass it with every write, and
 * have the protected side refuse terms below the highest it has seen (docs/elections.md).
 */
import { clearBackgroundTimer, setBackgroundTimer, type BackgroundTimer } from '../clock/index.js';
import type { Lock } from '../lock/lock.js';
import type { Settings } from '../options/settings.js';
import { LockExtendError } from '../errors.js';
import { LeadershipLostError, type LeadershipEnd } from './errors.js';

/** Extend when this share of the ttl is left. */
export const EXTEND_SHARE = 2 / 3;
/** Stop leading when this share of the ttl is left and no extension succeeded. */
export const STOP_SHARE = 1 / 5;
/** A failed extension is retried after this share of the remaining validity (keep-extended.ts). */
const RETRY_SHARE = 0.25;

export interface LeadershipContext {
  readonly name: string;
  readonly id: string;
  readonly ttl: number;
  readonly settings: Settings;
  /** Writes the leader record on every member (bounded by nodeTimeout each); resolves with how many wrote it. */
  announce(lock: Lock, term: number): Promise<number>;
}

/**
 * A won election, from campaign(): leading until `signal` aborts or resign() is called. The lock
 * behind it is kept extended by itself, and it stops leading while the lock is still guaranteed
 * when extensions keep failing, so a successor is never elected while this leader still acts.
 */
export class Leadership {
  /** The fencing token of the election's lock: larger than every term before, of any leader. */
  readonly term: number;
  /** This leader's id (the election's `id`), as leader() names it to observers. */
  readonly id: string;
  /** The election's name. */
  readonly election: string;
  readonly #context: LeadershipContext;
  readonly #lock: Lock;
  readonly #controller = new AbortController();
  #extendTimer: BackgroundTimer | undefined;
  #stopTimer: BackgroundTimer | undefined;

  /** @internal Made by Election.campaign(). */
  constructor(context: LeadershipContext, lock: Lock) {
    this.#context = context;
    this.#lock = lock;
    this.term = lock.fence!;
    this.id = context.id;
    this.election = context.name;
    const lost = () => this.#end('lost', lock.signal.reason);
    if (lock.signal.aborted) lost();
    else lock.signal.addEventListener('abort', lost, { once: true });
    this.#schedule();
  }

  /**
   * Aborts, with a LeadershipLostError, the moment this process stops leading: resign(), a lost
   * lock, or extensions failing until only the stop margin (ttl/5) of validity is left. Stop
   * acting as the leader when it does.
   */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Whether this process still leads: false once `signal` aborted. */
  get leading(): boolean {
    return !this.#controller.signal.aborted;
  }

  /** How long the leadership is still guaranteed, ms (0 once ended). Check it before acting on the term. */
  remainingMs(): number {
    return this.leading ? this.#lock.remainingMs() : 0;
  }

  /** Gives up the leadership: aborts `signal` ('resigned') and releases the lock, so the next candidate is elected at once. */
  async resign(): Promise<void> {
    this.#end('resigned');
    await this.#lock.release();
  }

  /** @internal The lock under the leadership (the CLI stops its command by the lock's deadline). */
  get lock(): Lock {
    return this.#lock;
  }

  #clear(): void {
    const { clock } = this.#context.settings;
    clearBackgroundTimer(clock, this.#extendTimer);
    clearBackgroundTimer(clock, this.#stopTimer);
  }

  #schedule(): void {
    if (!this.leading) return;
    const { clock } = this.#context.settings;
    const { ttl } = this.#context;
    const remaining = this.#lock.remainingMs();
    this.#clear();
    this.#extendTimer = setBackgroundTimer(clock, () => this.#extendNow(), Math.max(0, remaining - ttl * EXTEND_SHARE));
    this.#armStop();
  }

  #armStop(): void {
    const { clock } = this.#context.settings;
    clearBackgroundTimer(clock, this.#stopTimer);
    const margin = this.#context.ttl * STOP_SHARE;
    const remaining = this.#lock.remainingMs();
    if (remaining <= margin) return this.#end('failing');
    // Re-checked when it fires: an extension may have moved the deadline meanwhile.
    this.#stopTimer = setBackgroundTimer(clock, () => this.#armStop(), remaining - margin);
  }

  #extendNow(): void {
    if (!this.leading) return;
    const lock = this.#lock;
    lock.extend(this.#context.ttl).then(
      () => {
        if (!this.leading) return;
        this.#schedule();
        // The record follows the lock's new expiry; a member that misses it reads "held, no
        // record" until the next one, which leader() reports as undecided, never as another leader.
        void this.#context.announce(lock, this.term);
      },
      (error: unknown) => {
        if (!this.leading) return;
        // Lost: lock.signal aborted, and #end ran. Otherwise the lock holds until its deadline: retry.
        if (error instanceof LockExtendError && error.reason !== 'unavailable') return;
        const remaining = lock.remainingMs();
        if (remaining <= 0) return;
        const { clock } = this.#context.settings;
        clearBackgroundTimer(clock, this.#extendTimer);
        this.#extendTimer = setBackgroundTimer(clock, () => this.#extendNow(), remaining * RETRY_SHARE);
        this.#armStop();
      },
    );
  }

  #end(why: LeadershipEnd, cause?: unknown): void {
    if (!this.leading) return;
    this.#clear();
    const { logger } = this.#context.settings;
    const error = new LeadershipLostError(this.election, this.term, why, cause === undefined ? undefined : { cause });
    if (why !== 'resigned') logger.warn({ election: this.election, term: this.term, why, lockId: this.#lock.id }, 'leadership lost');
    this.#controller.abort(error);
    // No longer leading: let a successor in now rather than at the keys' expiry (resign() releases itself).
    if (why !== 'resigned') void this.#lock.release().catch(() => undefined);
  }

  /** What JSON.stringify (and so a log line) shows of a leadership: never its lock's value. */
  toJSON(): {
    /** The election's name. */
    election: string;
    /** This leader's id. */
    id: string;
    /** Its term. */
    term: number;
    /** Whether it still leads. */
    leading: boolean;
    /** How long its leadership is still guaranteed, ms. */
    remainingMs: number;
  } {
    return { election: this.election, id: this.id, term: this.term, leading: this.leading, remainingMs: this.remainingMs() };
  }
}
