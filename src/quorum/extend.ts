/**
 * Extend: one round of the extend script (compare-and-PEXPIRE) on every member, and the decision.
 * Parallel to release.ts; a plain function of what it needs, so Lock keeps only its own state.
 *
 * The safety argument. The previous round (acquire or extend) guarantees that a quorum Q0 holds
 * our value until `previousDeadline` (D). A member that answers 'locked' here ran the script at
 * some moment t ≥ startedAt, found our value, and set it to live until t + ttl on its clock, so
 * past the new deadline D' = startedAt + ttl − drift on ours (only our release deletes it, and
 * nobody else can set a key that exists). If a quorum Q1 did so before D, then Q0 covers
 * [.., D) and Q1 covers [the last t, D'), and the last t < D: there is no instant at which a
 * majority could be free for another owner. Any two majorities intersect, so no one else held
 * the lock at any time, and D' is sound.
 *
 * Why "before D" is needed, and "Q1 still holds our value" is not enough: our value can be set
 * again after a gap. ioredis re-sends unanswered commands after a reconnect and writes commands
 * queued while disconnected to whatever answers next, and a delayed link delivers an acquire
 * late (docs/internals.md#re-send-after-reconnect); that acquire finds the key free (the old one
 * expired, another owner came and went) and sets our value again. An extend that then finds it
 * proves nothing about the gap. So a quorum reached at or after D loses the lock ('lapsed').
 *
 * Why an extend is not bound to the epoch its acquire was answered from (a fence sync is): a
 * member whose data was lost and whose key a re-sent acquire re-created (a new, quarantined epoch)
 * may count here, and that is sound. Before D no one else can hold the lock, so its key there
 * is ours by then too, and any later acquirer needs a quorum of members free of our keys, which
 * shares a member with Q1 that keeps our key to D' (or, having lost it, is quarantined for them).
 *
 * "Reached" is the moment the quorum-th 'locked' answer was read (its vote's `ms` from the
 * round's start, on the same monotonic clock), not when the caller got around to looking:
 * the member ran the script before its reply was read, so that moment is a safe upper bound, and
 * a stalled event loop after it (docs/internals.md#timers-before-io) costs nothing.
 */
import { deadlineOf, driftMs } from '../clock/index.js';
import type { ExtendAnswer, LossCause } from '../errors.js';
import type { ExtendReply, Member, Open } from '../members/member.js';
import type { Settings } from '../options/settings.js';
import { runRound, type RoundResult } from './round.js';
import { quorumOf } from '../tally.js';

// What a member said to our extend: defined with the votes that carry it (src/errors.ts).
export type { ExtendAnswer } from '../errors.js';

export function extendSender(resources: readonly string[], value: string, ttl: number) {
  const call = { value, ttlMs: ttl };
  return (member: Member, _index: number, open: Open): Promise<ExtendReply> => member.extend(resources, call, open);
}

/** What an extend reply answers in the round. */
const extendAnswer = (status: ExtendReply): ExtendAnswer => (status === 'extended' ? 'locked' : status === 'gone' ? 'absent' : 'taken');

export type ExtendResult =
  | {
      extended: true;
      /** The new deadline: ttl − drift from the round's start. */
      deadline: number;
      round: RoundResult<ExtendAnswer>;
    }
  | {
      extended: false;
      /** 'unavailable' leaves the lock held; the others lose it (see ExtendFailure in errors.ts). */
      failure: 'unavailable' | 'lost' | 'lapsed' | 'late';
      /** Set when the lock is lost. */
      lostBecause: LossCause | undefined;
      /**
       * What still holds: min(previous deadline, this round's). Members the round reached, in time
       * or late, now expire our keys `ttl` after they ran it; with a ttl shorter than what was left,
       * that is before the previous deadline.
       */
      deadline: number;
      round: RoundResult<ExtendAnswer>;
    };

/**
 * The clock reading at which the round reached quorum: when the quorum-th counting 'locked' answer
 * was read. Undefined when the round was not won.
 */
export function quorumReachedAt(round: RoundResult<ExtendAnswer>): number | undefined {
  if (!round.won) return undefined;
  // A member that must not count (the round marks its vote) is no part of the quorum.
  const counted = (vote: RoundResult<ExtendAnswer>['votes'][number]) => vote.vote === 'locked' && !('notCounting' in vote && vote.notCounting !== undefined);
  const times = round.votes
    .filter(counted)
    .map((vote) => vote.ms)
    .sort((a, b) => a - b);
  // The decision itself (elapsedMs) is a later bound, should the votes not show it.
  return round.startedAt + (times[quorumOf(round.votes.length) - 1] ?? round.elapsedMs);
}

/**
 * The decision, pure: `newDeadline` is the round's own (startedAt + ttl − drift), `now` the clock
 * read after the round (a lock is never handed back without validity, however the time since the
 * decision was spent).
 */
export function decideExtension(round: RoundResult<ExtendAnswer>, previousDeadline: number, newDeadline: number, now: number): ExtendResult {
  const failed = (failure: 'unavailable' | 'lost' | 'lapsed' | 'late', lostBecause: LossCause | undefined): ExtendResult => ({
    extended: false,
    failure,
    lostBecause,
    deadline: Math.min(previousDeadline, newDeadline),
    round,
  });
  const reachedAt = quorumReachedAt(round);
  if (reachedAt !== undefined) {
    if (reachedAt >= previousDeadline) return failed('lapsed', 'lapsed');
    if (newDeadline <= now) return failed('late', 'late');
    return { extended: true, deadline: newDeadline, round };
  }
  // Not won. Lost only when the members that answered "not ours" alone put a quorum out of reach:
  // Q0 should hold our value until the previous deadline, so that many saying otherwise means the
  // guarantee broke (eviction, a restart, a clock jump, another owner), and no later extend can
  // mend it. Timeouts and errors are no such statement: the lock may well be intact, and a retry
  // within the validity can still renew it.
  const count = (answer: ExtendAnswer) => round.votes.filter((vote) => vote.vote === answer).length;
  const taken = count('taken');
  const notOurs = count('absent') + taken;
  const members = round.votes.length;
  if (members - notOurs < quorumOf(members)) return failed('lost', taken > 0 ? 'taken' : 'gone');
  return failed('unavailable', undefined);
}

/** An extend: the held lock (its value on its resources, on these members), the new ttl, and the deadline that holds now. */
export interface ExtendRequest {
  members: readonly Member[];
  /** The votes that win a round on `members` (quorumOf). */
  quorum: number;
  settings: Pick<Settings, 'nodeTimeout' | 'clock' | 'driftFactor'>;
  resources: readonly string[];
  value: string;
  ttl: number;
  previousDeadline: number;
}

/**
 * Runs the extend script on every member and decides. The round waits at most nodeTimeout, and
 * never past the previous deadline: a quorum completed after it could not count anyway.
 * The caller checks that the previous deadline lies ahead.
 */
export async function extendOn(request: ExtendRequest): Promise<ExtendResult> {
  const { members, quorum, settings, resources, value, ttl, previousDeadline } = request;
  const { clock } = settings;
  const round = await runRound<ExtendAnswer, ExtendReply>({
    operation: 'extend',
    members,
    quorum,
    send: extendSender(resources, value, ttl),
    answer: extendAnswer,
    counts: (answer) => answer === 'locked',
    timeoutMs: Math.min(settings.nodeTimeout, previousDeadline - clock.now()),
    waitForAll: false,
    clock,
  });
  return decideExtension(round, previousDeadline, deadlineOf(round.startedAt, ttl, driftMs(ttl, settings.driftFactor)), clock.now());
}
