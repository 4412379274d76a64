/**
 * One round: send one script to every member at once and count the answers as they arrive.
 *
 * All members are sent to in the same tick, so a single deadline `timeoutMs` after the start is
 * exactly a per-member timeout for each of them; one timer per round instead of one per member.
 * A member that misses the deadline is counted as 'timeout'; its command is not cancelled (Redis
 * has no way to), which is why every rollback and release goes to every member: on the same
 * connection our release is queued behind the late command and runs after it.
 */
import pTimeout from 'p-timeout';
import { type Clock, timersOf } from '../clock/index.js';
import { channels, publish } from '../diagnostics.js';
import type { Member } from '../member.js';
import { decide, quorumOf } from './tally.js';
import type { Answered, MemberVote } from './votes.js';

export interface RoundSpec<Answer extends string> {
  /** What the round does, for the vote events. */
  operation: 'acquire' | 'extend' | 'release' | 'fence';
  members: readonly Member[];
  send(member: Member, index: number): Promise<Answered<Answer>>;
  /** Whether an answer counts toward quorum. */
  counts(answer: Answer): boolean;
  timeoutMs: number;
  /**
   * false: settle the moment the outcome is known (quorum reached, or out of reach), without
   * waiting for stragglers. true: hear from every member, up to the deadline.
   */
  waitForAll: boolean;
  clock: Clock;
  signal?: AbortSignal | undefined;
}

export interface RoundResult<Answer extends string> {
  won: boolean;
  votes: MemberVote<Answer>[];
  yesCount: number;
  /** Clock reading taken before the first command was sent. */
  startedAt: number;
  /** From startedAt to the decision. */
  elapsedMs: number;
}

/** Rejects with `signal.reason` if the signal aborts before the round is decided. */
export async function runRound<Answer extends string>(spec: RoundSpec<Answer>): Promise<RoundResult<Answer>> {
  const { members, clock } = spec;
  const startedAt = clock.now();
  const votes: MemberVote<Answer>[] = members.map((member) => ({ member: member.id, vote: 'pending', ms: 0 }));
  let yesCount = 0;
  let noCount = 0;
  let closed = false;

  const snapshot = (unanswered: 'pending' | 'timeout'): RoundResult<Answer> => {
    closed = true;
    const elapsedMs = clock.now() - startedAt;
    const final = votes.map((vote) => (vote.vote === 'pending' ? { ...vote, vote: unanswered, ms: unanswered === 'timeout' ? elapsedMs : 0 } : vote));
    return { won: yesCount >= quorumOf(members.length), votes: final, yesCount, startedAt, elapsedMs };
  };

  const decided = new Promise<RoundResult<Answer>>((resolve) => {
    const record = (index: number, vote: MemberVote<Answer>) => {
      if (closed) return; // a straggler after the decision changes nothing
      votes[index] = vote;
      publish(channels.vote, () => ({ operation: spec.operation, ...vote }));
      if (vote.vote !== 'error' && spec.counts(vote.vote as Answer)) yesCount++;
      else noCount++;
      const settled = spec.waitForAll ? yesCount + noCount === members.length : decide(yesCount, noCount, members.length) !== 'open';
      if (settled) resolve(snapshot('pending'));
    };
    if (members.length === 0) resolve(snapshot('pending'));
    members.forEach((member, index) => {
      let sent: Promise<Answered<Answer>>;
      try {
        sent = spec.send(member, index);
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent.then(
        (answer) => {
          const ms = clock.now() - startedAt;
          if (typeof answer === 'string') return record(index, { member: member.id, vote: answer, ms });
          const vote: MemberVote<Answer> = { member: member.id, vote: answer.vote, ms };
          if (answer.heldForMs !== undefined) vote.heldForMs = answer.heldForMs;
          if (answer.place !== undefined) vote.place = answer.place;
          if (answer.quarantinedForMs !== undefined) vote.quarantinedForMs = answer.quarantinedForMs;
          if (answer.notCounting !== undefined) vote.notCounting = answer.notCounting;
          record(index, vote);
        },
        (error: unknown) =>
          record(index, {
            member: member.id,
            vote: 'error',
            ms: clock.now() - startedAt,
            error: error instanceof Error ? error : new Error(String(error)),
          }),
      );
    });
  });

  // p-timeout builds a TimeoutError with a stack trace on every call, before it knows whether it
  // will time out; with a fallback that error is never seen, and capturing its stack was ~6 % of
  // an acquire's CPU. The error is made synchronously inside pTimeout(), so no stack for it alone.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let deadline: Promise<RoundResult<Answer>>;
  try {
    deadline = pTimeout(decided, {
      milliseconds: Math.max(0.001, spec.timeoutMs), // p-timeout rejects 0
      fallback: () => snapshot('timeout'),
      // The deadline runs on the injected clock, so a simulation on a ManualClock drives it too.
      customTimers: timersOf(clock),
      ...(spec.signal ? { signal: spec.signal } : {}),
    });
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
  try {
    return await deadline;
  } finally {
    closed = true;
  }
}
