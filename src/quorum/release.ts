/**
 * Compare-and-delete on every member: the rollback after a failed attempt and Lock.release().
 *
 * Why every member, not only those that voted 'locked': a member that timed out, failed or was
 * not waited for may still have received our SET (Redis docs, Redlock step 5). Its reply may
 * simply be late. Our release travels on the same connection behind that SET, so the member runs
 * it after the SET, and the key cannot outlive the attempt. A member that is down gets the
 * release from the client's queue when it reconnects, or never needs it: a restarted member
 * without persistence has lost the key anyway, and in every case the key expires by its TTL.
 */
import type { Settings } from '../options.js';
import type { Member } from '../member.js';
import { runRound, type RoundResult } from './round.js';
import type { ReleaseAnswer } from './votes.js';

export function releaseOnAll(
  members: readonly Member[],
  settings: Pick<Settings, 'nodeTimeout' | 'clock'>,
  resources: readonly string[],
  value: string,
): Promise<RoundResult<ReleaseAnswer>> {
  return runRound<ReleaseAnswer>({
    members,
    send: (member) => member.release(resources, value).then((deleted) => (deleted > 0 ? 'released' : 'absent')),
    yes: 'released',
    timeoutMs: settings.nodeTimeout,
    waitForAll: true,
    clock: settings.clock,
  });
}

/** Members that answered a release: our keys are gone there, deleted now or never (still) set. */
export function answeredCount(round: RoundResult<ReleaseAnswer>): number {
  return round.votes.filter((vote) => vote.vote === 'released' || vote.vote === 'absent').length;
}
