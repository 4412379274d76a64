/**
 * One acquire attempt: a fresh value, one round of the acquire script on every member, the
 * validity check, and on failure a rollback on every member.
 */
import { randomBytes } from 'node:crypto';
import { deadlineOf, driftMs } from '../clock/index.js';
import { channels, publish } from '../diagnostics.js';
import type { AttemptOutcome } from '../errors.js';
import type { AcquireRequest, Member } from '../members/member.js';
import type { Settings } from '../options/settings.js';
import { fenceToken, type Fence, type FenceReading } from './fence.js';
import { rollback } from './release.js';
import { runRound, type RoundResult } from './round.js';
import { memberStamp, sharedName, type HandoverRequest, type Waiter } from '../store/protocol.js';
import { quorumOf } from './tally.js';
import { isLocked, type Answered, type LockAnswer, type MemberVote } from './votes.js';

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
  | { won: true; value: string; round: RoundResult<LockAnswer>; deadline: number; fence: number | undefined }
  | {
      won: false;
      outcome: AttemptOutcome;
      round: RoundResult<LockAnswer>;
      validityMs: number;
      /** The rollback on every member; resolves (never rejects) when each answered or timed out. */
      rollback: Promise<unknown>;
    };

/**
 * What the acquire round learns for fencing: counters where the keys were set, and the epochs past
 * their quarantine. Kept beside the votes, not in them: answers that arrive after the round was
 * decided (their votes say 'pending') still name epochs a fence sync may go to (fence.ts).
 */
interface FenceView {
  readings: FenceReading[];
  epochs: (string | undefined)[];
}

function acquireSender(resources: readonly string[], request: AcquireRequest, view: FenceView) {
  const { handover } = request;
  return (member: Member, index: number): Promise<Answered<LockAnswer>> =>
    member.acquire(resources, handover ? { ...request, handover: { ...handover, stamp: memberStamp(handover.stamp, index) } } : request).then((result) => {
      // An epoch a fence sync may be bound to: one past its quarantine (fence.ts says why).
      if (request.quarantineMs > 0 && result.quarantinedForMs === 0) view.epochs[index] = result.epoch;
      if ('why' in result)
        return { vote: result.why, heldForMs: result.heldForMs, place: result.place, holdsOwn: result.holdsOwn, handedOver: result.handedOver };
      if (result.fence) view.readings[index] = result.fence;
      if (result.quarantinedForMs === 0) return 'locked';
      publish(channels.quarantine, () => ({ member: member.id, quarantinedForMs: result.quarantinedForMs, notCounting: result.notCounting }));
      return { vote: 'quarantined', quarantinedForMs: result.quarantinedForMs, notCounting: result.notCounting };
    });
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

export async function attemptLock(
  members: readonly Member[],
  settings: Settings,
  resources: readonly string[],
  ttl: number,
  /** Per-member silence allowed, and the most the acquire round may last (RoundSpec). */
  deadlines: { timeoutMs: number; limitMs?: number | undefined },
  waiter: Waiter,
  fencing: boolean,
  signal: AbortSignal | undefined,
  /** A shared (read) lock: its value is marked (protocol.ts, SHARED_MARK), and the members run the shared scripts. */
  shared = false,
  /** In line: the request to be handed the lock at a release (quorum/handover.ts). */
  handover?: HandoverRequest,
): Promise<AttemptResult> {
  const { clock } = settings;
  const value = shared ? sharedName(newLockValue()) : newLockValue();
  const request: AcquireRequest = { value, ttlMs: ttl, waiter, quarantineMs: settings.quarantine ? settings.maxLockTtl : 0, fencing, handover };
  const view: FenceView = { readings: [], epochs: [] };
  let round: RoundResult<LockAnswer>;
  let fenced: Fence | undefined;
  try {
    round = await runRound({
      operation: 'acquire',
      members,
      send: acquireSender(resources, request, view),
      counts: isLocked,
      ...deadlines,
      waitForAll: false,
      clock,
      signal,
    });
    if (round.won && fencing) {
      // One turn of the event loop first: the round was decided at the quorum-th answer, and the
      // others that reached the socket in the same poll are read now. Their epochs can then be
      // synced if they lost their counter (fence.ts syncs only epochs known before its round).
      await new Promise((resolve) => setImmediate(resolve));
      fenced = await fenceToken(members, settings, resources, value, view.readings, view.epochs, signal);
    }
  } catch (abortReason) {
    // Aborted mid-round: whatever reached the members must not outlive the abort.
    await rollback(members, settings, resources, value, undefined);
    throw abortReason;
  }
  // Read the clock again now, not at the decision: a lock is never handed out once its validity
  // is gone, however the time between the decision and here was spent (the fence round included).
  const deadline = deadlineOf(round.startedAt, ttl, driftMs(ttl, settings.driftFactor));
  const validityMs = deadline - clock.now();
  const fence = fenced?.token;
  if (round.won && validityMs > 0 && (!fencing || fence !== undefined)) {
    // Established within the validity: now the members that did not take it may get it.
    fenced?.sync();
    return { won: true, value, round, deadline, fence };
  }
  const outcome = round.won && validityMs > 0 ? 'unfenced' : failureOutcome(round.won, round.votes);
  return { won: false, outcome, round, validityMs, rollback: rollback(members, settings, resources, value, round.votes) };
}
