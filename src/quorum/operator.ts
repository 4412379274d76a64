/**
 * One call on every member, each waited for up to a deadline: the operator's calls (trustMembers,
 * restoreFencing), the reads (election.leader(), a semaphore's permits) and the election's leader
 * record. One round like any other (round.ts), so it has a deadline — a member that never answers
 * is reported as timed out, not waited for forever — and every member's answer is reported, one
 * result per member. Whether a member's answer counts is the round's decision (Round.#count: a
 * member that must not count, or a second address of a server already heard), reported in
 * `notCounting`; what to make of it is the caller's.
 */
import type { Clock } from '../clock/index.js';
import type { Member } from '../members/member.js';
import { quorumOf } from '../tally.js';
import { runRound, type RoundSpec } from './round.js';

/** What a round reads of a member besides sending to it: its name and whether its answers count. */
export type RoundMember = Pick<Member, 'id' | 'notCounting' | 'serverId'>;

export interface MemberResult<T> {
  member: string;
  ok: boolean;
  value?: T;
  error?: Error;
  /** The member did not answer by the deadline (`error` says so too). */
  timedOut?: true;
  /** Why the member's answer must not count (it is still in `value`): not a master, may evict, the same server as another member. */
  notCounting?: string;
}

export interface OperatorCall<M extends RoundMember, T> {
  operation: RoundSpec<string>['operation'];
  members: readonly M[];
  /** The call on one member; `call.ageMs()`: how long ago the operator's call began, on `clock`; `call.open()`: whether it still waits. */
  call(member: M, call: { ageMs(): number; open(): boolean }): Promise<T>;
  timeoutMs: number;
  /**
   * With a limit, a member that shows life (an answer to an earlier call of ours, its connection's
   * ready check or INFO) is waited for past `timeoutMs`, up to the limit from the round's start
   * (round.ts, #silentAt): a read on connections still being made, on a busy machine, is not an
   * outage. A member that answers nothing still times out at `timeoutMs`.
   */
  limitMs?: number | undefined;
  clock: Clock;
}

/**
 * The limit of a read's round (election.leader(), a semaphore's holders()): they have no budget of
 * their own. Past it, a member that keeps showing life but does not answer is reported as silent.
 */
const READ_LIMIT_MS = 1_000;

/** A read's limit with `nodeTimeout` (never below it). */
export const readLimitMs = (nodeTimeout: number): number => Math.max(nodeTimeout, READ_LIMIT_MS);

/** Runs `call` on every member at once and waits for each, up to `timeoutMs` from the tick that sent them. */
export async function onEveryMember<M extends RoundMember, T>(spec: OperatorCall<M, T>): Promise<MemberResult<T>[]> {
  const { clock } = spec;
  const values = new Map<number, T>();
  const startedAt = clock.now();
  const callAgeMs = () => clock.now() - startedAt;
  const round = await runRound<'done', T>({
    operation: spec.operation,
    // The round reads only RoundMember's fields of a member; sending is `call`'s.
    members: spec.members as unknown as readonly Member[],
    // Every member is heard and reported; what a quorum of them says is the caller's to judge.
    quorum: quorumOf(spec.members.length),
    send: (member, _index, open) => spec.call(member as unknown as M, { ageMs: callAgeMs, open }),
    answer: (value, index) => {
      values.set(index, value);
      return 'done';
    },
    counts: () => true,
    timeoutMs: spec.timeoutMs,
    limitMs: spec.limitMs,
    waitForAll: true,
    clock,
  });
  return round.votes.map((vote, index): MemberResult<T> => {
    const notCounting = vote.notCounting === undefined ? {} : { notCounting: vote.notCounting };
    if (vote.vote === 'done') return { member: vote.member, ok: true, value: values.get(index) as T, ...notCounting };
    if (vote.vote === 'error' && vote.error) return { member: vote.member, ok: false, error: vote.error, ...notCounting };
    const error = new Error(`quorumlock: ${vote.member} did not answer within ${spec.timeoutMs} ms`);
    return { member: vote.member, ok: false, error, timedOut: true, ...notCounting };
  });
}
