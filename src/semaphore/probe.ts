/**
 * What the members say about a semaphore's permits, in one call per member: the PTTL of every
 * permit key (one pipeline; the keys share a hash tag, so one Cluster node answers). Advisory
 * only: the acquire uses it to pick a permit that is likely free, and holders() reports it. No
 * safety rests on it — a permit is won only by the exclusive lock's acquire on that one key — so
 * it reads with plain commands, off the members' ordered script path, and a member that does not
 * answer within nodeTimeout is left out.
 */
import pTimeout from 'p-timeout';
import { timersOf } from '../clock/index.js';
import type { Member } from '../members/member.js';
import type { MemberClient } from '../members/id.js';
import type { Settings } from '../options/settings.js';
import { quorumOf } from '../quorum/tally.js';
import type { PermitReading } from './errors.js';

/** PTTL's reply for a key that does not exist. */
const ABSENT = -2;

interface Pipelining {
  pipeline(commands: string[][]): { exec(): Promise<[Error | null, unknown][] | null> };
}

async function readMember(client: MemberClient, keys: readonly string[]): Promise<number[]> {
  const replies = await (client as unknown as Pipelining).pipeline(keys.map((key) => ['pttl', key])).exec();
  if (!replies) throw new Error('pipeline discarded');
  return replies.map(([error, reply]) => {
    if (error) throw error;
    return Number(reply);
  });
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
        const pttls = await pTimeout(readMember(clients[index]!, keys), { milliseconds, customTimers: timersOf(settings.clock) });
        return { member: member.id, pttls };
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
  /** Permits whose key is absent on a quorum: likely free (a line or a quarantine may still refuse). */
  free: number[];
  /** Permits whose key is present on a quorum, with the quorum-th longest remaining time: a quorum holds it at least that long. */
  held: { permit: number; remainingMs: number }[];
}

export function viewOf(readings: readonly PermitReading[], permits: number): PermitView {
  const quorum = quorumOf(readings.length);
  const answers = readings.flatMap((reading) => (reading.pttls ? [reading.pttls] : []));
  const view: PermitView = { answered: answers.length >= quorum, free: [], held: [] };
  for (let permit = 0; permit < permits; permit++) {
    const present: number[] = [];
    let absent = 0;
    for (const pttls of answers) {
      const pttl = pttls[permit]!;
      if (pttl === ABSENT) absent++;
      // -1: a key without expiry (never ours, whose keys always have one): held for good.
      else present.push(pttl < 0 ? Infinity : pttl);
    }
    if (absent >= quorum) view.free.push(permit);
    if (present.length >= quorum) view.held.push({ permit, remainingMs: present.sort((a, b) => b - a)[quorum - 1]! });
  }
  return view;
}
