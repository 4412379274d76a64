/**
 * The acquire: attempts (attempt.ts) until one wins, the retries run out, the wait budget is spent
 * or the signal aborts. A small state machine:
 *
 *   try → won
 *       → refused → stopped (retries used up)
 *                 → wait(reason) → won (handed over meanwhile)
 *                                → try
 *   try → stopped (no whole nodeTimeout left in the budget), or aborted (the signal)
 *
 * The waiting between attempts (lines of waiters, wake-ups, hand-overs) is behind one interface,
 * `Waiting` (wait.ts), which also says where each attempt stands in line. It starts at the first
 * refusal (until then the attempt is out of line), or with the first attempt when the Redlock
 * listens already. This file keeps the retry policy and the record: the budget, the attempts
 * made, the last rollback, the events.
 *
 * Every acquire ends within its budget (plus the last rollback, itself bounded by nodeTimeout): no
 * round outlives the time left (a member silent for nodeTimeout times out sooner), and no wait
 * runs past the budget.
 */
import { driftMs } from '../clock/index.js';
import { channels } from '../diagnostics.js';
import { LockAcquireError, type AttemptRecord } from '../errors.js';
import { newWaiterId } from '../store/keys.js';
import { sharedName } from '../store/protocol.js';
import { attemptLock, type AttemptRequest, type LockTarget, type Refused, type Win } from './attempt.js';
import { describeVotes } from './votes.js';
import { WaitInLine, type Kept, type Waiting, type WaitingSpec } from './wait.js';

/**
 * A won acquire. `inLineAs`: the waiter id, when the acquire took a place in line: the winner keeps
 * it until its release, which leaves every line (release.lua), instead of a round of its own now.
 * `abandoned`: handover values a member may still hold for it, which its release takes back.
 */
/**
 * A won acquire, as its Lock takes it (lock/lock.ts, HeldLock): the attempt's Win itself, named
 * (`id`) and with what its release must also do (leave the lines it kept a place in, take back
 * abandoned hand-overs). The same object throughout: no copy between the attempt and the Lock.
 */
export type Won = Win & { id: string; resources: readonly string[]; inLineAs?: string | undefined; abandoned?: string | undefined };

/** One acquire: what it locks, where, under which policy, and the Redlock's wake-ups. */
export interface RetryRequest extends Omit<WaitingSpec, 'place' | 'budgetEnd'> {
  /** The votes that win a round on `members` (quorumOf, known to the Redlock: LockContext). */
  quorum: number;
  /** Names this acquire in events and in line: unique, not secret. A new waiter id by default. */
  lockId?: string | undefined;
}

export async function acquireWithRetries(request: RetryRequest): Promise<Won> {
  const { members, quorum, settings, resources, ttl, policy } = request;
  const lockId = request.lockId ?? newWaiterId(request.notifications.listener);
  const run = new AcquireRun(request, lockId);
  const target: LockTarget = { members, quorum, settings, resources, ttl, fencing: policy.fencing, shared: policy.shared, signal: policy.signal };
  // One place for the whole acquire, its ticket read as it arrives: the order of arrival decides
  // who is next. A shared caller's is marked as such (protocol.ts, SHARED_MARK): readers at the
  // head of a line enter together, and none passes a writer that arrived before it.
  const place = { id: policy.shared ? sharedName(lockId) : lockId, ticket: settings.clock.epochMs() };
  // Object.assign, not `{ ...a, b }`, on the paths every acquire takes (docs/internals.md,
  // "Object spread on Node 20").
  const outOfLine = { waiter: Object.assign({}, place, { leaseMs: 0 }), handover: undefined };
  const startWaiting = (watching: boolean): Waiting => new WaitInLine(Object.assign({}, request, { place, budgetEnd: run.budgetEnd }), watching);
  // In line from the first attempt only when the Redlock listens already (wait.ts says why).
  let waiting = policy.retryCount > 0 && request.notifications.listening ? startWaiting(true) : undefined;
  try {
    for (let attempt = 1; ; attempt++) {
      // try
      policy.signal?.throwIfAborted();
      const deadlines = run.deadlines(attempt);
      if (!deadlines) throw await run.stopped('wait budget exhausted');
      const result = await attemptLock(Object.assign({}, target, { deadlines }, waiting?.next(attempt) ?? outOfLine));
      if (result.won) return run.won(result, attempt, waiting?.kept(result.value));
      // refused
      run.refused(attempt, result);
      // Members whose clients have ended (quit, given up reconnecting) answer nothing again: past a minority, no retry can win.
      if (members.filter((member) => member.clientEnded === true).length > members.length - quorum) throw await run.stopped('clients closed');
      if (attempt > policy.retryCount) throw await run.stopped('retries exhausted');
      // wait(reason), then try again, unless a majority handed the lock over meanwhile
      waiting ??= startWaiting(false);
      const handed = await waiting.wait(result);
      if (handed) return run.won(handed, attempt, waiting.kept(handed.value), true);
    }
  } catch (error) {
    // Rejecting (retries or budget used up, aborted): nothing this call set may be left behind.
    // Not waiting any more, first: a release from now on hands this waiter nothing (its presence
    // ends with the watch: waiting/notifications.ts). Closed here, so not again below.
    const stopped = waiting;
    waiting = undefined;
    stopped?.close();
    await run.rollback;
    stopped?.leave();
    run.failed(error);
    throw error;
  } finally {
    // Won (a rejection closed it above): the caller has the lock before the watch's presence
    // UNSUBSCRIBEs are written, one write call per member, each about as costly as a round's
    // sends. The watch ends when a member reads its UNSUBSCRIBE, not when it is written: a
    // release that runs there meanwhile is one that could have run before the command arrived.
    const won = waiting;
    if (won) setImmediate(() => won.close());
  }
}

/** One acquire's record: its start and budget, its attempts, its last rollback, its events and log lines. */
class AcquireRun {
  readonly #request: RetryRequest;
  readonly #lockId: string;
  readonly #begin: number;
  readonly #attempts: AttemptRecord[] = [];
  /** When the latest attempt started, from the beginning. */
  #startedMs = 0;
  /**
   * The latest refused attempt's rollback. It runs alongside the wait: it goes out before the next
   * attempt on every connection anyway. Only the last one is awaited, on every way out.
   */
  rollback: Promise<unknown> = Promise.resolve();

  constructor(request: RetryRequest, lockId: string) {
    const { resources, ttl } = request;
    this.#request = request;
    this.#lockId = lockId;
    this.#begin = request.settings.clock.now();
    if (channels.acquireStart.hasSubscribers) channels.acquireStart.publish({ lockId, resources, ttl });
  }

  get budgetEnd(): number {
    return this.#begin + this.#request.policy.waitTimeout;
  }

  /** The deadlines of attempt `attempt`, or undefined when the budget has no room for it. */
  deadlines(attempt: number): AttemptRequest['deadlines'] | undefined {
    const { settings, policy, ttl } = this.#request;
    this.#startedMs = settings.clock.now() - this.#begin;
    const leftMs = policy.waitTimeout - this.#startedMs;
    const timeoutMs = Math.min(settings.nodeTimeout, leftMs);
    // A retry with less than a whole nodeTimeout left would be cut short, and slow members
    // would read as an outage where there was only contention: stop instead.
    if (timeoutMs <= 0 || (attempt > 1 && timeoutMs < settings.nodeTimeout)) return undefined;
    // nodeTimeout is how long a member may stay silent; a member still answering our earlier
    // calls (a burst of ours ahead of this one) is waited for up to what is left of the budget,
    // and never past the lock's validity (a quorum after ttl - drift could only be 'expired').
    // The budget holds: no round outlives `leftMs` (round.ts).
    return { timeoutMs, limitMs: Math.min(leftMs, ttl - driftMs(ttl, settings.driftFactor)) };
  }

  refused(attempt: number, result: Refused): void {
    const { round, outcome, validityMs } = result;
    const { logger } = this.#request.settings;
    this.#attempts.push({ attempt, outcome, startedMs: this.#startedMs, elapsedMs: round.elapsedMs, validityMs, votes: round.votes });
    if (this.#request.settings.debugging())
      logger.debug({ lockId: this.#lockId, resources: this.#request.resources, attempt, outcome, votes: describeVotes(round.votes) }, 'lock attempt failed');
    this.rollback = result.rollback;
  }

  /** Won, by attempt `attempt`'s round or by a hand-over after it (`handed`). */
  won(result: Win, attempt: number, kept: Kept | undefined, handed = false): Won {
    const { settings, resources, ttl } = this.#request;
    const { clock, logger } = settings;
    const elapsedMs = () => clock.now() - this.#begin;
    if (settings.debugging())
      logger.debug({ lockId: this.#lockId, resources, attempt, elapsedMs: elapsedMs(), remainingMs: result.deadline - clock.now() }, 'lock acquired');
    const { fence } = result;
    if (channels.acquireEnd.hasSubscribers)
      channels.acquireEnd.publish({
        lockId: this.#lockId,
        resources,
        ttl,
        acquired: true,
        elapsedMs: elapsedMs(),
        attempts: attempt,
        fence,
        ...(handed ? { handedOver: true as const } : {}),
      });
    return Object.assign(result, { id: this.#lockId, resources }, kept);
  }

  /** The error of an acquire that stopped trying, once its last rollback is done. */
  async stopped(because: LockAcquireError['stoppedBecause']): Promise<LockAcquireError> {
    await this.rollback;
    const { settings, resources } = this.#request;
    const error = new LockAcquireError(resources, this.#attempts, settings.clock.now() - this.#begin, because);
    if (settings.debugging())
      settings.logger.debug(
        { lockId: this.#lockId, resources, attempts: this.#attempts.length, outcome: error.outcome, elapsedMs: error.elapsedMs },
        'lock not acquired',
      );
    return error;
  }

  failed(error: unknown): void {
    const { settings, resources, ttl } = this.#request;
    const outcome = error instanceof LockAcquireError ? error.outcome : 'aborted';
    const attempts = this.#attempts.length;
    if (channels.acquireEnd.hasSubscribers)
      channels.acquireEnd.publish({
        lockId: this.#lockId,
        resources,
        ttl,
        acquired: false,
        elapsedMs: settings.clock.now() - this.#begin,
        attempts,
        outcome,
      });
  }
}
