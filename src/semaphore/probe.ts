/**
 * What the members say about a semaphore's permits, in one call per member: the PTTL of every
 * permit key and the length of every permit's line (one pipeline; the keys share a hash tag, so
 * one Cluster node answers). Advisory
 * only: the acquire uses it to pick a permit that is likely free, and holders() reports it. No
 * safety rests on it — a permit is won only by the exclusive lock's acquire on that one key — so
 * it reads with plain commands, off the members' ordered script path, and a member that does not
 * answer within nodeTimeout is left out.
 */
import pTimeout from 'p-timeout';
import { timersOf } from '../clock/index.js';
import type { Member } from '../members/member.js';
import { keyPrefixOf, type MemberClient } from '../members/id.js';
import type { Settings } from '../options/settings.js';
import { quorumOf } from '../quorum/tally.js';
import { resourceKeys } from '../store/keys.js';
import type { PermitReading } from './errors.js';

/** PTTL's reply for a key that does not exist. */
const ABSENT = -2;

interface Pipelining {
  pipeline(commands: string[][]): { exec(): Promise<[Error | null, unknown][] | null> };
}

/** PTTL of every permit key, then ZCARD of every permit's line (its waiters, lapsed places included). */
async function readMember(client: MemberClient, keys: readonly string[]): Promise<{ pttls: number[]; waiting: number[] }> {
  const prefix = keyPrefixOf(client);
  const lines = keys.map((key) => resourceKeys([key], prefix)[1]!);
  const commands = [...keys.map((key) => ['pttl', key]), ...lines.map((line) => ['zcard', line])];
  const replies = await (client as unknown as Pipelining).pipeline(commands).exec();
  if (!replies) throw new Error('pipeline discarded');
  const numbers = replies.map(([error, reply]) => {
    if (error) throw error;
    return Number(reply);
  });
  return { pttls: numbers.slice(0, keys.length), waiting: numbers.slice(keys.length) };
}

/** Every member's reading of `keys` (index-aligned with `members`), each bounded by nodeTimeout (or `limitMs`). */
export async function readPermits(
  members: readonly Member[],
  clients: readonly MemberClient[],
  settings: Settings,
  keys: readonly string[],
  limitMs = settings.nodeTimeout,
): Promise<PermitReading[]> {
  const milliseconds = Math.max(1, Math.min(settings.nodeTimeout, limitMs));
  return Promise.all(
    members.map(async (member, index): Promise<PermitReading> => {
      if (member.notCounting !== undefined) return { member: member.id, pttls: undefined, error: `does not count: ${member.notCounting}` };
      try {
        const { pttls, waiting } = await pTimeout(readMember(clients[index]!, keys), { milliseconds, customTimers: timersOf(settings.clock) });
        return { member: member.id, pttls, waiting };
      } catch (error) {
        return { member: member.id, pttls: undefined, error: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
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
