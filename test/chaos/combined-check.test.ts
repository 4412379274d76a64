/** The combined scenario's analysis on synthetic runs: what it counts as a violation and what not. */
import { describe, expect, it } from 'vitest';
import { analyse, type Holding, type Recorded, type Write } from './combined-check.js';

const R = 'r';

function holding(id: number, client: number, fence: number, acquiredAt: number, releasedAt: number, extra: Partial<Holding> = {}): Holding {
  return {
    id,
    client,
    resource: R,
    fence,
    overrun: false,
    calledAt: acquiredAt - 5,
    acquiredAt,
    validUntil: releasedAt + 100,
    releasedAt,
    lockedMembers: [0, 1, 2],
    ...extra,
  };
}

function write(h: Holding, phase: Write['phase'], sentAt: number, accepted: boolean, held = true): Write {
  return { holding: h, phase, sentAt, doneAt: sentAt + 1, accepted, heldAtSend: held, heldAtDone: held };
}

function run(holdings: Holding[], writes: Write[], accepted?: Recorded['accepted']): Recorded {
  const inOrder =
    accepted ??
    writes
      .filter((w) => w.accepted)
      .sort((a, b) => a.doneAt - b.doneAt)
      .map((w) => ({ resource: R, holding: w.holding.id, fence: w.holding.fence! }));
  return {
    seed: 1,
    seconds: 1,
    quarantine: true,
    ttl: 1000,
    maxLockTtl: 2000,
    clients: 2,
    resources: [R],
    t0: 0,
    runStart: 0,
    stopAt: 1000,
    holdings,
    writes,
    accepted: inOrder,
    faultEvents: [],
    impaired: [],
    failedBy: {},
    failures: [],
    latencies: [],
    extendMessages: [],
    counts: {
      kills: 0,
      inFlightAtKill: 0,
      holds: 0,
      heldMs: 0,
      failovers: 0,
      failbacks: 0,
      fullResyncs: 0,
      partialResyncs: 0,
      pauses: 0,
      pausedExtensions: 0,
      pausedExtensionsSurvived: 0,
      skipped: 0,
      maxImpaired: 0,
      longestRepairMs: 0,
      repairMs: 0,
      unrepaired: 0,
    },
  };
}

describe('combined analysis', () => {
  it('a clean handover: no violation, and an overrunner refused after its successor wrote counts as a refused stale write', () => {
    const a = holding(1, 0, 5, 0, 100);
    const b = holding(2, 1, 6, 150, 300);
    const late = holding(3, 0, 4, -400, 10, { overrun: true, validUntil: -100, lostAt: -100 });
    const writes = [
      write(a, 'start', 1, true),
      write(a, 'end', 99, true),
      write(b, 'start', 151, true),
      write(late, 'end', 200, false, false),
      write(b, 'end', 299, true),
    ];
    const result = analyse(run([late, a, b], writes));
    expect(result.violations).toBe(0);
    expect(result.writes).toMatchObject({ accepted: 4, refused: 1, staleRefused: 1, lateAccepted: 0, lateAcceptedAfterSuccessor: 0 });
    expect(result.counterexamples).toEqual([]);
  });

  it('counts two holders at once, with a counterexample naming both', () => {
    const a = holding(1, 0, 5, 0, 200);
    const b = holding(2, 1, 6, 150, 300);
    const result = analyse(run([a, b], [write(a, 'start', 1, true), write(b, 'start', 151, true)]));
    expect(result.overlapViolations).toBe(1);
    expect(result.maxOverlapMs).toBe(50);
    expect(result.counterexamples[0]).toMatch(/overlap of 50\.0 ms[\s\S]*#1[\s\S]*#2/);
  });

  it('counts a fence reused or going back, in acquire order and in the store order', () => {
    const a = holding(1, 0, 6, 0, 100);
    const b = holding(2, 1, 6, 150, 300); // the same token again
    const result = analyse(run([a, b], [write(a, 'start', 1, true), write(b, 'start', 151, true)]));
    expect(result.fenceViolations).toBe(1);
    expect(result.storeOrderViolations).toBe(1);
  });

  it('counts a write accepted after a higher token was, and a write refused while its holder held', () => {
    const a = holding(1, 0, 5, 0, 100);
    const b = holding(2, 1, 6, 150, 300);
    // The store took b's token, then a's lower one (a broken guard), then refused b while it held.
    const writes = [write(b, 'start', 151, true), write(a, 'end', 160, true, false), write(b, 'end', 200, false)];
    const result = analyse(run([a, b], writes));
    expect(result.staleAccepted).toBe(1);
    expect(result.refusedWhileHeld).toBe(1);
    expect(result.storeOrderViolations).toBe(1);
  });

  it('a write sent after the loss and accepted before any successor wrote is late, not a violation', () => {
    const a = holding(1, 0, 5, 0, 120, { lostAt: 100 });
    const b = holding(2, 1, 6, 150, 300);
    const writes = [write(a, 'start', 1, true), write(a, 'end', 110, true, false), write(b, 'start', 151, true)];
    const result = analyse(run([a, b], writes));
    expect(result.violations).toBe(0);
    expect(result.writes).toMatchObject({ lateAccepted: 1, lateAcceptedAfterSuccessor: 0 });
    expect(result.lost).toEqual({ '?': 1 });
  });

  it('a late write accepted after a successor acquired but before it wrote is the window fencing leaves, counted apart', () => {
    const a = holding(1, 0, 5, 0, 100, { lostAt: 90, overrun: true });
    const b = holding(2, 1, 6, 150, 300);
    const writes = [write(a, 'start', 1, true), write(a, 'end', 155, true, false), write(b, 'start', 160, true)];
    const result = analyse(run([a, b], writes));
    expect(result.violations).toBe(0);
    expect(result.writes).toMatchObject({ lateAccepted: 1, lateAcceptedAfterSuccessor: 1 });
  });

  it('liveness: the longest stretch without an acquisition runs to the stop', () => {
    const result = analyse(run([holding(1, 0, 1, 100, 200), holding(2, 1, 2, 300, 400)], []));
    expect(result.liveness.longestGapMs).toBe(700);
  });
});
