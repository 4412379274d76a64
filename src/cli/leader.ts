/**
 * `leader <election>`: who leads, as a quorum of members says (election.leader(), judge.ts): the
 * leader's id and term, vacant, or unknown, with the members that answered. Read-only.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { LeaderUnknownError, quorumOf, Redlock, systemClock } from '../index.js';
import type { MemberVote } from '../quorum/votes.js';
import { formatMs } from './duration.js';
import { EXIT } from './errors.js';
import { memberStates } from './member-state.js';
import type { InspectOptions } from './inspect.js';
import { connect } from './members.js';
import { table } from './table.js';

/** `leader`'s exit codes besides 0 (a leader is known) and 64 (usage). */
export const LEADER_EXIT = {
  /** A quorum says nobody leads. 3, as `systemctl is-active` and LSB status say "not running". */
  vacant: 3,
  /** Too few members answered to tell (unreachable, or absent inside their restart quarantine). */
  unavailable: EXIT.unavailable,
  /** Enough answered, but no quorum names one leader yet: an election or a handover is under way; ask again. */
  undecided: EXIT.lost,
} as const;

interface MemberAnswer {
  member: string;
  answered: boolean;
  /** Why it does not count, or the error; absent for a plain answer. */
  note?: string;
}

export async function leader(election: string, options: InspectOptions): Promise<number> {
  const connected = connect(options.members, { commandTimeoutMs: options.timeoutMs, connectTimeoutMs: options.timeoutMs }, options.tls);
  // Each member's answer to the read, from the library's vote channel: answered or not, and why.
  const heard = new Map<string, MemberVote<string>>();
  const listener = (message: unknown) => {
    const vote = message as MemberVote<string> & { operation: string };
    if (vote.operation === 'read') heard.set(vote.member, vote);
  };
  subscribe('quorumlock:vote', listener);
  let redlock: Redlock | undefined;
  try {
    await connected.ready(options.timeoutMs);
    // leader() waits nodeTimeout per member: --timeout, within what an election's ttl allows
    // (more than 5 × nodeTimeout, at most --max-lock-ttl; the ttl plays no part in a read).
    const nodeTimeout = Math.min(options.timeoutMs, Math.floor(options.maxLockTtl / 6));
    redlock = new Redlock(connected.clients, { maxLockTtl: options.maxLockTtl, nodeTimeout });
    const reader = redlock.election(election, { ttl: options.maxLockTtl });
    // A member counts once its role is read (as trust waits for it, inspect.ts).
    for (let waited = 0; waited < options.timeoutMs && redlock.members.some((member) => member.role === undefined); waited += 10) await systemClock.sleep(10);
    let found: Awaited<ReturnType<typeof reader.leader>>;
    let unknown: LeaderUnknownError | undefined;
    try {
      found = await reader.leader();
    } catch (error) {
      if (!(error instanceof LeaderUnknownError)) throw error;
      unknown = error;
      found = null;
    }
    const members = options.members.map(({ name }, index): MemberAnswer => {
      const vote = heard.get(name);
      const judged = unknown?.votes.find((candidate) => candidate.member === name);
      if (vote?.vote === 'done') return { member: name, answered: judged?.error === undefined, ...(judged?.error === undefined ? {} : { note: judged.error }) };
      // Not answered: its connection says why (connection refused, not answering, …).
      const connection = { client: connected.clients[index]!, lastError: connected.lastError[index], commandTimeoutMs: options.timeoutMs };
      const [described] = memberStates([name], [connection], vote ? [vote] : undefined, nodeTimeout);
      return { member: name, answered: false, note: described!.state };
    });
    const answered = members.filter((member) => member.answered).length;
    const quorum = quorumOf(members.length);
    const state = unknown ? 'unknown' : found ? 'led' : 'vacant';
    const code = unknown ? LEADER_EXIT[unknown.why] : found ? EXIT.ok : LEADER_EXIT.vacant;
    if (options.json) {
      options.out(
        JSON.stringify({
          election,
          state,
          ...(found ? { leader: { ...found, remainingMs: Math.round(found.remainingMs) } } : {}),
          ...(unknown ? { why: unknown.why } : {}),
          quorum,
          answered,
          members,
          exitCode: code,
        }) + '\n',
      );
      return code;
    }
    const count = `${answered} of ${members.length} members answered (quorum ${quorum})`;
    if (found) options.out(`${election}: led by ${found.id}, term ${found.term} (held for at least ${formatMs(found.remainingMs)} more); ${count}\n`);
    else if (!unknown) options.out(`${election}: vacant, nobody leads; ${count}\n`);
    else {
      const why = unknown.why === 'unavailable' ? 'too few members answered' : 'no quorum names one leader yet (an election or a handover is under way)';
      options.out(`${election}: cannot tell who leads: ${why}; ${count}\n`);
    }
    if (unknown || answered < members.length)
      options.out(
        table(
          ['member', 'answered', 'note'],
          members.map((member) => [member.member, member.answered ? 'yes' : 'no', member.note ?? '-']),
        ),
      );
    return code;
  } finally {
    unsubscribe('quorumlock:vote', listener);
    await redlock?.quit();
    connected.close();
  }
}
