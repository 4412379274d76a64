/**
 * The attempt loop around attemptLock(): retries with jitter, waiting in line for a release, the
 * wait budget and the AbortSignal. Every acquire ends within its budget (plus the last rollback,
 * itself bounded by nodeTimeout): no round outlives the time left (a member silent for
 * nodeTimeout times out sooner), and no wait runs past the budget.
 *
 * Waiting: the first attempt does not join the line, so an uncontended acquire costs one script
 * call and nothing after. When it is refused, the caller subscribes to release announcements and
 * tries again at once, this time taking its place in line by its arrival ticket. From then on it
 * sleeps until a majority of members name it first in line after a release, or until the timed
 * retry (retryDelay ± jitter, sooner if it is first and the holder's key expires sooner). A
 * waiter for several resources keeps its places only by turns (LineTurns), so that it cannot keep
 * a free resource from everyone for as long as another of its resources is held.
 */
import { deadlineOf, driftMs } from '../clock/index.js';
import { channels, publish } from '../diagnostics.js';
import { LockAcquireError, type AttemptRecord } from '../errors.js';
import type { Member } from '../members/member.js';
import { debugging, type AttemptPolicy, type Settings } from '../options/settings.js';
import { attemptLock, type AttemptResult } from './acquire.js';
import { quorumOf } from './tally.js';
import { describeVotes, type LockAnswer, type MemberVote } from './votes.js';
import { Handover, handsOver } from './handover.js';
import type { RoundResult } from './round.js';
import { leaseFor, LineTurns, type Waiter } from '../waiting/line.js';
import { sharedName } from '../store/protocol.js';
import type { Notifications, Watch } from '../waiting/notifications.js';

/**
 * A won acquire. `inLineAs`: the waiter id, when the acquire took a place in line: the winner keeps
 * it until its release, which leaves every line (release.lua), instead of a round of its own now.
 * `abandoned`: handover values a member may still hold for it, which its release takes back.
 */
export type Won = Extract<AttemptResult, { won: true }> & { inLineAs?: string | undefined; abandoned?: string | undefined };

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
  // Second in line behind the holder counts as first: a waiter that won keeps its place until it
  // releases (release.lua), so the holder is often the head. Wrong when the head is a real
  // waiter: then this costs one refused attempt when the key expires.
  const first = votes.filter((vote) => vote.place === 0 || (vote.place === 1 && vote.vote === 'taken'));
  if (first.length < quorum) return delay;
  const expiries = first.map(expiryMs).sort((a, b) => a - b);
  // The quorum-th soonest: then a quorum of the members where we are first is free.
  return Math.min(delay, expiries[quorum - 1]! + 1);
}

/** When a first-in-line vote's resource is free: 0 now, Infinity not known. */
function expiryMs(vote: MemberVote): number {
  if (vote.vote !== 'taken') return 0;
  return vote.heldForMs === undefined || vote.heldForMs <= 0 ? Infinity : vote.heldForMs;
}

/**
 * Gives up places in line (and takes back `abandoned` handover values), without waiting: a member
 * that does not hear it drops us when our lease runs out.
 */
function leaveLine(members: readonly Member[], resources: readonly string[], waiter: Waiter, abandoned?: string): void {
  for (const member of members) member.leave(resources, waiter.id, abandoned).catch(() => undefined);
}

/**
 * The lock, when a majority handed it over by the request of the attempt whose round is `round`
 * (quorum/handover.ts has the argument): valid as that attempt's own win would be, from its start.
 */
function handedOver(
  members: readonly Member[],
  settings: Settings,
  ttl: number,
  round: RoundResult<LockAnswer>,
  watch: Watch,
  value: string,
): Extract<AttemptResult, { won: true }> | undefined {
  if (!watch.handedOver) return undefined;
  const { clock } = settings;
  const deadline = deadlineOf(round.startedAt, ttl, driftMs(ttl, settings.driftFactor));
  if (deadline - clock.now() <= 0) return undefined;
  const votes: MemberVote[] = members.map((member, index) => ({ member: member.id, vote: watch.handedBy.has(index) ? 'locked' : 'pending', ms: 0 }));
  return { won: true, value, round: { won: true, votes, startedAt: round.startedAt, elapsedMs: clock.now() - round.startedAt }, deadline, fence: undefined };
}

export async function acquireWithRetries(
  members: readonly Member[],
  settings: Settings,
  resources: readonly string[],
  ttl: number,
  policy: AttemptPolicy,
  notifications: Notifications,
  /** Names this acquire in events and in line: unique, not secret. */
  lockId: string = notifications.newWaiterId(),
): Promise<Won> {
  const { clock, logger } = settings;
  const begin = clock.now();
  if (channels.acquireStart.hasSubscribers) channels.acquireStart.publish({ lockId, resources, ttl });
  const budgetEnd = begin + policy.waitTimeout;
  const attempts: AttemptRecord[] = [];
  let stoppedBecause: LockAcquireError['stoppedBecause'] = 'retries exhausted';
  let rollback: Promise<unknown> = Promise.resolve();
  // One ticket for the whole call: the order of arrival decides who is next.
  // A shared caller's place in line is marked as such (protocol.ts, SHARED_MARK): readers at the
  // head of a line enter together, and none passes a writer that arrived before it.
  const waiter: Waiter = { id: policy.shared ? sharedName(lockId) : lockId, ticket: clock.epochMs(), leaseMs: leaseFor(policy, settings.nodeTimeout) };
  const outOfLine: Waiter = { id: waiter.id, ticket: waiter.ticket, leaseMs: 0 };
  // A Redlock that waited before is still listening (its subscription stays: notifications.ts):
  // then this acquire watches from the start and its first attempt takes its place in line at
  // once, since a release that falls right after it is heard. Otherwise the first attempt stays
  // out of line, and the second joins once subscribed (below).
  let watch: Watch | undefined = policy.retryCount > 0 && notifications.listening ? notifications.watch(waiter.id) : undefined;
  // In line for one resource, exclusive, unfenced, its ttl within its lease: asks to be handed the lock at a release.
  const handover = policy.retryCount > 0 && handsOver(resources, policy, ttl, waiter.leaseMs) ? new Handover() : undefined;

  let joined = false;
  let wasInLine = false;
  const turns = new LineTurns(resources.length, waiter.leaseMs, settings.maxLockTtl);

  /** Won, by attempt `attempt`'s round or by a hand-over after it (`handed`). */
  const won = (result: Extract<AttemptResult, { won: true }>, attempt: number, handed = false): Won => {
    // The place in line is left with the release (the scripts kept it until now, and bound it to
    // this hold where they granted or handed it: _acquired.lua, _wake.lua), one round fewer per wait.
    if (debugging(logger)) logger.debug({ resources, attempt, elapsedMs: clock.now() - begin, remainingMs: result.deadline - clock.now() }, 'lock acquired');
    publish(channels.acquireEnd, () => ({
      lockId,
      resources,
      ttl,
      acquired: true,
      elapsedMs: clock.now() - begin,
      attempts: attempt,
      fence: result.fence,
      ...(handed ? { handedOver: true as const } : {}),
    }));
    return joined ? { ...result, inLineAs: waiter.id, abandoned: handover?.leftover(result.value) } : result;
  };

  try {
    for (let attempt = 1; ; attempt++) {
      policy.signal?.throwIfAborted();
      const startedMs = clock.now() - begin;
      const leftMs = policy.waitTimeout - startedMs;
      const timeoutMs = Math.min(settings.nodeTimeout, leftMs);
      // A retry with less than a whole nodeTimeout left would be cut short, and slow members
      // would read as an outage where there was only contention: stop instead.
      if (timeoutMs <= 0 || (attempt > 1 && timeoutMs < settings.nodeTimeout)) {
        stoppedBecause = 'wait budget exhausted';
        break;
      }
      const inLine = (attempt > 1 || watch !== undefined) && policy.retryCount > 0 && turns.inLine(clock.now());
      const request = inLine ? handover?.request(attempt) : undefined;
      watch?.reset(request?.stamp);
      // A waiter for several resources whose turn in line is over steps out of every line now,
      // so that a free resource it kept goes to whoever is next (see LineTurns).
      if (wasInLine && !inLine) leaveLine(members, resources, waiter);
      wasInLine = inLine;
      joined ||= inLine;
      // nodeTimeout is how long a member may stay silent; a member still answering our earlier
      // calls (a burst of ours ahead of this one) is waited for up to what is left of the budget,
      // and never past the lock's validity (a quorum after ttl - drift could only be 'expired').
      // The budget holds: no round outlives `leftMs` (round.ts).
      const limitMs = Math.min(leftMs, ttl - driftMs(ttl, settings.driftFactor));
      const result = await attemptLock(
        members,
        settings,
        resources,
        ttl,
        { timeoutMs, limitMs },
        inLine ? waiter : outOfLine,
        policy.fencing,
        policy.signal,
        policy.shared,
        request,
      );
      if (result.won) return won(result, attempt);
      const { round, outcome, validityMs } = result;
      // Our own handover value on a member: a release handed it over before this attempt ran there.
      const foundOwn = round.votes.some((vote) => vote.handedOver);
      attempts.push({ attempt, outcome, startedMs, elapsedMs: round.elapsedMs, validityMs, votes: round.votes });
      if (debugging(logger)) logger.debug({ resources, attempt, outcome, votes: describeVotes(round.votes) }, 'lock attempt failed');
      rollback = result.rollback;

      if (attempt > policy.retryCount) break;
      let wait: Promise<unknown>;
      if (!watch) {
        // Listen first, then try again at once and join the line: a release that falls between
        // the refusal and the subscription is then seen by the next attempt, not missed.
        watch = notifications.watch(waiter.id);
        // Never past the budget: a slow subscription must not stretch the acquire.
        const leftMs = budgetEnd - clock.now();
        wait = leftMs > 0 ? watch.readyWithin(Math.min(settings.nodeTimeout, leftMs), clock) : Promise.resolve();
      } else {
        // A release may come at any moment: wait out the delay or what is left of the budget,
        // whichever ends first (the loop's head then sees the budget gone).
        // Our own handover value blocks a member (foundOwn): it is taken back by the next attempt,
        // which goes at once.
        const delay = foundOwn ? 0 : Math.min(nextTryMs(round.votes, retryDelayMs(policy)), budgetEnd - clock.now(), turns.msUntilChange(clock.now()));
        // A hand-over majority still on its way is waited for up to nodeTimeout (Watch.notified).
        wait = watch.wait(delay, clock, policy.signal, settings.nodeTimeout);
      }
      // The rollback runs alongside the wait: it goes out before the next attempt on every
      // connection anyway. Only the last one is awaited, on every way out below.
      await wait;
      if (watch && handover) {
        const handed = handedOver(members, settings, ttl, round, watch, handover.value);
        if (handed) return won(handed, attempt, true);
      }
      // A member may hold our handover value uncounted (a hand-over heard for another stamp or
      // from a member that does not count, too few of them, or one the attempt found): it is
      // abandoned now, between attempts, and taken back by the next one (quorum/handover.ts).
      if (watch?.takeStray() || watch?.handedBy.size || foundOwn) handover?.abandon();
    }
    await rollback;
    const error = new LockAcquireError(resources, attempts, clock.now() - begin, stoppedBecause);
    if (debugging(logger)) logger.debug({ resources, attempts: attempts.length, outcome: error.outcome, elapsedMs: error.elapsedMs }, 'lock not acquired');
    throw error;
  } catch (error) {
    // Rejecting (retries or budget used up, aborted): nothing this call set may be left behind.
    await rollback;
    if (joined) leaveLine(members, resources, waiter, handover?.leftover());
    publish(channels.acquireEnd, () => ({
      lockId,
      resources,
      ttl,
      acquired: false,
      elapsedMs: clock.now() - begin,
      attempts: attempts.length,
      outcome: error instanceof LockAcquireError ? error.outcome : 'aborted',
    }));
    throw error;
  } finally {
    watch?.close();
  }
}
