/**
 * The drift simulator (bench/drift) drives real Redlocks over stand-in connections shaped like
 * ioredis clients. A change in how the adapter hands a script its keys and arguments once broke
 * every call of the simulator, unnoticed: `npm run bench:drift` is in no suite. One short cell
 * without drift keeps it honest: every attempt on a free lock acquires, and no two holders overlap.
 */
import { describe, expect, it } from 'vitest';
import { runCell } from '../../bench/drift/scenario.js';

describe('the drift simulator', () => {
  it('acquires a free lock on every attempt in a cell without drift, with no overlap', async () => {
    const result = await runCell({
      ttl: 1000,
      driftPct: 0,
      driftFactor: 0.01,
      delayMs: 1,
      fastMembers: 0,
      nodeTimeout: 50,
      clients: 1,
      durationTtls: 3,
      thinkTtl: 0.05,
      pauses: false,
    });
    expect(result.valid).toBe(true);
    expect(result.attemptsWhileFree).toBeGreaterThan(0);
    expect(result.acquiredWhileFree).toBe(result.attemptsWhileFree);
    expect(result.violations).toBe(0);
  });
});
