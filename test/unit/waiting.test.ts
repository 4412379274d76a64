/**
 * The waiting arithmetic, pure: when a refused waiter comes back (nextTryMs), and when a waiter
 * for several resources keeps its places in line (LineTurns).
 */
import { describe, expect, it } from 'vitest';
import { nextTryMs } from '../../src/quorum/acquire-loop.js';
import type { MemberVote } from '../../src/quorum/votes.js';
import { LineTurns } from '../../src/waiting/line.js';

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
