/**
 * One acquire attempt: a fresh value, one round of the acquire script on every member, the
 * validity check, and on failure a rollback on every member.
 */
import { randomBytes } from 'node:crypto';
import { afterPoll, deadlineOf, driftMs } from '../clock/index.js';
import { channels } from '../diagnostics.js';
import type { AttemptOutcome } from '../errors.js';
import type { AcquireRequest, AcquireVote, Member, Open } from '../members/member.js';
import type { Settings } from '../options/settings.js';
import { fenceToken, type Fence, type FencedLock, type FenceView, type Unfenced } from './fence.js';
import { rollback } from './release.js';
import { isLocked, runRound, type RoundResult } from './round.js';
import { memberStamp, sharedName, type HandoverRequest, type Waiter } from '../store/protocol.js';
import { quorumOf } from '../tally.js';
import type { LockAnswer, MemberVote } from './votes.js';

const POOL_VALUES = 256;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/**
 * 128 random bits from the CSPRNG. The value is the capability to extend and release, so it must
 * be unguessable, and it is new for every attempt: a late rollback of attempt k can then never
 * delete what attempt k+1 set, and no attempt is blocked by keys of an earlier one. Drawn from a
 * pool filled 4 KiB at a time (as Node does for randomUUID): one CSPRNG call per 256 values.
 */
export function newLockValue(): string {
  if (poolOffset >= pool.length) {
    pool = randomBytes(16 * POOL_VALUES);
    poolOffset = 0;
  }
  const value = pool.toString('base64url', poolOffset, poolOffset + 16);
  poolOffset += 16;
  return value;
}

export type AttemptResult =
  | {
      won: true;
      value: string;
      round: RoundResult<LockAnswer>;
      /** The round's votes (the Lock keeps them). */
      votes: readonly MemberVote<LockAnswer>[];
      deadline: number;
      fence: number | undefined;
    }
  | {
      won: false;
      outcome: AttemptOutcome;
      round: RoundResult<LockAnswer>;
      validityMs: number;
      /** The rollback on every member; resolves (never rejects) when each answered or timed out. */
      rollback: Promise<unknown>;
    };

/** A won attempt, and a refused one. */
export type Win = Extract<AttemptResult, { won: true }>;
export type Refused = Extract<AttemptResult, { won: false }>;

/** What one acquire locks, and where: the same for each of its attempts. */
export interface LockTarget {
  members: readonly Member[];
  /** The votes that win a round on `members` (quorumOf, known to the Redlock: LockContext). */
  quorum: number;
  settings: Settings;
  resources: readonly string[];
  ttl: number;
  /** Take a fencing token once the round is won (fence.ts). */
  fencing: boolean;
  /** A shared (read) lock: its value is marked (protocol.ts, SHARED_MARK), and the members run the shared scripts. */
  shared?: boolean | undefined;
  signal?: AbortSignal | undefined;
}

/** One attempt: its target, and what is this attempt's own. */
export interface AttemptRequest extends LockTarget {
  /** Per-member silence allowed, and the most the acquire round may last (RoundSpec). */
  deadlines: { timeoutMs: number; limitMs?: number | undefined };
  /** Its place in line; out of line, a lease of 0 (waiting/line.ts). */
  waiter: Waiter;
  /** In line: the request to be handed the lock at a release (quorum/handover.ts). */
  handover?: HandoverRequest | undefined;
}

function acquireSender(resources: readonly string[], request: AcquireRequest) {
  const { handover } = request;
  return (member: Member, index: number, open: Open): Promise<AcquireVote> => {
    // Object.assign, not spread: per member and attempt in line (docs/internals.md, "Object spread on Node 20").
    const sent = handover ? Object.assign({}, request, { handover: Object.assign({}, handover, { stamp: memberStamp(handover.stamp, index) }) }) : request;
    return member.acquire(resources, sent, open);
  };
}

/** What an attempt reads of each member's vote besides counting it (every vote, stragglers' too): the fence's view. */
function acquireReader(request: AcquireRequest, view: FenceView) {
  return (vote: AcquireVote, index: number, member: Member): AcquireVote => {
    // An epoch a fence sync may be bound to: one past its quarantine (fence.ts says why).
    if (request.quarantineMs !== 0 && vote.epoch?.settled) view.epochs[index] = vote.epoch.id;
    if (vote.fence && (vote.vote === 'locked' || vote.vote === 'quarantined')) view.readings[index] = vote.fence;
    if (vote.vote === 'quarantined' && channels.quarantine.hasSubscribers)
      channels.quarantine.publish({ member: member.id, quarantinedForMs: vote.quarantinedForMs!, notCounting: vote.notCounting });
    return vote;
  };
}

/**
 * Why an attempt that did not win failed. 'taken' only when the members that said "held by
 * another" (or "kept for an earlier waiter") alone rule out a quorum: then no member coming back
 * would have let it win. Fewer, with the rest down, silent or quarantined, is an outage: never
 * reported as "someone else has it" (tryAcquire's null, the CLI's 73 and --skip-if-locked), as a
 * single member holding a stale key or another's attempt in progress must not make it one.
 */
export function failureOutcome(won: boolean, votes: readonly MemberVote[]): AttemptOutcome {
  if (won) return 'expired';
  let refusing = 0;
  for (const vote of votes) if (vote.vote === 'taken' || vote.vote === 'queued') refusing++;
  if (refusing > votes.length - quorumOf(votes.length)) return 'taken';
  return votes.some((vote) => vote.vote === 'quarantined') ? 'quarantined' : 'unavailable';
}

/**
 * The fence round after a won acquire round. That round was decided at the quorum-th answer; the
 * other members' answers are waited for a little (at most nodeTimeout), so that their epochs are
 * known before the fence round is sent and can be synced if they lost their counter (fence.ts
 * syncs only epochs known before its round: waiting longer keeps that, and validity is checked
 * after). A member just restarted answers slowly (an empty script cache): without this, under
 * load, it was often never synced, and a rolling restart ran out of trusted counters.
 */
async function fenceAfterWin(lock: FencedLock, view: FenceView, everyAnswer: Promise<void> | undefined): Promise<Fence | Unfenced> {
  const { clock, nodeTimeout } = lock.settings;
  await Promise.race([everyAnswer, clock.sleep(nodeTimeout)]);
  await afterPoll();
  return fenceToken(lock, view);
}

/** One attempt: won, or refused with its outcome and the rollback already on its way. */
export async function attemptLock(attempt: AttemptRequest): Promise<AttemptResult> {
  const { members, quorum, settings, resources, ttl, fencing, signal, handover } = attempt;
  const { clock } = settings;
  const value = attempt.shared ? sharedName(newLockValue()) : newLockValue();
  const request: AcquireRequest = { value, ttlMs: ttl, waiter: attempt.waiter, quarantineMs: settings.quarantineMs, fencing, handover };
  const view: FenceView = { readings: [], epochs: [] };
  // A fenced attempt may wait a little for the stragglers' answers before its fence round.
  let heardAll: (() => void) | undefined;
  const everyAnswer = fencing ? new Promise<void>((resolve) => (heardAll = resolve)) : undefined;
  const held = { members, quorum, settings, resources, value };
  /** When a lock whose round started at `startedAt` stops being valid: ttl less the drift. */
  const validUntil = (startedAt: number) => deadlineOf(startedAt, ttl, driftMs(ttl, settings.driftFactor));
  let round: RoundResult<LockAnswer>;
  let fenced: Fence | Unfenced | undefined;
  try {
    round = await runRound<LockAnswer, AcquireVote>({
      operation: 'acquire',
      members,
      quorum,
      send: acquireSender(resources, request),
      answer: acquireReader(request, view),
      heardAll,
      counts: isLocked,
      // Named, not spread: a spread inside a literal is a slow path on Node 20 (docs/internals.md).
      timeoutMs: attempt.deadlines.timeoutMs,
      limitMs: attempt.deadlines.limitMs,
      waitForAll: false,
      clock,
      signal,
    });
    // Proposals stop at the lock's validity, not at the wait budget's end: without a waitTimeout
    // the budget is derived from the retries (about 250 ms for retryCount 0), and 30 readers
    // outbidding one another on a busy machine overran it, 16 of them failing with a lock won.
    if (round.won && fencing) fenced = await fenceAfterWin(Object.assign({}, held, { until: validUntil(round.startedAt), signal }), view, everyAnswer);
  } catch (abortReason) {
    // Aborted mid-round: whatever reached the members must not outlive the abort.
    await rollback(held, undefined);
    throw abortReason;
  }
  // Read the clock again now, not at the decision: a lock is never handed out once its validity
  // is gone, however the time between the decision and here was spent (the fence round included).
  const deadline = validUntil(round.startedAt);
  const validityMs = deadline - clock.now();
  const fence = typeof fenced === 'object' ? fenced.token : undefined;
  if (round.won && validityMs > 0 && (!fencing || fence !== undefined)) {
    // Established within the validity: now the members that did not take it may get it.
    if (typeof fenced === 'object') fenced.sync();
    return { won: true, value, round, votes: round.votes, deadline, fence };
  }
  // Locked, but no token: for want of trusted counters ('unfenced') or of answers ('unavailable': fence.ts).
  const outcome = round.won && validityMs > 0 ? (typeof fenced === 'string' ? fenced : 'unfenced') : failureOutcome(round.won, round.votes);
  return { won: false, outcome, round, validityMs, rollback: rollback(held, round.votes) };
}
