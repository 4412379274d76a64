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
   * Sends the token to every member whose epoch we know and that did not take it, bound to that
   * epoch. Call it only while the lock is still valid, right after checking (attempt.ts): the
   * argument below needs that no one else can have established a token since ours.
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
 * The sync goes to every member whose epoch named itself in any reply read so far (an acquire
 * answer of any kind, stragglers included, or a propose answer), bound to that epoch. Why that is
 * sound: a sync makes epoch E trust our token t, which is right if every token established before
 * E began is at most t. Tokens established before our lock are below t (the argument above), and
 * while our lock is valid nobody else can establish one: our keys sit on a quorum, and a propose
 * needs its holder's key on a quorum. E named itself in a reply we read before the sync, sent
 * while the lock is still valid, so it began before. In any other epoch the sync is refused (see
 * fence.lua: an ioredis re-send to a new process, a failover, could otherwise make a forgetful
 * member look as if it knew the latest token).
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
  // Epochs named by propose answers (any try, stragglers included), beside the acquire round's.
  const heard: (string | undefined)[] = [];
  const epochOf = (index: number) => epochs[index] ?? heard[index];
  for (let tries = 0; tries < 3; tries++) {
    let highest = 0;
    const round = await runRound<LockAnswer>({
      operation: 'fence',
      members,
      send: (member, index) =>
        member.fence(resources, value, proposed, 'propose', epochOf(index) ?? '').then((reply) => {
          highest = Math.max(highest, reply.highest);
          heard[index] ??= reply.epoch;
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
          const epoch = epochOf(index);
          if (round.votes[index]!.vote !== 'locked' && epoch !== undefined) member.fence(resources, value, token, 'sync', epoch).catch(() => undefined);
        });
      return { token, sync };
    }
    if (highest < proposed) return undefined; // not outbid: too few members with trusted counters
    proposed = highest + 1;
  }
  return undefined;
}
