/**
 * Fencing tokens: one more round after a lock is won, on the same members.
 */
import type { Member } from '../member.js';
import type { Settings } from '../options.js';
import { runRound } from './round.js';
import { isLocked, type LockAnswer } from './votes.js';

/**
 * What a member's acquire answer said about its fence counter, and the epoch it came from;
 * undefined where the member was not heard in the acquire round.
 */
export type FenceReading = { highest: number; trusted: boolean; epoch: string | undefined } | undefined;

/**
 * The fencing token, one round after the lock is won: propose one more than every counter read
 * in the acquire round, and write it on the members while we hold the lock there. It counts once
 * a quorum of members raised their counter to it from a trusted reading.
 *
 * Why it strictly increases: an earlier token t was written on a quorum Q, each member of Q still
 * holding that lock when it wrote, so before any later holder could lock it. Our quorum shares a
 * member m with Q. m's reading is trusted only if m kept its data since (its counter was written
 * in its current epoch) or was declared brand new, so m reads at least t, and m raises only to a
 * proposal above what it read. A member that lost its data reads untrusted, and a candidate is
 * never written to it; only an established token is (the sync after a win), after which it is
 * trusted again. Each member keeps one counter for all resources (per slot on a Cluster), so one
 * sync restores it for new resources too: fencing survives rolling restarts. Tokens can go back
 * only if a majority of members loses its data at once; then Redlock.restoreFencing() is the
 * operator's way back (README, "Fencing").
 *
 * The sync goes only to members heard in this attempt's acquire round, bound to the epoch that
 * answered: see fence.lua for why a sync run in any other epoch (an ioredis re-send to a new
 * process, a delayed link) could make a forgetful member look as if it knew the latest token.
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
      send: (member, index) =>
        member.fence(resources, value, proposed, 'propose', readings[index]?.epoch ?? '').then((reply) => {
          highest = Math.max(highest, reply.highest);
          return reply.raised && reply.trusted && member.notCounting === undefined ? 'locked' : 'taken';
        }),
      counts: isLocked,
      timeoutMs: settings.nodeTimeout,
      waitForAll: false,
      clock: settings.clock,
      signal,
    });
    if (round.won) {
      // Established: above every token issued before. Members heard in the acquire round that
      // did not take it (lost their counter, or were not waited for) get it now, in the epoch
      // they answered from, which makes their counter trusted again.
      const token = proposed;
      members.forEach((member, index) => {
        const epoch = readings[index]?.epoch;
        if (round.votes[index]!.vote !== 'locked' && epoch !== undefined) member.fence(resources, value, token, 'sync', epoch).catch(() => undefined);
      });
      return token;
    }
    if (highest < proposed) return undefined; // not outbid: too few members with trusted counters
    proposed = highest + 1;
  }
  return undefined;
}
