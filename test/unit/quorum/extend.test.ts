/**
 * The extend decision (src/quorum/extend.ts) on fake members and a ManualClock, running the real
 * round: an extension counts only if its quorum was reached before the previous deadline, and
 * only "not ours" answers lose the lock; keep-extended (src/lock/keep-extended.ts) retries failed
 * extensions inside the remaining validity.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/clock/index.js';
import { LockExtendError, LockLostError } from '../../../src/errors.js';
import type { Lock } from '../../../src/lock/lock.js';
import type { Member } from '../../../src/members/member.js';
import { decideExtension, extendOn, type ExtendAnswer } from '../../../src/quorum/extend.js';
import type { RoundResult } from '../../../src/quorum/round.js';
import { keepExtended, RETRY_SHARE } from '../../../src/lock/keep-extended.js';
import { quorumOf } from '../../../src/tally.js';

type Status = 'extended' | 'gone' | 'taken';

/** A member that answers `status` after `afterMs` of manual time (never, with Infinity). */
function fakeMember(clock: ManualClock, id: string, status: Status, afterMs: number): Member {
  return {
    id,
    notCounting: undefined,
    extend: () =>
      new Promise<Status>((resolve) => {
        if (afterMs !== Infinity) clock.setTimer(() => resolve(status), afterMs);
      }),
  } as unknown as Member;
}

/** A full turn of the event loop: promise callbacks, nextTicks and immediates (the round's checks). */
const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Advances the clock 1 ms at a time, letting the event loop turn between steps. */
async function step(clock: ManualClock, ms: number): Promise<void> {
  for (let i = 0; i < ms; i++) {
    clock.advance(1);
    await flush();
  }
}

const settings = (clock: ManualClock) => ({ clock, nodeTimeout: 500, driftFactor: 0.01 });

describe('extendOn: the decision', () => {
  it('counts a quorum reached before the previous deadline; the new deadline runs from the round start', async () => {
    const clock = new ManualClock(1_000);
    const members = [fakeMember(clock, 'a', 'extended', 5), fakeMember(clock, 'b', 'extended', 10), fakeMember(clock, 'c', 'extended', Infinity)];
    const pending = extendOn({
      members,
      quorum: quorumOf(members.length),
      settings: settings(clock),
      resources: ['r'],
      value: 'v',
      ttl: 10_000,
      previousDeadline: 1_050,
    });
    await step(clock, 20);
    const result = await pending;
    expect(result.extended).toBe(true);
    expect(result.deadline).toBe(1_000 + 10_000 - 102);
    expect(result.round.votes.map((vote) => vote.vote)).toEqual(['locked', 'locked', 'pending']);
  });

  it('a round is cut at the previous deadline: a quorum that would come later never counts', async () => {
    const clock = new ManualClock(1_000);
    // The second yes would come 60 ms into the round; the previous deadline is 50 ms in.
    const members = [fakeMember(clock, 'a', 'extended', 5), fakeMember(clock, 'b', 'extended', 60), fakeMember(clock, 'c', 'extended', 70)];
    const pending = extendOn({
      members,
      quorum: quorumOf(members.length),
      settings: settings(clock),
      resources: ['r'],
      value: 'v',
      ttl: 10_000,
      previousDeadline: 1_050,
    });
    await step(clock, 100);
    const result = await pending;
    expect(result.extended).toBe(false);
    if (result.extended) return;
    expect(result.failure).toBe('unavailable');
    // 50 ms in, give or take the tick that sent it (the round's members' time starts after it).
    expect(result.round.elapsedMs).toBeGreaterThanOrEqual(50);
    expect(result.round.elapsedMs).toBeLessThanOrEqual(51);
    expect(result.deadline).toBe(1_050);
  });

  /** A won round that started at 1 000 and heard 'locked' at the given ms. */
  const wonRound = (...ms: number[]): RoundResult<ExtendAnswer> => ({
    won: true,
    votes: ms.map((at, i) => ({ member: `m${i}`, vote: 'locked', ms: at })),
    startedAt: 1_000,
    elapsedMs: Math.max(...ms),
  });

  it("a quorum reached at or after the previous deadline is 'lapsed', although the members held our value", () => {
    // Quorum (2 of 3) reached 60 ms in; the previous deadline was 50 ms in.
    const late = decideExtension(wonRound(5, 60, 70), 1_050, 10_898, 1_070);
    expect(late).toMatchObject({ extended: false, failure: 'lapsed', lostBecause: 'lapsed' });
    expect(decideExtension(wonRound(5, 50), 1_050, 10_898, 1_050)).toMatchObject({ extended: false, failure: 'lapsed' });
  });

  it('judges the moment the quorum was reached, not when the decision was read', () => {
    // Quorum 10 ms in, before the deadline (50 ms in); the caller looks only 1 s later (a stall).
    expect(decideExtension(wonRound(5, 10), 1_050, 10_898, 2_000)).toMatchObject({ extended: true, deadline: 10_898 });
    // But never hands back a deadline that has passed.
    expect(decideExtension(wonRound(5, 10), 1_050, 1_900, 2_000)).toMatchObject({ extended: false, failure: 'late', lostBecause: 'late' });
  });

  it('"not ours" answers lose the lock only when they put a quorum out of reach; gone and taken are told apart', async () => {
    const decide = async (statuses: (Status | 'silent')[]) => {
      const clock = new ManualClock(0);
      const members = statuses.map((status, i) =>
        fakeMember(clock, `m${i}`, status === 'silent' ? 'extended' : status, status === 'silent' ? Infinity : 1 + i),
      );
      const pending = extendOn({
        members,
        quorum: quorumOf(members.length),
        settings: settings(clock),
        resources: ['r'],
        value: 'v',
        ttl: 10_000,
        previousDeadline: 5_000,
      });
      await step(clock, 600);
      const result = await pending;
      return result.extended ? 'extended' : `${result.failure}${result.lostBecause ? `/${result.lostBecause}` : ''}`;
    };
    expect(await decide(['gone', 'gone', 'extended'])).toBe('lost/gone');
    expect(await decide(['gone', 'taken', 'extended'])).toBe('lost/taken');
    expect(await decide(['gone', 'silent', 'silent'])).toBe('unavailable');
    expect(await decide(['gone', 'gone', 'silent', 'extended', 'extended'])).toBe('unavailable');
    expect(await decide(['gone', 'gone', 'taken', 'extended', 'extended'])).toBe('lost/taken');
    expect(await decide(['extended', 'gone', 'extended'])).toBe('extended');
  });

  it('after a failed round with a shorter ttl, only the shorter deadline holds', async () => {
    const clock = new ManualClock(0);
    const members = [fakeMember(clock, 'a', 'extended', 1), fakeMember(clock, 'b', 'extended', Infinity), fakeMember(clock, 'c', 'extended', Infinity)];
    const pending = extendOn({
      members,
      quorum: quorumOf(members.length),
      settings: settings(clock),
      resources: ['r'],
      value: 'v',
      ttl: 1_000,
      previousDeadline: 9_000,
    });
    await step(clock, 600);
    const result = await pending;
    expect(result.extended).toBe(false);
    expect(result.deadline).toBe(1_000 - 12); // not 9 000: member a now expires our key after 1 s
  });
});

describe('the reasons', () => {
  it('say "gone" for keys that vanished and "another owner" only for another value', () => {
    const gone = new LockExtendError(['r'], 'lost', [], 0, 'gone');
    expect(gone.message).toMatch(/gone/);
    expect(gone.message).not.toMatch(/another owner/);
    expect(new LockExtendError(['r'], 'lost', [], 0, 'taken').message).toMatch(/another owner/);
    const lost = new LockLostError(['r'], 'extension failed', { cause: gone });
    expect(lost.lostBecause).toBe('gone');
    expect(lost.message).toMatch(/gone/);
    expect(new LockLostError(['r'], 'expired').lostBecause).toBe('expired');
  });
});

/** A Lock as the watchdog sees it, on a ManualClock, with extend answers chosen by the test. */
class FakeLock {
  deadline: number;
  readonly ttl: number;
  released = false;
  readonly calls: number[] = [];
  readonly #controller = new AbortController();

  constructor(
    readonly clock: ManualClock,
    ttl: number,
    /** Per call: 'ok' extends by ttl from now; 'unavailable' fails without loss; 'lost' aborts. */
    readonly answers: ('ok' | 'unavailable' | 'lost')[],
  ) {
    this.ttl = ttl;
    this.deadline = clock.now() + ttl;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  remainingMs(): number {
    return Math.max(0, this.deadline - this.clock.now());
  }

  extend(): Promise<this> {
    this.calls.push(this.clock.now());
    const answer = this.answers.shift() ?? 'ok';
    if (this.remainingMs() <= 0) return Promise.reject(new LockExtendError(['r'], 'expired', [], 0));
    if (answer === 'ok') {
      this.deadline = this.clock.now() + this.ttl;
      return Promise.resolve(this);
    }
    if (answer === 'lost') this.#controller.abort(new LockLostError(['r'], 'extension failed', { lostBecause: 'gone' }));
    return Promise.reject(new LockExtendError(['r'], answer, [], 0, answer === 'lost' ? 'gone' : undefined));
  }
}

describe('keepExtended', () => {
  it('retries an extension that lacked answers, each try inside the remaining validity, and carries on once one succeeds', async () => {
    const clock = new ManualClock(0);
    const lock = new FakeLock(clock, 3_000, ['unavailable', 'unavailable', 'unavailable', 'ok', 'ok']);
    const stop = keepExtended(lock as unknown as Lock, 3_000, 1_000, clock);
    await step(clock, 2_000); // the first extension is due at 1 000 ms left
    expect(lock.calls).toEqual([2_000]);
    await step(clock, 2_000);
    // Retries after a share of what was left (1 000 ms, then 750, then about 562), then the success.
    expect(lock.calls).toHaveLength(4);
    expect(lock.calls.slice(0, 3)).toEqual([2_000, 2_000 + 1_000 * RETRY_SHARE, 2_250 + 750 * RETRY_SHARE]);
    expect(lock.calls[3]! - lock.calls[2]!).toBeGreaterThan(550 * RETRY_SHARE);
    expect(lock.calls[3]! - lock.calls[2]!).toBeLessThan(570 * RETRY_SHARE);
    for (const at of lock.calls) expect(at).toBeLessThan(3_000); // never at or past the deadline
    expect(lock.signal.aborted).toBe(false);
    // After the success the normal schedule resumes: the next one at 1 000 ms left again.
    const success = lock.calls[3]!;
    await step(clock, 2_100);
    expect(lock.calls[4]).toBe(success + 2_000);
    stop();
  });

  it('gives up when the validity is gone, and never tries at or after the deadline', async () => {
    const clock = new ManualClock(0);
    const lock = new FakeLock(clock, 3_000, Array(100).fill('unavailable'));
    const stop = keepExtended(lock as unknown as Lock, 3_000, 1_000, clock);
    await step(clock, 4_000);
    expect(lock.calls.length).toBeGreaterThan(3);
    expect(Math.max(...lock.calls)).toBeLessThan(3_000);
    const count = lock.calls.length;
    await step(clock, 2_000);
    expect(lock.calls.length).toBe(count);
    stop();
  });

  it('stops at once when an extension finds the lock lost', async () => {
    const clock = new ManualClock(0);
    const lock = new FakeLock(clock, 3_000, ['lost']);
    const stop = keepExtended(lock as unknown as Lock, 3_000, 1_000, clock);
    await step(clock, 3_500);
    expect(lock.calls).toEqual([2_000]);
    expect((lock.signal.reason as LockLostError).lostBecause).toBe('gone');
    stop();
  });

  it('maxExtensions counts successful extensions, not retries', async () => {
    const clock = new ManualClock(0);
    const lock = new FakeLock(clock, 3_000, ['unavailable', 'ok', 'unavailable', 'ok', 'ok']);
    const stop = keepExtended(lock as unknown as Lock, 3_000, 1_000, clock, 2);
    await step(clock, 10_000);
    expect(lock.calls).toHaveLength(4); // two successes, each after one failed try; then none
    stop();
  });
});
