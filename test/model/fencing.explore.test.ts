/**
 * Issue 10's exploration of interleavings, run by `npm test`: the real Redlock on a ManualClock
 * against fake members that run the real Lua scripts, over connections that re-send unanswered
 * commands after a reconnect as ioredis does (test/model/: fake-redis.ts, fake-client.ts,
 * explore.ts). fast-check generates plans (clients' lock cycles, link speeds, the delay of every
 * message, restarts of one member at a time with commands in flight, held links, pauses, resets,
 * failovers and failbacks, evictions of a lock key), runs each deterministically and shrinks a failing one; the report
 * replays it with a trace.
 *
 * Properties: fence tokens strictly increase in handout order (never reused, never lower), also
 * for a probe client answered first by any quorum once the run is over; no two clients hold the
 * lock at once; every acquire and release settles, an acquire fails only with a LockAcquireError;
 * the fake saw no command it does not implement.
 *
 * QUORUMLOCK_EXPLORE_RUNS=n runs n plans per property (default 100 and 40: a few seconds);
 * QUORUMLOCK_EXPLORE_SEED=s explores from another seed (default: a fixed one, so that `npm test`
 * is deterministic).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { counterexampleReport, explore, type Plan, planArbitrary, restartInFlightArbitrary, runPlan } from './explore.js';

const runs = Number(process.env.QUORUMLOCK_EXPLORE_RUNS ?? 0);
const seed = Number(process.env.QUORUMLOCK_EXPLORE_SEED ?? 20_261_122);

/** Checks `arbitrary`'s plans (explore.ts); on a failure, throws with the shrunk plan replayed and traced. */
const check = (arbitrary: fc.Arbitrary<Plan>, numRuns: number) => explore(arbitrary, { numRuns, seed });

describe('exploration of interleavings (issue 10)', () => {
  it(
    "a member restarted with a client's commands in flight (re-sent into the new process) never makes a fence token repeat or go back (defect 1)",
    { timeout: 180_000 },
    async () => {
      await check(restartInFlightArbitrary(), runs || 100);
    },
  );

  it(
    'any plan of contention, held links, pauses, resets, restarts, failbacks and evictions: tokens only increase, one holder at a time',
    { timeout: 180_000 },
    async () => {
      await check(planArbitrary(), runs || 40);
    },
  );

  it("an eviction switched on at runtime, by hand (issue 21, defect 4): a member that evicted the holder's key does not count for the next client", async () => {
    // Members 7001 (E), 7002, 7003 (L); clients A (0), B (1). A's requests to L are held on the
    // wire for its whole hold: A wins on E and 7002. E then evicts A's key. B asks: L is free, and
    // E would grant on the key's absence. Its yes must not count (the eviction ended E's epoch:
    // a new one, in quarantine), or B holds while A does.
    const plan: Plan = {
      members: 3,
      clients: [[{ thinkMs: 0, ttl: 1_000, holdMs: 300 }], [{ thinkMs: 100, ttl: 1_000, holdMs: 20 }]],
      links: [],
      delays: [],
      faults: [
        { after: 0, at: 0, kind: 'hold', client: 0, member: 2, direction: 'request', ms: 600 },
        { after: 1, at: 10, kind: 'evict', member: 0, resource: 0 },
      ],
      seed: 1,
    };
    const outcome = await runPlan(plan);
    if (outcome.violations.length > 0) throw new Error(await counterexampleReport(plan));
    expect(outcome.handouts.filter((handout) => handout.client >= 0).map((handout) => handout.client)[0]).toBe(0);
  });

  it("defect 1 by hand: A's acquire, sync and release re-sent into a restarted member, then a quorum of it and a member that missed B's token", async () => {
    // Members 7001 (M), 7002 (X), 7003 (Y); clients A (0), B (1), C (2).
    const plan: Plan = {
      members: 3,
      clients: [[{ thinkMs: 0, ttl: 400, holdMs: 40 }], [{ thinkMs: 60, ttl: 400, holdMs: 20 }], [{ thinkMs: 1_500, ttl: 400, holdMs: 20 }]],
      links: [],
      delays: [],
      faults: [
        // M runs A's acquire, fence and release, but their replies stay on the wire...
        { after: 0, at: 0, kind: 'hold', client: 0, member: 0, direction: 'reply', ms: 300 },
        // ...A's release reaches Y late, so B is refused there and its token 2 misses Y...
        { after: 0, at: 30, kind: 'hold', client: 0, member: 2, direction: 'request', ms: 120 },
        // ...M dies: ioredis re-sends A's commands to the new, empty process...
        { after: 0, at: 200, kind: 'restart', member: 0, downMs: 50, keepData: false },
        // ...and after M's quarantine, C hears from M and Y first.
        { after: 0, at: 1_499, kind: 'hold', client: 2, member: 1, direction: 'request', ms: 100 },
      ],
      seed: 1,
    };
    const outcome = await runPlan(plan);
    if (outcome.violations.length > 0) throw new Error(await counterexampleReport(plan));
    expect(outcome.handouts.map((handout) => handout.token)).toEqual([...outcome.handouts.map((handout) => handout.token)].sort((a, b) => (a ?? 0) - (b ?? 0)));
  });
});
