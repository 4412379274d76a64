/**
 * Fencing tokens: one more round after a lock is won, on the same members.
 */
import type { Member } from '../member.js';
import type { Settings } from '../options.js';
import { runRound } from './round.js';
import { isLocked, type LockAnswer } from './votes.js';

/** What a member's acquire said about its fence counters (undefined: not read there). */
export type FenceReading = { highest: number; trusted: boolean } | undefined;

/**
 * The fencing token, one round after the lock is won: propose one more than every counter read
 * in the acquire round, and write it on the members while we hold the lock there. It counts once
 * a quorum of members raised their counter to it from a trusted reading.
 *
 * Why it strictly increases: an earlier token t was written on a quorum Q, each member of Q still
 * holding that lock when it wrote, so before any later holder could lock it. Our quorum shares a
 * member m with Q. m's reading is trusted only if m kept its data since (a counter present in its
 * current epoch) or was declared brand new, so m reads at least t, and m raises only to a
 * proposal above what it read. A member that lost its data reads untrusted, and a candidate is
 * never written to it; only an established token is (the sync after a win), after which it is
 * trusted again. Tokens can go back only if a majority of members loses its data.
 */
export async function fenceToken(
  members: readonly Member[],
  settings: Settings,
  resources: readonly string[],
  value: string,
  readings: readonly FenceReading[],
  signal: AbortSignal | undefined,
): Promise<number | undefined> {
  // `readings` has holes where members were not waited for: for...of reads them as undefined.
  let proposed = 1;
  for (const reading of readings) if (reading) proposed = Math.max(proposed, reading.highest + 1);
  for (let tries = 0; tries < 3; tries++) {
    let highest = 0;
    const round = await runRound<LockAnswer>({
      operation: 'fence',
      members,
      send: (member) =>
        member.fence(resources, value, proposed, 'propose').then((reply) => {
          highest = Math.max(highest, reply.highest);
          return reply.raised && reply.trusted ? 'locked' : 'taken';
        }),
      counts: isLocked,
      timeoutMs: settings.nodeTimeout,
      waitForAll: false,
      clock: settings.clock,
      signal,
    });
    if (round.won) {
      // Established: above every token issued before. Members that did not take it (lost their
      // counters, or were not waited for) get it now, which makes their counters trusted again.
      const token = proposed;
      members.forEach((member, index) => {
        if (round.votes[index]!.vote !== 'locked') member.fence(resources, value, token, 'sync').catch(() => undefined);
      });
      return token;
    }
    if (highest < proposed) return undefined; // not outbid: too few members with trusted counters
    proposed = highest + 1;
  }
  return undefined;
}

