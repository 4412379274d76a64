/**
 * Issue 21's part of the interleaving exploration (explore.ts): operator calls during the run,
 * and the first round of a new Redlock, among the faults the exploration already throws.
 *
 * - Operator calls: an operator's own process (its Redlock and connections: o<k> in traces) calls
 *   trustMembers() or restoreFencing(floor) at a planned time (or after the k-th handout) while
 *   members restart with its commands in flight, its links are held or reset, members fail over
 *   and back or evict. Properties: (a) every trust.lua run that wrote (marked genesis, or gave a
 *   floor) wrote into an epoch whose data began before the call that sent it did, and the call
 *   resolves within its deadline; (b) fence tokens only increase and one client holds a resource
 *   at a time, up to the first trust the operator should not have made (one after a member lost
 *   data since the declaration: trusting it is the misuse the docs warn of) — restore-fencing
 *   with a floor above every token issued is always legitimate.
 * - The first round of a new Redlock: clients made mid-run, their first acquire right away while
 *   faults aimed at that moment go on; some clients list one server under two addresses (two
 *   connections to one fake process). Property: every lock handed out rests on as many distinct
 *   servers (the fake's processes, not addresses) as a quorum of its members; one holder at a time.
 *
 * Known gaps (explore.ts, KNOWN_GAPS) are tolerated in the generated runs and pinned by hand
 * below. QUORUMLOCK_EXPLORE_RUNS=n runs n plans per property (default 25 and 30,
 * the second without the end-of-run probes: about 3 s of CPU together), probes included;
 * QUORUMLOCK_EXPLORE_SEED=s explores from another seed; QUORUMLOCK_EXPLORE_STATS=1 prints what the
 * runs exercised.
 */
import { describe, expect, it } from 'vitest';
import { trustLua } from '../../src/lua/sources.js';
import { counterexampleReport, emptyStats, explore, newcomerArbitrary, operatorArbitrary, runPlan, type Plan, type RunOptions } from './explore.js';

const runs = Number(process.env.QUORUMLOCK_EXPLORE_RUNS ?? 0);
const seed = Number(process.env.QUORUMLOCK_EXPLORE_SEED ?? 20_261_122);
const printStats = process.env.QUORUMLOCK_EXPLORE_STATS === '1';

/** trust.lua with _bound.lua's epoch check taken out: it writes in whatever epoch it finds (an experiment). */
const EPOCH_CHECK = 'if epochId ~= BOUND_TO then';
const unbound = (body: string) => (body === trustLua ? body.replace(EPOCH_CHECK, 'if false then') : body);

/** Runs `plan`; throws with its traced replay when a property fails. */
async function check(plan: Plan, options: RunOptions = {}) {
  const outcome = await runPlan(plan, options);
  if (outcome.violations.length > 0) throw new Error(await counterexampleReport(plan, options));
  return outcome;
}

/**
 * Client 0 locks on members 7001 and 7002 (its requests to 7003 wait on the wire) and holds for
 * 600 ms; client 1 asks at 400 ms. An operator's call lands on 7001 while 7001 changes under it
 * (`faults`). If the call trusts 7001's new epoch (its data lost client 0's key), client 1 takes
 * 7001 and 7003: two holders, and token 1 handed out twice.
 */
function secondHolderPlan(faults: Plan['faults'], operator: NonNullable<Plan['operators']>[number], firstThinkMs = 0): Plan {
  return {
    members: 3,
    clients: [[{ thinkMs: firstThinkMs, ttl: 1_000, holdMs: 600 }], [{ thinkMs: 400, ttl: 1_000, holdMs: 50 }]],
    links: [],
    delays: [],
    faults: [{ after: 0, at: 0, kind: 'hold', client: 0, member: 2, direction: 'request', ms: 800 }, ...faults],
    seed: 1,
    operators: [operator],
  };
}

/** A long-lived operator's trust at 100 ms, its links 10 ms each way (read at 110, write sent at 120, run at 130 ms). */
const slowTrust = { after: 0, at: 100, kind: 'trust', above: 1, leadMs: 50, timeoutMs: 10_000, quits: false, latency: 10 } as const;

describe('exploration of operator calls and of a new Redlock’s first round (issue 21)', () => {
  it(
    'operator calls (trust, restore-fencing) under restarts with their commands in flight, held and reset links, failbacks, evictions: (a) no write into an epoch begun after the call, (b) tokens only increase, one holder at a time',
    { timeout: 180_000 },
    async () => {
      const stats = emptyStats();
      await explore(operatorArbitrary(), { numRuns: runs || 25, seed, stats });
      if (printStats) console.log('operator calls:', JSON.stringify(stats));
      expect(stats.operatorCalls).toBeGreaterThan(0);
    },
  );

  it(
    'clients made mid-run, one server under two addresses: every lock rests on a quorum of distinct servers, one holder at a time',
    { timeout: 180_000 },
    async () => {
      const stats = emptyStats();
      // Probes (the end-of-run fencing check per quorum) cost half a run's time and are about the
      // fencing of whole runs, which the other explorations check: here only in longer explorations.
      await explore(newcomerArbitrary(), { numRuns: runs || 30, seed, stats, probe: runs > 0 });
      if (printStats) console.log('first rounds:', JSON.stringify(stats));
      expect(stats.firstLocksOfLateClients).toBeGreaterThan(0);
      expect(stats.locksWithAlias).toBeGreaterThan(0);
    },
  );

  it('defect 1 by hand: a trust write re-sent into a restarted member is refused (the binding); without the binding, two holders and one token twice', async () => {
    // 7001 dies at 125 ms, the operator's write on the wire; ioredis re-sends it to the new process.
    const plan = secondHolderPlan([{ after: 0, at: 125, kind: 'restart', member: 0, downMs: 5, keepData: false }], slowTrust);
    const outcome = await check(plan);
    expect(outcome.stats.trustRefused).toBe(1);
    expect(outcome.stats.operatorErrors).toEqual({ EpochChangedError: 1 });
    // The same run with trust.lua's epoch check removed: the property can fail, and does.
    expect(trustLua).toContain(EPOCH_CHECK);
    const mutant = await runPlan(plan, { mutate: unbound });
    expect(mutant.violations.join('\n')).toMatch(/operator o0's trust \(started at 100\.4 ms\) marked genesis 7001's epoch \d+, whose data began at 130\.4 ms/);
    expect(mutant.violations.join('\n')).toContain('client 1 got the lock at 400.8 ms while client 0 held it');
    // (b) on its own, with (a) not checked: the second holder.
    const end = await runPlan(plan, { mutate: unbound, epochProperty: false });
    expect(end.violations).toEqual([
      'fence token 1 for r handed to client 1 at 400.8 ms, after token 1 (client 0, at 50.8 ms)',
      'client 1 got the lock at 400.8 ms while client 0 held it (587.6 ms left)',
    ]);
  });

  it("a trust whose epoch read is re-sent into a restarted member is refused (the connection it came over is not the call's)", async () => {
    // 7001 dies at 115 ms, the reply to the operator's epoch read on the wire: the read is re-sent
    // and answered by the new process, in a new epoch.
    const outcome = await check(secondHolderPlan([{ after: 0, at: 115, kind: 'restart', member: 0, downMs: 5, keepData: false }], slowTrust));
    expect(outcome.stats.operatorErrors).toEqual({ EpochTooNewError: 1 });
    expect(outcome.handouts.filter((handout) => handout.client >= 0).map((handout) => handout.token)).toEqual([1, 2]);
  });

  it('restore-fencing under a restart with its write in flight: refused in the new process, tokens still increase', async () => {
    const plan = secondHolderPlan([{ after: 0, at: 125, kind: 'restart', member: 0, downMs: 5, keepData: false }], { ...slowTrust, kind: 'restore' });
    const outcome = await check(plan);
    expect(outcome.stats.trustRefused).toBe(1);
    expect((await runPlan(plan, { mutate: unbound })).violations.join('\n')).toMatch(/gave floor \d+ to 7001's epoch/);
  });

  it('defect 2 by hand: a new Redlock listing 7002 twice (the second address slower and first in the list) does not lock on 7002 alone', async () => {
    // Client 1 is made at 100 ms with members [7002 under 127.0.0.2:7102, 7002, 7003]; its
    // requests to 7003 wait on the wire. 7002's yes comes first under its own address, then the
    // same server's under the other: one server, two votes, unless the round counts it once.
    const plan: Plan = {
      members: 3,
      clients: [[{ thinkMs: 0, ttl: 200, holdMs: 0 }], [{ thinkMs: 0, ttl: 1_000, holdMs: 50, fenced: false }]],
      links: [],
      delays: [],
      faults: [{ after: 0, at: 100, kind: 'hold', client: 1, member: 2, direction: 'request', ms: 300 }],
      seed: 1,
      joins: [{ client: 1, at: 100, connecting: false }],
      aliases: [{ client: 1, server: 1, slot: 0, replace: true, latency: 5 }],
    };
    const outcome = await check(plan);
    // It gets the lock once 7003 answers, on two servers.
    const locks = outcome.handouts.filter((handout) => handout.client === 1);
    expect(locks).toHaveLength(1);
    expect(locks[0]!.at).toBeGreaterThan(400);
    expect(outcome.stats).toMatchObject({ firstLocksOfLateClients: 1, locksWithAlias: 1 });
  });

  // Known gaps, pinned: tolerated in the generated runs above (KNOWN_GAPS: counted, and the run's
  // exclusion and fencing not checked from that call on), shown here as they are with `strict`:
  // the trust of a process that began after the call, then a second holder and a token handed out
  // twice. When the library refuses one, its test fails: drop the gap from KNOWN_GAPS and make
  // the test expect no violation.
  it("known gap 'first connection' (pinned): an admin script's trustMembers() while its connection to a restarting member is still being made trusts the new process", async () => {
    // At 100 ms 7001 is killed (back 5 ms later, empty) and a new process calls trustMembers() on
    // new connections, still connecting: its first connection to 7001 reaches the new process.
    const plan = secondHolderPlan([{ after: 0, at: 100, kind: 'restart', member: 0, downMs: 5, keepData: false }], {
      ...slowTrust,
      latency: 0,
      leadMs: 0,
      quits: true,
      connecting: true,
    });
    const tolerated = await runPlan(plan);
    expect(tolerated.violations).toEqual([]);
    expect(tolerated.stats.knownGaps).toEqual({ 'first connection': 1 });
    expect((await runPlan(plan, { strict: true })).violations).toEqual([
      expect.stringMatching(
        /^operator o0's trust \(started at 100\.4 ms\) marked genesis 7001's epoch \d+, whose data began at 105\.4 ms \(start\), after the call started$/,
      ),
      'fence token 1 for r handed to client 1 at 400.8 ms, after token 1 (client 0, at 50.8 ms)',
      'client 1 got the lock at 400.8 ms while client 0 held it (587.6 ms left)',
    ]);
  });

  it('a trust whose epoch read lands after a failover and failback (the connection kept) is refused: that epoch began after the call (once a known gap, found by this exploration)', async () => {
    // 7001's replica copies its data at 0 ms, before client 0 locks (at 5 ms); 7001 is demoted at
    // 150 ms and resyncs from the replica at 160 ms, losing client 0's key. The operator's call
    // at 155 ms reaches 7001 at 165 ms, in the new epoch.
    const plan = secondHolderPlan(
      [
        { after: 0, at: 0, kind: 'failback', member: 0, lagMs: 150, downMs: 10 },
        { after: 0, at: 155, kind: 'hold', client: 2, member: 0, direction: 'request', ms: 10 },
      ],
      { ...slowTrust, at: 155, latency: 0, leadMs: 100, quits: true },
      5,
    );
    const outcome = await runPlan(plan, { strict: true });
    expect(outcome.violations).toEqual([]);
    expect(outcome.stats.knownGaps).toEqual({});
  });
});
