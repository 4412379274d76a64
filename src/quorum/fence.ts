/**
 * Fencing tokens: one more round after a lock is won, on the same members.
 */
import type { Member } from '../member.js';
import type { Settings } from '../options.js';
import { runRound } from './round.js';
import { isLocked, type LockAnswer } from './votes.js';

/** What a member's acquire answer said about its fence counter; undefined where it was not read. */
export type FenceReading = { highest: number; trusted: boolean } | undefined;

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
 * The fencing token, one round after the lock is won: propose one more than every counter read
 * in the acquire round, and write it on the members while we hold the lock there. It counts once
 * a quorum of members raised their counter to it from a trusted reading.
 *
 * Why it strictly increases: an earlier token t was written on a quorum Q, each member of Q still
 * holding that lock when it wrote, so before any later holder could lock it. Our quorum shares a
 * member m with Q. m's reading is trusted only if m kept its data since (its counter was written
 * in its current epoch) or was declared brand new, so m reads at least t, and m raises only to a
 * proposal above what it read. A member that lost its data reads untrusted, and a candidate is
 * never written to it; only an established token is (the sync), after which it is trusted again.
 * Each member keeps one counter for all resources (per slot on a Cluster), so one sync restores
 * it for new resources too: fencing survives rolling restarts. Tokens can go back only if a
 * majority of members loses its data at once; then Redlock.restoreFencing() is the operator's way
 * back (README, "Fencing").
 *
 * The sync goes to the members whose acquire answer (of any kind) named an epoch E past its
 * quarantine, read before the winning propose round was sent; bound to E. Why that is sound: the
 * sync makes E trust our token t, so t must cover every issued token T that E's member may have
 * held in an earlier epoch, for every resource (the counter is shared, and holders of other
 * resources raise it concurrently). Such a T was raised there before E began, by a holder whose
 * lock began earlier still, so T was issued within maxLockTtl of E's start, i.e. before E's
 * quarantine ended (as the quarantine itself argues). Invariant: an issued token is covered by
 * every quorum of trusted counters (it was raised on a quorum; a member of it that lost its data
 * is untrusted until a sync covers it). The winning round ran after E's quarantine ended, on a
 * quorum of trusted counters all below t, so t covers every such T, and the sync keeps the
 * invariant. A sync into a quarantined epoch, or one decided on counters read before the epoch
 * was known, would not: a review found that X's token 2 for r1, raised on k, then lost in k's
 * restart, could be undercut when a re-sent acquire for r2 named k's new epoch and token 1 was
 * synced there, letting a later lock of r1 on k and another member get 2 again. In any other
 * epoch the sync is refused (fence.lua: an ioredis re-send to a new process, a failover). With
 * the quarantine off no epoch qualifies, and members that lost their counters stay untrusted.
 */
export async function fenceToken(
  members: readonly Member[],
  settings: Settings,
  resources: readonly string[],
  value: string,
  readings: readonly FenceReading[],
  epochs: readonly (string | undefined)[],
  signal: AbortSignal | undefined,
): Promise<Fence | undefined> {
  // `readings` has holes where members were not waited for: for...of reads them as undefined.
  let proposed = 1;
  for (const reading of readings) if (reading) proposed = Math.max(proposed, reading.highest + 1);
  for (let tries = 0; tries < 3; tries++) {
    let highest = 0;
    // The epochs a sync after this round may go to: those known before it is sent.
    const knownBefore = [...epochs];
    const round = await runRound<LockAnswer>({
      operation: 'fence',
      members,
      send: (member, index) =>
        member.fence(resources, value, proposed, 'propose', epochs[index] ?? '').then((reply) => {
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
      const token = proposed;
      const sync = () =>
        members.forEach((member, index) => {
          const epoch = knownBefore[index];
          if (round.votes[index]!.vote !== 'locked' && epoch !== undefined) member.fence(resources, value, token, 'sync', epoch).catch(() => undefined);
        });
      return { token, sync };
    }
    if (highest < proposed) return undefined; // not outbid: too few members with trusted counters
    proposed = highest + 1;
  }
  return undefined;
}
