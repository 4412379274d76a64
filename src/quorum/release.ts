/**
 * Compare-and-delete on every member: the rollback after a failed attempt and Lock.release().
 *
 * Why every member that did not refuse, not only those that voted 'locked': a member that timed
 * out, failed or was not waited for may still have received our SET (Redis docs, Redlock step 5). Its reply may
 * simply be late. Our release travels on the same connection behind that SET, so the member runs
 * it after the SET, and the key cannot outlive the attempt. A member that is down gets the
 * release from the client's queue when it reconnects, or never needs it: a restarted member
 * without persistence has lost the key anyway, and in every case the key expires by its TTL.
 */
import type { Settings } from '../options/settings.js';
import type { Member } from '../members/member.js';
import { runRound, type RoundResult } from './round.js';
import type { MemberVote, ReleaseAnswer } from './votes.js';

const answered = (vote: string) => vote === 'released' || vote === 'absent';

/** Whose keys a release deletes: `value`'s, on `resources`, on these members. */
export interface ReleaseTarget {
  members: readonly Member[];
  /**
   * The votes of `members` that free the lock (quorumOf of all the lock's members: a rollback
   * sent to some of them still counts against the whole).
   */
  quorum: number;
  settings: Pick<Settings, 'nodeTimeout' | 'clock'>;
  resources: readonly string[];
  value: string;
}

/** A release: its target, and how it settles. */
export interface ReleaseRequest extends ReleaseTarget {
  /**
   * 'quorum': resolves once a quorum of members confirmed our keys are gone (deleted now, or never
   * set / expired): from then on nobody can count on the lock, and the rest run the release when
   * they get to it. 'all': hears from each, up to nodeTimeout.
   */
  settle: 'quorum' | 'all';
  /** With a limit, a member still working through a backlog of ours is waited for up to it (RoundSpec.limitMs). */
  limitMs?: number | undefined;
  /** The holder's waiter id when it won after waiting: it leaves every line with this release. */
  leaving?: string | undefined;
  /** Its handover values a member may hold though it did not win by them: taken back (quorum/handover.ts). */
  abandoned?: string | undefined;
}

/** Release on every member of `request.members`, settling as `request.settle` says. */
export function releaseOn(request: ReleaseRequest): Promise<RoundResult<ReleaseAnswer>> {
  const { resources, settings } = request;
  const call = { value: request.value, leaving: request.leaving, abandoned: request.abandoned };
  return runRound<ReleaseAnswer, number>({
    operation: 'release',
    members: request.members,
    quorum: request.quorum,
    send: (member) => member.release(resources, call),
    answer: (deleted) => (deleted > 0 ? 'released' : 'absent'),
    counts: answered,
    timeoutMs: settings.nodeTimeout,
    limitMs: request.limitMs,
    waitForAll: request.settle === 'all',
    clock: settings.clock,
  });
}

/**
 * The rollback after a failed or aborted attempt: sent to every member that may hold something of
 * the attempt, awaited only from those that answered the attempt. A member that was silent (timed
 * out, failed) would only be silent again; its release is queued behind the SET it may still run,
 * and waiting for it would double the time to fail when a majority is down.
 *
 * A member that refused ('taken', 'queued') is skipped unless it says it holds part of the attempt
 * all the same (holdsOwn): the value is new for each attempt, an answered call is never sent again,
 * and a run of the same call that finds the whole of an earlier run's hold (ioredis re-sends a call
 * whose answer was lost in a reconnect) is granted, not refused (_acquired.lua, holdsAll). So a
 * refusal without holdsOwn is proof that nothing of the attempt is there. Under contention that is
 * most members of most attempts: one script call fewer per member and refused attempt.
 */
export function rollback(target: ReleaseTarget, votes: readonly MemberVote<string>[] | undefined): Promise<unknown> {
  const silent = (index: number) => votes !== undefined && (votes[index]!.vote === 'timeout' || votes[index]!.vote === 'error');
  const refused = (index: number) => votes !== undefined && (votes[index]!.vote === 'taken' || votes[index]!.vote === 'queued') && !votes[index]!.holdsOwn;
  const { members } = target;
  // Object.assign, not spread: once per refused attempt (docs/internals.md, "Object spread on Node 20").
  void releaseOn(Object.assign({}, target, { members: members.filter((_, index) => silent(index)), settle: 'all' as const }));
  return releaseOn(Object.assign({}, target, { members: members.filter((_, index) => !silent(index) && !refused(index)), settle: 'all' as const }));
}
