/**
 * Short runs of every chaos scenario (npm run chaos runs them long). With quarantine and fencing
 * on, no two clients may ever hold at once, fences must strictly increase, and no lock may be won
 * while a majority is paused; each run must also show real activity and the fault it injects.
 * Without quarantine (and fencing), kill-restart must let a second client in: the hazard the
 * quarantine exists for. It does so at every restart here, so the test can demand it.
 */
import { describe, expect, it } from 'vitest';
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
});
