/**
 * Short runs of every chaos scenario (npm run chaos runs them long). With quarantine and fencing
 * on, no two clients may ever hold at once, fences must strictly increase, and no lock may be won
 * while a majority is paused; each run must also show real activity and the fault it injects.
 * Without quarantine (and fencing), kill-restart must let a second client in: the hazard the
 * quarantine exists for. It does so at every restart here, so the test can demand it.
 * The combined scenario (combined.ts) interleaves every fault kind under using() and fenced writes;
 * npm run chaos runs it for a minute.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import type { AcquireEndMessage } from '../../src/diagnostics.js';
import { runCombined } from './combined.js';
import { runScenario, type ScenarioResult } from './scenarios.js';

const safe = { quarantine: true, fencing: true };

function expectExclusive(result: ScenarioResult): void {
  expect({ overlaps: result.overlapViolations, fences: result.fenceViolations, duringMajorityPause: result.windowViolations }).toEqual({
    overlaps: 0,
    fences: 0,
    duringMajorityPause: 0,
  });
  // Every holding was checked for its fence, not skipped for lack of one.
  expect(result.fenced).toBe(result.acquisitions);
}

describe('chaos (short runs)', () => {
  it('kill-restart: a member restarted empty under a bare-majority holder lets nobody else in', async () => {
    const result = await runScenario('kill-restart', { seconds: 8, ...safe });
    expect(result.faults.holderStillHolding).toBeGreaterThanOrEqual(1); // restarted while the holder held
    expect(result.acquisitions).toBeGreaterThanOrEqual(3);
    expectExclusive(result);
  }, 40_000);

  it('kill-restart without quarantine or fencing: a second client holds while the first still does', async () => {
    const result = await runScenario('kill-restart', { seconds: 8, quarantine: false, fencing: false });
    expect(result.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(result.overlapViolations).toBeGreaterThan(0);
    expect(result.maxOverlapMs).toBeGreaterThan(0);
  }, 40_000);

  // The contenders as one process, with locks of its own going on the same connections: their
  // calls go out in batches with others (src/members/batching.ts) while members die and stop.
  it('kill-restart, one process: the contended calls batched with others, nobody else let in', async () => {
    const result = await runScenario('kill-restart', { seconds: 8, ...safe, oneProcess: true });
    expect(result.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(result.faults.backgroundLocks).toBeGreaterThanOrEqual(100);
    expect(result.acquisitions).toBeGreaterThanOrEqual(3);
    expectExclusive(result);
  }, 40_000);

  it('minority-pause, one process: the contended calls batched with others', async () => {
    const result = await runScenario('minority-pause', { seconds: 5, ...safe, oneProcess: true });
    expect(result.faults.pauses).toBeGreaterThanOrEqual(2);
    expect(result.faults.backgroundLocks).toBeGreaterThanOrEqual(100);
    expect(result.acquisitions).toBeGreaterThanOrEqual(10);
    expectExclusive(result);
  }, 30_000);

  it('minority-pause: 2 of 5 stopped and resumed, again and again', async () => {
    const result = await runScenario('minority-pause', { seconds: 5, ...safe });
    expect(result.faults.pauses).toBeGreaterThanOrEqual(2);
    expect(result.acquisitions).toBeGreaterThanOrEqual(10);
    expectExclusive(result);
  }, 30_000);

  it('majority-pause: nothing is won while 3 of 5 are stopped', async () => {
    const result = await runScenario('majority-pause', { seconds: 6, ...safe });
    expect(result.faults.windows).toBeGreaterThanOrEqual(1);
    expect(result.acquisitions).toBeGreaterThanOrEqual(5);
    expectExclusive(result);
  }, 30_000);

  it('minority-latency: 2 of 5 slower than nodeTimeout, locks keep coming', async () => {
    const result = await runScenario('minority-latency', { seconds: 5, ...safe });
    expect(result.faults.windows).toBeGreaterThanOrEqual(2);
    expect(result.acquisitions).toBeGreaterThanOrEqual(20);
    expect(result.failedAcquires).toBe(0);
    expectExclusive(result);
  }, 30_000);

  it('clock-drift: 2 of 5 clocks run 1.2x fast, within what driftFactor 0.25 covers', async () => {
    const result = await runScenario('clock-drift', { seconds: 5, ...safe });
    expect(result.faults.fastMembers).toBe(2);
    expect(result.faults.fastClockRate).toBeGreaterThan(1.15);
    expect(result.acquisitions).toBeGreaterThanOrEqual(3);
    expectExclusive(result);
  }, 30_000);

  it.each(['kill-restart', 'minority-pause', 'minority-latency'] as const)(
    '%s with hand-overs (fencing off, ttl within the lease): still one holder at a time, and locks were handed over',
    async (name) => {
      let handedOver = 0;
      const count = (message: unknown) => {
        if ((message as AcquireEndMessage).handedOver) handedOver++;
      };
      subscribe('quorumlock:acquire:end', count);
      try {
        const result = await runScenario(name, { seconds: 6, quarantine: true, fencing: false });
        expect({ overlaps: result.overlapViolations, duringMajorityPause: result.windowViolations }).toEqual({ overlaps: 0, duringMajorityPause: 0 });
        expect(result.acquisitions).toBeGreaterThanOrEqual(3);
        expect(handedOver).toBeGreaterThanOrEqual(1);
      } finally {
        unsubscribe('quorumlock:acquire:end', count);
      }
    },
    40_000,
  );

  it('combined: kills with commands in flight, held links, a failover and failback, pauses at extensions; fenced writes stay in order', async () => {
    const result = await runCombined({ seconds: 10 });
    const { faults, writes } = result;
    const context = `seed ${result.seed}\n${result.counterexamples.join('\n\n')}`;
    // Every kind of fault happened, never on more than a minority at once.
    expect(
      {
        kills: faults.kills > 0,
        inFlight: faults.inFlightAtKill > 0,
        holds: faults.holds > 0,
        failovers: faults.failovers > 0,
        failbacks: faults.failbacks > 0,
        pauses: faults.pauses > 0,
      },
      context,
    ).toEqual({
      kills: true,
      inFlight: true,
      holds: true,
      failovers: true,
      failbacks: true,
      pauses: true,
    });
    expect(faults.maxImpaired).toBeLessThanOrEqual(2);
    expect(
      {
        overlaps: result.overlapViolations,
        fenceOrder: result.fenceViolations,
        storeOrder: result.storeOrderViolations,
        staleAccepted: result.staleAccepted,
        refusedWhileHeld: result.refusedWhileHeld,
        unfenced: result.unfenced,
      },
      context,
    ).toEqual({ overlaps: 0, fenceOrder: 0, storeOrder: 0, staleAccepted: 0, refusedWhileHeld: 0, unfenced: 0 });
    // The store order was judged on every accepted write. Overrunners' late writes reached the
    // store: refused once a successor had written, accepted only before any had (what fencing can
    // and cannot stop); which of the two happens in a 10 s run is timing.
    expect(writes.seenInStoreOrder).toBe(writes.accepted);
    expect(writes.errors).toBe(0);
    expect(writes.staleRefused + writes.lateAccepted).toBeGreaterThanOrEqual(1);
    expect(writes.lateAcceptedAfterSuccessor).toBe(0);
    // Liveness, generously: locks keep coming between and during faults, and get extended.
    expect(result.acquisitions).toBeGreaterThanOrEqual(6);
    expect(result.extensions).toBeGreaterThanOrEqual(3);
    expect(result.liveness.longestGapMs).toBeLessThan(8000);
    expect(result.liveness.interFaultSpansWithAcquisition).toBeGreaterThanOrEqual(result.liveness.interFaultSpans / 3);
  }, 60_000);
});
