/**
 * Fencing tokens: one more round after a lock is won, on the same members.
 */
import { afterPoll } from '../clock/index.js';
import type { AttemptOutcome } from '../errors.js';
import type { FenceReply, Member } from '../members/member.js';
import type { Settings } from '../options/settings.js';
import { isShared } from '../store/protocol.js';
import { isLocked, runRound } from './round.js';
import type { LockAnswer, MemberVote } from './votes.js';

/** What a member's acquire answer said about the lock's fence counters; undefined where it was not read. */
export type FenceReading = { highest: number; trusted: boolean } | undefined;

/**
 * What the acquire round learns for fencing: counters where the keys were set, and the epochs past
 * their quarantine. Kept beside the votes, not in them: answers that arrive after the round was
 * decided (their votes say 'pending') still name epochs a fence sync may go to (fenceToken).
 */
export interface FenceView {
  readings: FenceReading[];
  epochs: (string | undefined)[];
}

/** The lock a token is issued for: its value on its resources, on these members, just won. */
export interface FencedLock {
  members: readonly Member[];
  /** The votes that win a round on `members` (quorumOf). */
  quorum: number;
  settings: Pick<Settings, 'nodeTimeout' | 'clock'>;
  resources: readonly string[];
  value: string;
  /** When the lock's validity ends (a clock reading): no propose round is sent after it. */
  until: number;
  signal?: AbortSignal | undefined;
}

/** An established token, and the sync that repairs the members that did not take it. */
export interface Fence {
  token: number;
  /**
   * Sends the token to the members that did not take it and whose epoch, past its quarantine,
   * named itself before the winning propose round was sent, bound to it (fenceToken says why).
   */
  sync(): void;
}

/**
 * How an attempt that locked but got no token ends (its outcome): 'unfenced', too few members
 * with trusted counters (members that lost their data: a sync or an operator's trust makes them
 * count again), or outbid until the tries ran out; 'unavailable', too few answered at all
 * (timeouts, errors) while the tries lasted, or too few still held the lock.
 */
export type Unfenced = Extract<AttemptOutcome, 'unfenced' | 'unavailable'>;

/**
 * The fencing token, one round after the lock is won: propose one more than every counter read
 * in the acquire round, and write it on the members while we hold the lock there. It counts once
 * a quorum of members raised their counter to it from a trusted reading.
 *
 * Why it strictly increases: an earlier token t of a resource was written on a quorum Q, each
 * member of Q still holding that lock when it wrote, so before any later holder could lock it.
 * Our quorum shares a member m with Q. m's reading is trusted only if m kept its data since (a
 * counter written in its current epoch) or its epoch is complete (declared brand new, or given a
 * floor), so m reads at least t, and m raises only to a proposal above what it read. A member
 * that lost its data reads untrusted, and a candidate is never written to it; only an
 * established token is (the sync), after which it is trusted again for that resource. Counters
 * are per resource, so holders of different resources never race for one value.
 *
 * The sync goes to the members whose acquire answer (of any kind) named an epoch E past its
 * quarantine, read before the winning propose round was sent; bound to E. It raises the
 * resource's counter to our token t and, when E is not complete, sets E's floor to F: the max
 * over a quorum of complete members' counters, read in the winning round. Why that is sound:
 * E's member may have held, in an earlier epoch, any token issued for any resource before E's
 * quarantine ended (its holder's lock began before E did, and lasts at most maxLockTtl, as the
 * quarantine itself argues). Invariant: an issued token is covered by every quorum of members
 * trusted for its resource (it was raised on a quorum; a member of it that lost its data is
 * untrusted until a sync covers it). The winning round ran after E's quarantine ended: its
 * quorum of trusted counters for our resource was below t, so t covers every token of our
 * resource issued before; a quorum of complete members is trusted for every resource, so F
 * covers every token issued before, of any resource. A review found what goes wrong otherwise,
 * when one counter served all resources and stragglers' epochs were synced: X's token 2 for r1,
 * raised on k, then lost in k's restart, was undercut when a re-sent acquire for r2 named k's new
 * epoch and token 1 was synced there. In any other epoch the sync is refused (fence.lua: an
 * ioredis re-send to a new process, a failover). With the quarantine off no epoch qualifies, and
 * members that lost their counters stay untrusted. Tokens can go back only if a majority of
 * members loses its data at once; then Redlock.restoreFencing() is the operator's way back
 * (README, "Fencing").
 */
export async function fenceToken(lock: FencedLock, view: Readonly<FenceView>): Promise<Fence | Unfenced> {
  const { members, quorum, settings, resources, value, until, signal } = lock;
  const { readings, epochs } = view;
  // `readings` has holes where members were not waited for: for...of reads them as undefined.
  let proposed = 1;
  for (const reading of readings) if (reading) proposed = Math.max(proposed, reading.highest + 1);
  // Readers do not exclude each other, so many may propose on one counter at once and outbid one
  // another: all propose the same next value, and a round admits about one of them. A reader
  // outbid proposes again for as long as its lock is valid, each time above the highest counter
  // it saw by a random step whose range doubles with each loss (a backoff on the counter: 30
  // readers at once all got a token, where 12 tries each let 14 of them in). Tokens need only
  // increase, not be dense. A writer is outbid only by a straggler's sync: three tries in all. A
  // round lost for want of answers is tried again, three times at most. The validity is checked
  // after (attempt.ts): a reader that tried until `until` fails as 'expired'.
  const shared = isShared(value);
  let unfenced: Unfenced = 'unavailable';
  let unanswered = 0;
  for (let tries = 0; settings.clock.now() < until; tries++) {
    let highest = 0;
    // Answers that refused for a counter not trusted; and for a lock no longer held there (a key
    // expired, evicted or deleted), which says nothing of the counters: no restore-fencing hint.
    let untrusted = 0;
    let gone = 0;
    // The epochs a sync after this round may go to: those known before it is sent.
    const knownBefore = [...epochs];
    // What this round's answers say of each member's counters: max, where its epoch is complete.
    const completeMax: (number | undefined)[] = [];
    const round = await runRound<LockAnswer, FenceReply>({
      operation: 'fence',
      members,
      quorum,
      send: (member, index, open) => member.fence(resources, { value, token: proposed, mode: 'propose', epoch: epochs[index] ?? '' }, open),
      answer: (reply, index, member) => {
        highest = Math.max(highest, reply.highest);
        if (reply.gone) gone++;
        else if (!reply.raised && !reply.trusted) untrusted++;
        if (reply.complete && member.notCounting === undefined) completeMax[index] = reply.max;
        if (reply.raised && reply.trusted && member.notCounting === undefined) return 'locked';
        // A refusal says what it read (where the lock is gone, nothing) to vote listeners (cli/member-state.ts).
        return reply.gone ? 'taken' : { vote: 'taken', fence: { highest: reply.highest, trusted: reply.trusted } };
      },
      counts: isLocked,
      timeoutMs: settings.nodeTimeout,
      waitForAll: false,
      clock: settings.clock,
      signal,
    });
    if (round.won) return { token: proposed, sync: () => sync(lock, proposed, { knownBefore, completeMax, votes: round.votes }) };
    const outbid = highest >= proposed;
    if (!outbid && untrusted > 0) return 'unfenced'; // too few members with trusted counters
    unfenced = outbid ? 'unfenced' : 'unavailable';
    // Where too many members no longer hold the lock, no later round can win.
    if ((!shared && tries >= 2) || (!outbid && ++unanswered >= 3) || gone > members.length - quorum) break;
    proposed = nextProposal(Math.max(highest, proposed), shared, tries);
    // A round can be lost without a round trip (calls refused at once: a client that lost its
    // connection, with no offline queue): the next waits for the loop to poll, and never spins.
    await afterPoll();
  }
  return unfenced;
}

/** What the winning propose round knew: the epochs known before it was sent, each complete member's max, its votes. */
interface WinningRound {
  knownBefore: readonly (string | undefined)[];
  completeMax: readonly (number | undefined)[];
  votes: readonly MemberVote<LockAnswer>[];
}

/**
 * The sync of `token` to the members whose epoch was known before the winning round was sent and
 * that did not settle in it. Their floor, where their epoch is not complete: the max over a quorum
 * of complete members, read in that round (sent after their epochs were known past quarantine).
 */
function sync({ members, quorum, resources, value }: FencedLock, token: number, { knownBefore, completeMax, votes }: WinningRound): void {
  const maxima = completeMax.filter((max): max is number => max !== undefined);
  const floor = maxima.length >= quorum ? Math.max(token, ...maxima) : undefined;
  members.forEach((member, index) => {
    const epoch = knownBefore[index];
    const settled = votes[index]!.vote === 'locked' && completeMax[index] !== undefined;
    if (epoch !== undefined && !settled) member.fence(resources, { value, token, mode: 'sync', epoch, floor }).catch(() => undefined);
  });
}

/**
 * The proposal after a lost round: above `seen`, the highest counter answered and the lost
 * proposal (members that took it would refuse it again); a reader adds a random step whose range
 * doubles with each loss, so that readers outbid together stop colliding.
 */
function nextProposal(seen: number, shared: boolean, losses: number): number {
  return seen + 1 + (shared ? Math.floor(Math.random() * 2 ** Math.min(losses + 1, 16)) : 0);
}
