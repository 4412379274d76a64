/**
 * The waiting between attempts, behind one interface (`Waiting`): the acquire loop
 * (acquire-loop.ts) asks it where the next attempt stands in line, and, after a refusal, waits on
 * it. What it hides: the lines of waiters (waiting/line.ts), the wake-ups by pub/sub
 * (waiting/notifications.ts) and the hand-overs (handover.ts).
 *
 * The first attempt does not join the line, so an uncontended acquire costs one script call and
 * nothing after: the loop starts the waiting (a WaitInLine) only at the first refusal, and sends
 * the first attempt out of line itself. When it is refused, the waiter subscribes to release announcements and tries
 * again at once, this time taking its place in line by its arrival ticket. From then on it sleeps
 * until a majority of members name it first in line after a release (or hand it the lock), or
 * until the timed retry (retryDelay ± jitter, sooner if it is first and the holder's key expires
 * sooner). A waiter for several resources keeps its places only by turns (LineTurns), so that it
 * cannot keep a free resource from everyone for as long as another of its resources is held.
 */
import { deadlineOf, driftMs } from '../clock/index.js';
import type { Member } from '../members/member.js';
import type { AttemptPolicy, Settings } from '../options/settings.js';
import { quorumOf } from '../tally.js';
import { leaseFor, LineTurns, type Waiter } from '../waiting/line.js';
import type { Notifications, Watch } from '../waiting/notifications.js';
import type { AttemptRequest, Refused, Win } from './attempt.js';
import { Handover, handsOver } from './handover.js';
import type { RoundResult } from './round.js';
import type { LockAnswer, MemberVote } from './votes.js';

/** retryDelay ± retryJitter, never negative: competing clients fall out of step. */
export function retryDelayMs(policy: Pick<AttemptPolicy, 'retryDelay' | 'retryJitter'>, random: () => number = Math.random): number {
  return Math.max(0, policy.retryDelay + (random() * 2 - 1) * policy.retryJitter);
}

/**
 * When first in line on a quorum and the resource is held, the holder's keys expire within
 * heldForMs: come back once they have on a quorum of those members, rather than a full delay
 * later (an expired lock announces nothing). An expiry that is not known falls back to `delay`:
 * a key held without a TTL (a user's key of the same name) never frees itself, and coming back
 * "when it expires" would mean at once, again and again (a spin of hundreds of attempts a second
 * per member). The script reports such a key with no heldForMs; older scripts said 0, which a
 * real holder's key shows only in its last millisecond, so 0 counts as unknown too (costing at
 * most one delay then).
 */
export function nextTryMs(votes: readonly MemberVote[], delay: number): number {
  const quorum = quorumOf(votes.length);
  const first = firstInLine(votes);
  if (first.length < quorum) return delay;
  const expiries = first.map(expiryMs).sort((a, b) => a - b);
  // The quorum-th soonest: then a quorum of the members where we are first is free.
  return Math.min(delay, expiries[quorum - 1]! + 1);
}

/**
 * The votes of the members where the attempt stood first in line. Second behind the holder
 * counts as first: a waiter that won keeps its place until it releases (release.lua), so the
 * holder is often the head. Wrong when the head is a real waiter: then nextTryMs costs one refused
 * attempt when the key expires.
 */
function firstInLine(votes: readonly MemberVote[]): MemberVote[] {
  return votes.filter((vote) => vote.place === 0 || (vote.place === 1 && vote.vote === 'taken'));
}

/** When a first-in-line vote's resource is free: 0 now, Infinity not known. */
function expiryMs(vote: MemberVote): number {
  if (vote.vote !== 'taken') return 0;
  return vote.heldForMs === undefined || vote.heldForMs <= 0 ? Infinity : vote.heldForMs;
}

/**
 * Why a refused attempt waits, and for what:
 * - 'subscribe': not listening yet. Subscribe, and try again at once (in line) once subscribed,
 *   or after nodeTimeout: a release that falls between the refusal and the subscription is then
 *   seen by the next attempt, not missed.
 * - 'retake': the attempt found our own handover value on a member (a release handed it over
 *   before the attempt ran there), which blocks that member: try again at once, taking it back.
 * - 'line': in line. Until a majority names us first after a release or hands us the lock, or
 *   until the timed retry (nextTryMs), the end of the budget or of a turn in line; and, if the
 *   attempt went out (first in line, or a reader's) before the subscriptions were in place,
 *   until they are.
 */
export type WaitReason = 'subscribe' | 'retake' | 'line';

/** What a lock won after waiting keeps of it: its place in line, left with its release, and the handover values that release takes back. */
export interface Kept {
  inLineAs: string;
  abandoned: string | undefined;
}

/** The waiting between the attempts of one acquire, as the loop sees it. */
export interface Waiting {
  /** Before attempt `attempt`: the place in line it takes (or out of line) and its handover request. */
  next(attempt: number): Pick<AttemptRequest, 'waiter' | 'handover'>;
  /**
   * After attempt `refused`: waits as its WaitReason says (the attempt's rollback runs meanwhile).
   * Resolves with the lock when a majority handed it over meanwhile, or undefined to try again;
   * rejects when the signal aborts.
   */
  wait(refused: Refused): Promise<Win | undefined>;
  /** What a lock won with value `value` keeps (undefined: it never stood in line). */
  kept(value: string): Kept | undefined;
  /** Gives up, without waiting: leaves every line it joined, taking back its handover values. */
  leave(): void;
  /** Stops listening for this acquire. */
  close(): void;
}

/** What the waiting of one acquire works with. */
export interface WaitingSpec {
  members: readonly Member[];
  settings: Settings;
  resources: readonly string[];
  ttl: number;
  policy: AttemptPolicy;
  /** The Redlock's wake-ups: its subscriber connections, and its listener (the waiter ids' prefix). */
  notifications: Notifications;
  /**
   * The acquire's place, but for the lease: its waiter id (unique, not secret: the lockId, marked
   * when shared: protocol.ts, SHARED_MARK) and its arrival ticket, read when the acquire began.
   */
  place: Omit<Waiter, 'leaseMs'>;
  /** When the acquire's wait budget ends, on the settings' clock: no wait runs past it. */
  budgetEnd: number;
}

/** Waiting in line, woken by the members, handed the lock where it can be (the module comment). */
export class WaitInLine implements Waiting {
  readonly #spec: WaitingSpec;
  /** One ticket for the whole acquire: the order of arrival decides who is next. */
  readonly #waiter: Waiter;
  readonly #outOfLine: Waiter;
  readonly #turns: LineTurns;
  /** In line for one resource, exclusive, unfenced: asks to be handed the lock at a release. */
  readonly #handover: Handover | undefined;
  #watch: Watch | undefined;
  /** Whether any attempt took a place in line, and whether the latest did. */
  #joined = false;
  #inLine = false;
  /**
   * The latest attempt took its place in line while the subscriptions were still on their way
   * (its 'subscribe' wait is cut at nodeTimeout): a release that ran between that attempt and a
   * SUBSCRIBE told nobody, so if the attempt stood first in line (a release tells a writer only
   * at the head, so only the head can have missed one; readers, every one up to the first writer:
   * _wake.lua) or is a reader, the wait after it also ends once they are in place (or have
   * failed). That attempt counts toward retryCount, as the one after 'subscribe' does.
   */
  #inLineUnheard = false;

  /**
   * `watching`: listen from the start. A Redlock that waited before is still listening (its
   * subscription stays: notifications.ts): then the acquire watches from the start and its first
   * attempt takes its place in line at once, since a release that falls right after it is heard.
   * Otherwise the first attempt stays out of line, this waiting starts at its refusal, and the
   * second attempt joins once subscribed ('subscribe').
   */
  constructor(spec: WaitingSpec, watching: boolean) {
    const { settings, policy, resources } = spec;
    this.#spec = spec;
    const leaseMs = leaseFor(policy, settings.nodeTimeout);
    this.#waiter = Object.assign({}, spec.place, { leaseMs });
    this.#outOfLine = Object.assign({}, spec.place, { leaseMs: 0 });
    const waits = policy.retryCount > 0;
    this.#handover = waits && handsOver(resources, policy) ? new Handover() : undefined;
    this.#watch = waits && watching ? spec.notifications.watch(this.#waiter.id, this.#handover !== undefined) : undefined;
    this.#turns = new LineTurns(resources.length, leaseMs, settings.maxLockTtl);
  }

  next(attempt: number): Pick<AttemptRequest, 'waiter' | 'handover'> {
    const { policy, settings } = this.#spec;
    const inLine = (attempt > 1 || this.#watch !== undefined) && policy.retryCount > 0 && this.#turns.inLine(settings.clock.now());
    const handover = inLine ? this.#handover?.request(attempt) : undefined;
    this.#watch?.reset(handover?.stamp);
    // A waiter for several resources whose turn in line is over steps out of every line now,
    // so that a free resource it kept goes to whoever is next (see LineTurns).
    if (this.#inLine && !inLine) this.#leaveLines(undefined);
    this.#inLine = inLine;
    this.#joined ||= inLine;
    this.#inLineUnheard = inLine && this.#watch?.subscribing === true;
    return { waiter: inLine ? this.#waiter : this.#outOfLine, handover };
  }

  async wait(refused: Refused): Promise<Win | undefined> {
    // Our own handover value on a member: a release handed it over before this attempt ran there.
    const foundOwn = refused.round.votes.some((vote) => vote.handedOver);
    // Refused: present from now on, so that a release may hand us the lock (Watch.present). A
    // release that runs on a member before our SUBSCRIBE arrives there wakes us instead.
    this.#watch?.present();
    await this.#sleep(this.#watch === undefined ? 'subscribe' : foundOwn ? 'retake' : 'line', refused.round.votes);
    const handed = this.#handedOver(refused.round);
    if (handed) return handed;
    // A member may hold our handover value uncounted (a hand-over heard for another stamp or
    // from a member that does not count, too few of them, or one the attempt found): it is
    // abandoned now, between attempts, and taken back by the next one (quorum/handover.ts).
    if (this.#watch?.takeStray() || this.#watch?.handedBy.size || foundOwn) this.#handover?.abandon();
    return undefined;
  }

  kept(value: string): Kept | undefined {
    // The place in line is left with the release (the scripts kept it until now, and bound it to
    // this hold where they granted or handed it: _acquired.lua, _wake.lua), one round fewer per wait.
    return this.#joined ? { inLineAs: this.#waiter.id, abandoned: this.#handover?.leftover(value) } : undefined;
  }

  leave(): void {
    if (this.#joined) this.#leaveLines(this.#handover?.leftover());
  }

  close(): void {
    this.#watch?.close();
  }

  /** Waits as `reason` says (WaitReason). */
  #sleep(reason: WaitReason, votes: readonly MemberVote[]): Promise<unknown> {
    const { settings, policy, budgetEnd } = this.#spec;
    const { clock, nodeTimeout } = settings;
    if (reason === 'subscribe') {
      this.#watch = this.#spec.notifications.watch(this.#waiter.id, this.#handover !== undefined);
      this.#watch.present();
      // Never past the budget: a slow subscription must not stretch the acquire.
      const leftMs = budgetEnd - clock.now();
      return leftMs > 0 ? this.#watch.readyWithin(Math.min(nodeTimeout, leftMs), clock) : Promise.resolve();
    }
    // A release may come at any moment: wait out the delay or what is left of the budget,
    // whichever ends first (the loop then sees the budget gone).
    const delay = reason === 'retake' ? 0 : Math.min(nextTryMs(votes, retryDelayMs(policy)), budgetEnd - clock.now(), this.#turns.msUntilChange(clock.now()));
    // A hand-over majority still on its way is waited for up to nodeTimeout (Watch.notified).
    const missed = this.#inLineUnheard && (policy.shared || firstInLine(votes).length >= quorumOf(votes.length));
    return this.#watch!.wait(delay, clock, policy.signal, nodeTimeout, missed);
  }

  /**
   * The lock, when a majority handed it over by the request of the attempt whose round is `round`
   * (quorum/handover.ts has the argument): valid as that attempt's own win would be, from its start.
   */
  #handedOver(round: RoundResult<LockAnswer>): Win | undefined {
    const watch = this.#watch;
    if (!watch?.handedOver || !this.#handover) return undefined;
    const { members, settings, ttl } = this.#spec;
    const { clock } = settings;
    const deadline = deadlineOf(round.startedAt, ttl, driftMs(ttl, settings.driftFactor));
    if (deadline - clock.now() <= 0) return undefined;
    const votes: MemberVote<LockAnswer>[] = members.map((member, index) => ({
      member: member.id,
      vote: watch.handedBy.has(index) ? 'locked' : 'pending',
      ms: 0,
    }));
    const handedRound = { won: true, votes, startedAt: round.startedAt, elapsedMs: clock.now() - round.startedAt };
    return { won: true, value: this.#handover.value, round: handedRound, votes, deadline, fence: undefined };
  }

  /**
   * Gives up places in line (and takes back `abandoned` handover values), without waiting: a member
   * that does not hear it drops us when our lease runs out.
   */
  #leaveLines(abandoned: string | undefined): void {
    const { members, resources } = this.#spec;
    for (const member of members) member.leave(resources, { waiterId: this.#waiter.id, abandoned }).catch(() => undefined);
  }
}
