/**
 * The round's deadlines on a ManualClock and fake members, one mechanism at a time
 * (docs/internals.md#timers-before-io):
 * - a deadline fires before the replies that already arrived are read: they must still count;
 * - the tick that sends a round goes on (a busy caller): a member's time starts when it ends;
 * - a member works through a backlog of our own calls: while it keeps answering the ones ahead
 *   of ours it is alive, up to the round's limit, and a silent member is still timed out;
 * - a new connection's first calls (connect, the epoch read our write waits for): a member that
 *   reports a sign of life (heardAt) is alive from then on, up to the limit.
 *
 * Driving: `clock.advance()` fires due timers synchronously, as Node's timers phase does; what
 * the test does right after it, before yielding, stands for the poll phase that follows (replies
 * read from the socket); `turn()` then lets immediates and promise jobs run.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock/index.js';
import type { Member } from '../../../src/members/member.js';
import { runRound, type RoundResult } from '../../../src/quorum/round.js';
import type { LockAnswer } from '../../../src/quorum/votes.js';
import { quorumOf } from '../../../src/tally.js';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A reply the test hands out by hand. */
interface Deferred {
  answer(vote: LockAnswer): void;
}

function fakeMembers(count: number): Member[] {
  return Array.from({ length: count }, (_, i) => ({ id: `fake-${i}` }) as unknown as Member);
}

/** A round whose replies the test resolves: `replies[i]` answers member i. */
function manualRound(clock: ManualClock, members: Member[], options: { timeoutMs: number; limitMs?: number }) {
  const replies: Deferred[] = [];
  const round = runRound<LockAnswer>({
    operation: 'acquire',
    members,
    quorum: quorumOf(members.length),
    send: (_member, index) => new Promise<LockAnswer>((resolve) => (replies[index] = { answer: resolve })),
    counts: (answer) => answer === 'locked',
    waitForAll: false,
    clock,
    ...options,
  });
  return { round, replies };
}

/**
 * Members that run our calls one at a time, in the order sent, `perCallMs` each (a backlog on
 * one connection): every round sent to them gets 'locked' from each when its turn comes.
 */
function backloggedMembers(clock: ManualClock, count: number, perCallMs: number) {
  const members = fakeMembers(count);
  const queues = members.map(() => [] as (() => void)[]);
  const busy = members.map(() => false);
  const next = (index: number) => {
    const call = queues[index]!.shift();
    busy[index] = call !== undefined;
    if (call) clock.setTimer(() => (call(), next(index)), perCallMs);
  };
  const send = (member: Member, index: number) =>
    new Promise<LockAnswer>((resolve) => {
      queues[index]!.push(() => resolve('locked'));
      if (!busy[index]) next(index);
    });
  return { members, send };
}

/** Runs until no timer is pending: each step fires the next due timer, then lets the loop turn. */
async function runUntilIdle(clock: ManualClock): Promise<void> {
  for (;;) {
    await turn();
    const next = clock.nextTimerAt();
    if (next === undefined) return;
    clock.advance(Math.max(0, next - clock.now()));
  }
}

describe('a deadline does not outrun replies that already arrived', () => {
  it('counts replies read right after the deadline timer fired (the poll phase after the timers phase)', async () => {
    const clock = new ManualClock(1_000);
    const { round, replies } = manualRound(clock, fakeMembers(3), { timeoutMs: 50 });
    await turn();
    // The loop was stalled past the deadline: the timers phase fires it first...
    clock.advance(60);
    // ...then the poll phase reads the replies that reached the socket meanwhile.
    replies[0]!.answer('locked');
    replies[1]!.answer('locked');
    const result = await round;
    expect(result.won).toBe(true);
    expect(result.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'pending']);
  });

  it("starts each member's time when the sending tick ends, not when the round started", async () => {
    const clock = new ManualClock(1_000);
    const { round, replies } = manualRound(clock, fakeMembers(3), { timeoutMs: 50 });
    // The caller's tick runs on for 80 ms after sending (a busy handler, a GC pause): the
    // commands are written only when it ends.
    clock.advance(80);
    await turn();
    clock.advance(2); // the members answer 2 ms after the write
    for (const reply of replies) reply.answer('locked');
    const result = await round;
    expect(result.won).toBe(true);
    expect(result.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'pending']); // decided at quorum
  });
});

describe('a member working through a backlog of our calls is alive', () => {
  it('waits for a backlog it keeps answering when the caller gives a limit; without one, the deadline stays', async () => {
    const settle = async (limitMs: number | undefined) => {
      const clock = new ManualClock(0);
      const { members, send } = backloggedMembers(clock, 3, 20);
      const rounds: Promise<RoundResult<LockAnswer>>[] = [];
      // 20 rounds at once: the last one's calls are 20th in line, answered 400 ms later, far past
      // a 50 ms timeout, but each member answers one of our earlier calls every 20 ms.
      for (let i = 0; i < 20; i++)
        rounds.push(
          runRound({
            operation: 'acquire',
            members,
            quorum: quorumOf(members.length),
            send,
            counts: (a) => a === 'locked',
            waitForAll: false,
            clock,
            timeoutMs: 50,
            limitMs,
          }),
        );
      await runUntilIdle(clock);
      return Promise.all(rounds);
    };
    const withLimit = await settle(1_000);
    expect(withLimit.filter((result) => result.won)).toHaveLength(20);
    expect(withLimit.at(-1)!.elapsedMs).toBe(400);
    // No limit (a release, say): calls 1 and 2 are answered at 20 and 40 ms, the rest time out at 50.
    const without = await settle(undefined);
    expect(without.map((result) => result.won)).toEqual([true, true, ...Array(18).fill(false)]);
    expect(without.at(-1)!.elapsedMs).toBe(50);
  });

  it('cuts a backlog at the limit, and times out a silent member at its own deadline meanwhile', async () => {
    const clock = new ManualClock(0);
    const backlog = backloggedMembers(clock, 2, 20);
    const members = [...backlog.members, ...fakeMembers(1)]; // the third never answers
    const send = (member: Member, index: number) => (index < 2 ? backlog.send(member, index) : new Promise<LockAnswer>(() => {}));
    const rounds: Promise<RoundResult<LockAnswer>>[] = [];
    for (let i = 0; i < 30; i++)
      rounds.push(
        runRound({
          operation: 'acquire',
          members,
          quorum: quorumOf(members.length),
          send,
          counts: (a) => a === 'locked',
          waitForAll: true,
          clock,
          timeoutMs: 50,
          limitMs: 300,
        }),
      );
    await runUntilIdle(clock);
    const results = await Promise.all(rounds);
    for (const result of results) {
      // Never past the limit, however busy the members are.
      expect(result.elapsedMs).toBeLessThanOrEqual(300);
      // The silent member times out 50 ms after the write, not at the limit.
      expect(result.votes[2]).toMatchObject({ vote: 'timeout', ms: 50 });
    }
    // Rounds whose calls come within the limit get both answers (one every 20 ms: calls 1 to 14
    // by 280 ms); from call 16 on they are cut at 300 ms.
    expect(results.slice(0, 14).every((result) => result.won)).toBe(true);
    expect(results.slice(15).every((result) => !result.won && result.elapsedMs === 300)).toBe(true);
    // Cut by the limit while still answering: not waited for, not timed out (no outage).
    expect(results.at(-1)!.votes.map((vote) => vote.vote)).toEqual(['pending', 'pending', 'timeout']);
    expect(clock.sleepers).toBe(0); // no round leaves a timer behind
  });
});

describe("a new connection's first calls: a member's sign of life moves its deadline", () => {
  /** Members whose heardAt the test sets, as an answered INFO or epoch read would. */
  function heardMembers(count: number) {
    const heard: (number | undefined)[] = Array(count).fill(undefined);
    const members = Array.from({ length: count }, (_, i) => ({
      id: `fake-${i}`,
      get heardAt() {
        return heard[i];
      },
    })) as unknown as Member[];
    return { members, heard };
  }

  it('waits for a member that showed life within timeoutMs of its deadline, up to the limit; not for a silent one, nor without a limit', async () => {
    const run = async (limitMs: number | undefined) => {
      const clock = new ManualClock(1_000);
      const { members, heard } = heardMembers(3);
      const { round, replies } = manualRound(clock, members, { timeoutMs: 50, limitMs });
      await turn();
      // Member 0 answers its epoch read at 40 ms, member 1 at 45 ms; our calls are written then,
      // and answered 30 ms later: 70 and 75 ms after the sending tick, past a 50 ms timeout.
      clock.advance(40);
      heard[0] = clock.now();
      clock.advance(5);
      heard[1] = clock.now();
      await turn();
      clock.advance(5); // the first deadline, 50 ms after the sending tick
      await turn();
      clock.advance(20);
      await turn();
      replies[0]!.answer('locked');
      clock.advance(5);
      await turn();
      replies[1]!.answer('locked');
      return { result: await round, clock };
    };
    const withLimit = await run(1_000);
    expect(withLimit.result.won).toBe(true);
    expect(withLimit.result.elapsedMs).toBe(75);
    // The silent member 2 timed out at its own deadline meanwhile (50 ms, no sign of life).
    expect(withLimit.result.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'timeout']);
    expect(withLimit.clock.sleepers).toBe(0);
    // Without a limit (a release, say) the round ends timeoutMs after the sending tick.
    const without = await run(undefined);
    expect(without.result.won).toBe(false);
    expect(without.result.elapsedMs).toBe(50);
  });

  it('counts a member timed out at its own deadline once: its late answer, while the round waits for another, changes nothing', async () => {
    const clock = new ManualClock(1_000);
    const { members, heard } = heardMembers(3);
    const { round, replies } = manualRound(clock, members, { timeoutMs: 50, limitMs: 1_000 });
    await turn();
    replies[0]!.answer('locked');
    clock.advance(40);
    heard[2] = clock.now(); // member 2 shows life: waited for past 50 ms
    await turn();
    clock.advance(10); // member 1's deadline: timed out; the round stays open (1 yes, 1 no of 3)
    await turn();
    replies[1]!.answer('taken'); // late: counted already, as a timeout
    await turn();
    clock.advance(20);
    replies[2]!.answer('locked');
    const result = await round;
    expect(result.won).toBe(true);
    expect(result.votes.map((vote) => vote.vote)).toEqual(['locked', 'timeout', 'locked']);
  });

  it('a sign of life before the round, or a member that never shows one, moves nothing', async () => {
    const clock = new ManualClock(1_000);
    const { members, heard } = heardMembers(3);
    heard[0] = clock.now() - 10; // an answer before the round began
    const { round } = manualRound(clock, members, { timeoutMs: 50, limitMs: 1_000 });
    await runUntilIdle(clock);
    const result = await round;
    expect(result.won).toBe(false);
    expect(result.elapsedMs).toBe(50);
    expect(result.votes.map((vote) => vote.vote)).toEqual(['timeout', 'timeout', 'timeout']);
  });

  it('a member that keeps showing life but never answers is cut at the limit, reported not waited for', async () => {
    const clock = new ManualClock(1_000);
    const { members, heard } = heardMembers(3);
    const { round } = manualRound(clock, members, { timeoutMs: 50, limitMs: 200 });
    await turn();
    // Members 0 and 1 answer something every 40 ms (a backlog of reads ahead of ours, say); member 2 never does.
    for (let at = 40; at <= 200; at += 40) {
      clock.advance(40);
      heard[0] = heard[1] = clock.now();
      await turn();
    }
    await runUntilIdle(clock);
    const result = await round;
    expect(result.won).toBe(false);
    expect(result.elapsedMs).toBe(200);
    expect(result.votes.map((vote) => vote.vote)).toEqual(['pending', 'pending', 'timeout']);
  });
});
