/**
 * What the members say about a semaphore's permits, in one call per member: the PTTL of every
 * permit key and the length of every permit's line (permits.lua; the keys share a hash tag, so
 * one Cluster node answers). Advisory only: the acquire uses it to pick a permit that is likely
 * free, and holders() reports it. No safety rests on it — a permit is won only by the exclusive
 * lock's acquire on that one key. Still, it goes as every call does: on each member's ordered path
 * (RedisMember.readPermits), all members in one round with a deadline (quorum/operator.ts), and
 * a member that does not count (the round says which) or does not answer in time is left out.
 */
import { onEveryMember, readLimitMs, type RoundMember } from '../quorum/operator.js';
import type { Settings } from '../options/settings.js';
import type { PermitCounts } from '../store/protocol.js';
import { quorumOf } from '../tally.js';
import type { PermitReading } from '../errors.js';

/** PTTL's reply for a key that does not exist. */
const ABSENT = -2;

/** What a semaphore needs of a member: RedisMember's permit read (src/members/redis-member.ts). */
export interface PermitMember extends RoundMember {
  readPermits(resources: readonly string[]): Promise<PermitCounts>;
}

/**
 * Every member's reading of `keys` (index-aligned with `members`), in one round: a silent member
 * is cut at nodeTimeout (or `limitMs`, if shorter), one that shows life is waited for up to
 * `limitMs` (operator.ts; by default readLimitMs).
 */
export async function readPermits(
  members: readonly PermitMember[],
  settings: Settings,
  keys: readonly string[],
  limitMs = readLimitMs(settings.nodeTimeout),
): Promise<PermitReading[]> {
  const timeoutMs = Math.max(1, Math.min(settings.nodeTimeout, limitMs));
  const results = await onEveryMember({
    operation: 'read',
    members,
    call: (member) => member.readPermits(keys),
    timeoutMs,
    limitMs: Math.max(timeoutMs, limitMs),
    clock: settings.clock,
  });
  return results.map(({ member, value, error, timedOut, notCounting }): PermitReading => {
    if (notCounting !== undefined) return { member, pttls: undefined, error: `does not count: ${notCounting}` };
    if (timedOut) return { member, pttls: undefined, error: `no answer within ${timeoutMs} ms` };
    if (value === undefined) return { member, pttls: undefined, error: error?.message ?? 'no answer' };
    return { member, pttls: value.pttls, waiting: value.waiting };
  });
}

/** What a quorum of the members says about each permit. */
export interface PermitView {
  /** Whether at least a quorum answered at all. */
  answered: boolean;
  /** Permits whose key is absent, with nobody in line, on a quorum: likely free (a quarantine may still refuse). */
  free: number[];
  /** Permits whose key is present on a quorum, with the quorum-th longest remaining time: a quorum holds it at least that long. */
  held: { permit: number; remainingMs: number }[];
  /** Per permit, how many wait in its line, as the median answering member counts them. */
  waiting: number[];
}

export function viewOf(readings: readonly PermitReading[], permits: number): PermitView {
  const quorum = quorumOf(readings.length);
  const answers = readings.flatMap((reading) => (reading.pttls ? [reading.pttls] : []));
  // Free for us: absent and nobody in line there (a line keeps a free permit for its first waiter).
  const open = readings.flatMap((reading) => (reading.pttls ? [reading.pttls.map((pttl, permit) => pttl === ABSENT && !reading.waiting?.[permit])] : []));
  const view: PermitView = { answered: answers.length >= quorum, free: [], held: [], waiting: [] };
  const lines = readings.flatMap((reading) => (reading.waiting ? [reading.waiting] : []));
  for (let permit = 0; permit < permits; permit++) {
    const present: number[] = [];
    let absent = 0;
    for (const pttls of answers) {
      const pttl = pttls[permit]!;
      if (pttl === ABSENT) absent++;
      // -1: a key without expiry (never ours, whose keys always have one): held for good.
      else present.push(pttl < 0 ? Infinity : pttl);
    }
    if (absent >= quorum && open.filter((row) => row[permit]).length >= quorum) view.free.push(permit);
    if (present.length >= quorum) view.held.push({ permit, remainingMs: present.sort((a, b) => b - a)[quorum - 1]! });
    const counts = lines.map((waiting) => waiting[permit]!).sort((a, b) => a - b);
    view.waiting.push(counts[Math.floor(counts.length / 2)] ?? 0);
  }
  return view;
}
