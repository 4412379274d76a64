/**
 * Semaphore chaos: 6 independent clients contend for a 2-permit semaphore on 5 masters while a
 * fault driver restarts members empty under holders (the restart hazard, made to happen every
 * cycle: faults.ts killRestart) or stops 2 of 5 with SIGSTOP again and again. The checker counts
 * the guaranteed holdings (acquire's resolution .. min(acquire + remainingMs, release), on one
 * performance.now() clock) overlapping at each instant: never more than the permits, and each
 * permit alone never held twice. Without quarantine the same restart lets a third holder in,
 * which shows the checker and the scenario can see the hazard.
 */
import { describe, expect, it } from 'vitest';
import type { Semaphore } from '../../src/index.js';
import { intervalOf, permitViolations, type Holding } from './checker.js';
import { killRestart, minorityPause, type Fault } from './faults.js';
import { contest } from './contest.js';

const CLIENTS = 6;
const PERMITS = 2;
const TTL = 1000;
const SEMAPHORE = 'chaos-pool';

interface Outcome {
  holdings: Holding[];
  faults: Record<string, number>;
  maxOverlap: number;
  violations: { at: number; holders: number }[];
  /** Instants at which one permit had two guaranteed holders. */
  permitDoubles: number;
}

async function run(fault: Fault, options: { seconds: number; quarantine: boolean; proxied: boolean; hold: [number, number] }): Promise<Outcome> {
  // One semaphore object per client, made on its first acquire (its permit rotation lives in it).
  const pools = new Map<number, Semaphore>();
  const { recording, faults } = await contest({
    clients: CLIENTS,
    redlockOptions: { nodeTimeout: 50, maxLockTtl: 2 * TTL, quarantine: options.quarantine, retryDelay: 50, retryJitter: 25 },
    proxied: options.proxied,
    fault,
    seconds: options.seconds,
    resource: SEMAPHORE,
    ttl: TTL,
    hold: options.hold,
    acquire: { retryCount: Infinity, waitTimeout: 5_000 },
    take: (redlock, client, acquire) => {
      let pool = pools.get(client);
      if (!pool) pools.set(client, (pool = redlock.semaphore(SEMAPHORE, { permits: PERMITS })));
      return pool.acquire(TTL, acquire);
    },
  });
  const intervals = recording.holdings.map((holding) => ({ ...intervalOf(holding), permit: holding.permit }));
  const { maxOverlap, violations } = permitViolations(intervals, PERMITS);
  let permitDoubles = 0;
  for (let permit = 0; permit < PERMITS; permit++)
    permitDoubles += permitViolations(
      intervals.filter((interval) => interval.permit === permit),
      1,
    ).violations.length;
  return { holdings: recording.holdings, faults, maxOverlap, violations, permitDoubles };
}

describe('semaphore chaos (short runs)', () => {
  it('kill-restart: a member restarted empty under a bare-majority permit holder lets no third holder in', async () => {
    const outcome = await run(killRestart, { seconds: 7, quarantine: true, proxied: true, hold: [0.5, 0.8] });
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.holdings.length).toBeGreaterThanOrEqual(4);
    expect({ violations: outcome.violations, permitDoubles: outcome.permitDoubles }).toEqual({ violations: [], permitDoubles: 0 });
    expect(outcome.maxOverlap).toBeLessThanOrEqual(PERMITS);
  }, 40_000);

  it('minority-pause: 2 of 5 stopped and resumed again and again, never more than the permits', async () => {
    const outcome = await run(minorityPause, { seconds: 5, quarantine: true, proxied: false, hold: [0.02, 0.2] });
    expect(outcome.faults.pauses).toBeGreaterThanOrEqual(2);
    expect(outcome.holdings.length).toBeGreaterThanOrEqual(10);
    expect({ violations: outcome.violations, permitDoubles: outcome.permitDoubles }).toEqual({ violations: [], permitDoubles: 0 });
    // Both permits were in use at once: the limit was reached, not just respected by serial use.
    expect(outcome.maxOverlap).toBe(PERMITS);
  }, 30_000);

  it('kill-restart without quarantine: the restart hazard puts a second holder on a permit', async () => {
    const outcome = await run(killRestart, { seconds: 7, quarantine: false, proxied: true, hold: [0.5, 0.8] });
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.permitDoubles).toBeGreaterThan(0);
  }, 40_000);
});
