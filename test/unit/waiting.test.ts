/**
 * The waiting arithmetic, pure: when a refused waiter comes back (nextTryMs), when a waiter
 * for several resources keeps its places in line (LineTurns), and which hand-overs a waiter
 * counts (Watch, Handover: quorum/handover.ts).
 */
import { describe, expect, it } from 'vitest';
import { nextTryMs } from '../../src/quorum/wait.js';
import type { MemberVote } from '../../src/quorum/votes.js';
import { LineTurns } from '../../src/waiting/line.js';
import { Watch } from '../../src/waiting/notifications.js';
import { ManualClock } from '../../src/clock/index.js';
import { Handover, handsOver, stampOf } from '../../src/quorum/handover.js';
import { memberStamp } from '../../src/store/protocol.js';

const taken = (heldForMs: number | undefined, place: number | undefined = 0): MemberVote => {
  const vote: MemberVote = { member: 'm', vote: 'taken', ms: 1 };
  if (heldForMs !== undefined) vote.heldForMs = heldForMs;
  if (place !== undefined) vote.place = place;
  return vote;
};
const timeout: MemberVote = { member: 'm', vote: 'timeout', ms: 50 };
const queued = (place: number): MemberVote => ({ member: 'm', vote: 'queued', ms: 1, place });

describe('nextTryMs', () => {
  it('comes back just after the holder expires when first in line on every member', () => {
    expect(nextTryMs([taken(40), taken(40), taken(40)], 200)).toBe(41);
  });

  it('never later than the retry delay', () => {
    expect(nextTryMs([taken(5_000), taken(5_000), taken(5_000)], 200)).toBe(200);
  });

  it('second in line behind a holder counts as first (a winner keeps its place until it releases)', () => {
    expect(nextTryMs([taken(40, 1), taken(40, 1), taken(40, 1)], 200)).toBe(41);
    // Not for 'queued': the head there is a real waiter, and the resource is free.
    expect(nextTryMs([queued(1), queued(1), queued(1)], 200)).toBe(200);
  });

  it('waits the delay when first in line on fewer than a quorum', () => {
    expect(nextTryMs([taken(40), taken(40, 2), taken(40, 2)], 200)).toBe(200);
    expect(nextTryMs([taken(40), timeout, timeout], 200)).toBe(200);
  });

  it('an unknown expiry (a key without TTL: no heldForMs, or 0 from older scripts) falls back to the delay, never 1 ms', () => {
    expect(nextTryMs([taken(undefined), taken(undefined), taken(undefined)], 200)).toBe(200);
    expect(nextTryMs([taken(0), taken(0), taken(0)], 200)).toBe(200);
    // Before, this was 1: a waiter first in line on a key without a TTL retried every millisecond.
    expect(nextTryMs([taken(0), taken(0), taken(0), taken(0), taken(0)], 250)).toBe(250);
  });

  it('counts the quorum-th soonest expiry: one member with a key that never expires does not hold the others back', () => {
    // 5 members, quorum 3: three expire within 30 ms, so a quorum is free then.
    expect(nextTryMs([taken(10), taken(undefined), taken(30), taken(20), taken(0)], 200)).toBe(31);
    // Only two known expiries: a quorum is never known to be free; the delay.
    expect(nextTryMs([taken(10), taken(undefined), taken(30), taken(undefined), taken(0)], 200)).toBe(200);
  });
});

describe('LineTurns', () => {
  it('a waiter for one resource always keeps its place', () => {
    const turns = new LineTurns(1, 1_000, 60_000);
    for (const now of [0, 999, 1_000, 5_000, 1e9]) expect(turns.inLine(now)).toBe(true);
    expect(turns.msUntilChange(0)).toBe(Infinity);
  });

  it('a waiter for several keeps its places one turn, steps out as long, comes back for twice as long', () => {
    const turns = new LineTurns(2, 1_000, 60_000);
    expect(turns.msUntilChange(0)).toBe(Infinity); // not in line yet
    expect(turns.inLine(100)).toBe(true); // joins: its first turn runs to 1 100
    expect(turns.msUntilChange(600)).toBe(500);
    expect(turns.inLine(1_099)).toBe(true);
    expect(turns.inLine(1_100)).toBe(false); // out until 2 100
    expect(turns.msUntilChange(1_100)).toBe(1_000);
    expect(turns.inLine(2_000)).toBe(false);
    expect(turns.inLine(2_150)).toBe(true); // back (noticed late: the turn starts then), until 4 150
    expect(turns.msUntilChange(2_150)).toBe(2_000);
    expect(turns.inLine(4_150)).toBe(false); // out as long: 2 000
    expect(turns.msUntilChange(4_150)).toBe(2_000);
    expect(turns.inLine(6_150)).toBe(true);
    expect(turns.msUntilChange(6_150)).toBe(4_000);
  });

  it('turns grow up to the longest lock (maxLockTtl), then stay', () => {
    const turns = new LineTurns(3, 1_000, 5_000);
    let now = 0;
    const inTurns: number[] = [];
    turns.inLine(now);
    for (let i = 0; i < 10; i++) {
      const length = turns.msUntilChange(now);
      if (turns.inLine(now)) inTurns.push(length);
      now += length;
      turns.inLine(now);
    }
    expect(inTurns.slice(0, 5)).toEqual([1_000, 2_000, 4_000, 5_000, 5_000]);
  });
});

describe('Watch: which hand-overs count', () => {
  const watchOf5 = (stamp: string | undefined) => {
    const watch = new Watch(5, () => undefined);
    watch.reset(stamp);
    return watch;
  };
  /** What member `index` says when it hands over by attempt `attempt`'s request. */
  const by = (attempt: number, index: number) => memberStamp(stampOf(attempt), index);

  it('a majority by the stamp counted, each from the member it was sent to and that counts, is a win', () => {
    const watch = watchOf5(stampOf(3));
    watch.handOver(0, by(3, 0), true);
    watch.handOver(1, by(3, 1), true);
    expect(watch.handedOver).toBe(false);
    watch.handOver(2, by(3, 2), true);
    expect(watch.handedOver).toBe(true);
    expect([...watch.handedBy]).toEqual([0, 1, 2]);
    expect(watch.takeStray()).toBe(false);
  });

  it("another stamp, a member that does not count, or another member's message is stray and never counted", () => {
    const watch = watchOf5(stampOf(3));
    watch.handOver(0, by(2, 0), true); // an earlier attempt's request
    watch.handOver(1, by(3, 1), false); // a member whose yes does not count now
    watch.handOver(2, by(3, 4), true); // member 4's message, heard on member 2's subscription (one server, two databases)
    watch.handOver(3, by(3, 3), true);
    watch.handOver(4, by(3, 4), true);
    expect(watch.handedOver).toBe(false);
    expect([...watch.handedBy]).toEqual([3, 4]);
    expect(watch.takeStray()).toBe(true);
    expect(watch.takeStray()).toBe(false);
  });

  it('nothing counts after a reset without a stamp (an attempt out of line)', () => {
    const unstamped = watchOf5(undefined);
    for (const index of [0, 1, 2]) unstamped.handOver(index, by(1, index), true);
    expect(unstamped.handedOver).toBe(false);
    expect(unstamped.takeStray()).toBe(true);
  });

  it('a majority of wake-ups waits while the members not heard may still hand over a majority', () => {
    const watch = watchOf5(stampOf(1));
    watch.announce(0);
    watch.announce(1);
    watch.handOver(2, by(1, 2), true);
    expect(watch.notified).toBe(false); // 1 handed + 2 unheard could still make 3
    watch.handOver(3, by(1, 3), true);
    expect(watch.notified).toBe(false);
    watch.handOver(4, by(1, 4), true);
    expect(watch.notified).toBe(true);
    expect(watch.handedOver).toBe(true);
    // Wake-ups alone wake at a majority, as before.
    const plain = watchOf5(stampOf(1));
    for (const index of [0, 1, 2]) plain.announce(index);
    expect(plain.notified).toBe(true);
  });

  it('waits for the rest of a possible hand-over majority a grace at most: a member that is down never speaks', async () => {
    const clock = new ManualClock();
    const watch = watchOf5(stampOf(1));
    let woken = false;
    const waiting = watch.wait(5_000, clock, undefined, 50).then(() => (woken = true));
    watch.announce(0);
    watch.announce(1);
    watch.handOver(2, by(1, 2), true); // 1 handed, 2 unheard: a majority still possible
    clock.advance(49);
    await new Promise((resolve) => setImmediate(resolve));
    expect(woken).toBe(false);
    clock.advance(1);
    await waiting;
    expect(watch.notified).toBe(true);
    expect(watch.handedOver).toBe(false); // the next attempt takes it from here
  });
});

describe('Watch: a wait after an attempt that went out before the subscriptions were in place', () => {
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  const track = (promise: Promise<void>) => {
    const state = { ended: false };
    void promise.then(() => (state.ended = true));
    return state;
  };

  it('ends when they are in place, or at once if they are by now', async () => {
    const clock = new ManualClock();
    const watch = new Watch(5, () => undefined);
    let subscribed!: () => void;
    watch.ready = new Promise<void>((resolve) => (subscribed = resolve));
    expect(watch.subscribing).toBe(true);
    const first = track(watch.wait(5_000, clock, undefined, 50, true));
    await tick();
    expect(first.ended).toBe(false);
    subscribed();
    await tick();
    expect(first.ended).toBe(true);
    expect(watch.subscribing).toBe(false);
    const again = track(watch.wait(5_000, clock, undefined, 50, true));
    await tick();
    expect(again.ended).toBe(true);
  });

  it('subscriptions in place after such a wait ended leave the next wait alone: it still ends at a wake-up', async () => {
    const clock = new ManualClock();
    const watch = new Watch(5, () => undefined);
    let subscribed!: () => void;
    watch.ready = new Promise<void>((resolve) => (subscribed = resolve));
    const first = track(watch.wait(100, clock, undefined, 50, true));
    clock.advance(100); // its timed retry
    await tick();
    expect(first.ended).toBe(true);
    const next = track(watch.wait(5_000, clock, undefined, 50));
    subscribed();
    await tick();
    expect(next.ended).toBe(false);
    for (let index = 0; index < 3; index++) watch.announce(index);
    await tick();
    expect(next.ended).toBe(true);
  });
});

describe('Handover', () => {
  it('asks only for one exclusive, unfenced resource, whatever its ttl', () => {
    expect(handsOver(['a'], { fencing: false })).toBe(true);
    expect(handsOver(['a', 'b'], { fencing: false })).toBe(false);
    expect(handsOver(['a'], { fencing: true })).toBe(false);
    expect(handsOver(['a'], { fencing: false, shared: true })).toBe(false);
  });

  it('a new value after each abandon; every abandoned one is taken back, and the holder takes back all but its own', () => {
    const handover = new Handover();
    expect(handover.leftover('x')).toBeUndefined(); // nothing was ever asked: nothing to take back
    const unasked = handover.value;
    handover.abandon(); // never sent: nothing to abandon
    expect(handover.value).toBe(unasked);
    const first = handover.request(2);
    expect(first).toEqual({ value: handover.value, stamp: stampOf(2), abandoned: '' });
    handover.abandon();
    const second = handover.request(3);
    expect(second.value).not.toBe(first.value);
    expect(second.abandoned).toBe(first.value);
    expect(handover.leftover(second.value)).toBe(first.value); // won by the hand-over of `second`
    expect(handover.leftover('attempt-value')).toBe(`${first.value} ${second.value}`); // won by an attempt
  });
});
