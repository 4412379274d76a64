/**
 * Election chaos: 5 campaigners (each its own Redlock on its own member clients, of the library
 * clients.ts chose, all in this
 * process so that performance.now() orders everything) campaign for one election on 5 real
 * masters. Each leader holds for a random time (often past the first extension) and resigns, or
 * is "killed": its clients are disconnected without resigning, so its lock runs out and a fresh
 * campaigner takes the slot. Meanwhile a fault driver restarts members empty under a bare-majority
 * leader (the restart hazard: faults.ts killRestart), or SIGSTOPs a minority, briefly a majority,
 * and stalls the whole event loop past a leader's validity.
 *
 * Checked afterwards (election-checker.ts): no two reigns' guaranteed intervals overlap; terms
 * strictly increase in order of reign start; a reign that did not resign had its signal aborted
 * by its validity end (except where an event-loop stall froze it past that end, which no timer
 * can prevent: the term is what covers it); and leaders kept being elected.
 */
import { describe, expect, it } from 'vitest';
import { Redlock, type Leadership, type LeadershipLostError } from '../../src/index.js';
import { STOP_SHARE } from '../../src/election/leadership.js';
import { startMasters } from '../harness/index.js';
import { overlaps } from './checker.js';
import { lateSignals, reignInterval, termViolations, type Reign } from './election-checker.js';
import { killRestart, sleep, type Fault } from './faults.js';
import { TcpProxy } from './proxy.js';
import { openMembers, type Members } from './clients.js';

const CAMPAIGNERS = 5;
const TTL = 1000;
const ELECTION = 'chaos-leader';
/** The 2nd, 5th, 8th ... leader is killed instead of resigning (if still leading then). */
const KILL_EVERY = 3;

const between = (min: number, max: number) => min + Math.random() * (max - min);

/** Blocks the event loop, as a GC pause or a synchronous handler does (every campaigner stalls). */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/**
 * A cycle of four: SIGSTOP 2 of 5 for 0.3–0.9 s; in the first cycle only, stall the whole event
 * loop for 1.3 × ttl once someone leads (its lock runs out on the members while none of its timers
 * can fire; once, as every campaigner stalls with it), else 2 of 5 again; SIGSTOP 3 of 5 for
 * 0.3–0.6 s; 2 of 5 again. 0.3–0.7 s of health between steps. Stall windows go to `stalls`.
 */
function pausesAndStalls(stalls: { start: number; end: number }[]): Fault {
  return async ({ masters, active, ttl, signal }) => {
    const counts = { minorityPauses: 0, majorityPauses: 0, stalls: 0 };
    let cycle = 0;
    await sleep(300, signal);
    while (!signal.aborted) {
      cycle++;
      if (cycle === 2) {
        const until = performance.now() + 2 * ttl;
        while (active.size === 0 && !signal.aborted && performance.now() < until) await sleep(5, signal);
        if (active.size > 0 && !signal.aborted) {
          const start = performance.now();
          stall(1.3 * ttl);
          stalls.push({ start, end: performance.now() });
          counts.stalls++;
        }
      } else {
        const majority = cycle % 4 === 3;
        const order = [...masters.keys()].sort(() => Math.random() - 0.5);
        const paused = order.slice(0, majority ? 3 : 2).map((i) => masters[i]!);
        try {
          await Promise.all(paused.map((master) => master.pause()));
          if (majority) counts.majorityPauses++;
          else counts.minorityPauses++;
          await sleep(majority ? between(300, 600) : between(300, 900), signal);
        } finally {
          await Promise.all(paused.map((master) => master.resume()));
        }
      }
      await sleep(between(300, 700), signal);
    }
    return { counts };
  };
}

interface Outcome {
  reigns: Reign[];
  faults: Record<string, number>;
  overlaps: { count: number; maxOverlapMs: number };
  terms: [number, number][];
  late: { term: number; lateByMs: number }[];
  /** Reigns left out of the late-signal check: a stall covered their deadline. */
  stalledPastDeadline: number;
  /** Reigns that check (3) applied to: ended without resign(), no stall over their deadline. */
  signalsChecked: number;
  /** Smallest validUntil − abortedAt over those, ms. */
  minSignalSlackMs: number;
  /** Campaign stretches that ended on something else than "held", by outcome ('unfenced', ...). */
  campaignWarnings: Record<string, number>;
  /** Attempts refused as 'unfenced' (a lock quorum won, no term issued), and those inside a reign's guaranteed interval. */
  unfenced: { total: number; duringReign: number };
  killed: number;
}

async function run(fault: Fault | 'pauses', options: { seconds: number; quarantine: boolean; proxied: boolean }): Promise<Outcome> {
  const set = await startMasters(5);
  const proxies: TcpProxy[] = [];
  const nodes: { redlock: Redlock; members: Members }[] = [];
  const campaignWarnings: Record<string, number> = {};
  /** When an acquire attempt won a lock quorum but fencing refused to issue a term ('unfenced'). */
  const unfencedAt: number[] = [];
  const logger = {
    debug: (object: object, message: string) => {
      if (message === 'lock attempt failed' && (object as { outcome?: string }).outcome === 'unfenced') unfencedAt.push(performance.now());
    },
    info: () => {},
    error: () => {},
    warn: (object: object, message: string) => {
      const { outcome } = object as { outcome?: string };
      if (message === 'still campaigning' && outcome) campaignWarnings[outcome] = (campaignWarnings[outcome] ?? 0) + 1;
    },
  };
  try {
    if (options.proxied) proxies.push(...(await Promise.all(set.masters.map((master) => TcpProxy.start(master)))));
    const addresses = set.masters.map((master, i) => ({ host: '127.0.0.1', port: proxies[i]?.port ?? master.port }));
    const connect = async () => {
      // Not awaited: a replacement campaigner may connect while a member is cut off (a blackhole
      // never answers the handshake), and that member simply does not vote until it connects.
      const members = await openMembers(addresses, 'fail-fast', { wait: false });
      const { connected } = members;
      const node = {
        redlock: new Redlock(members.clients, {
          nodeTimeout: 50,
          maxLockTtl: 2 * TTL,
          quarantine: options.quarantine,
          retryDelay: 50,
          retryJitter: 25,
          logger,
        }),
        members,
      };
      nodes.push(node);
      return { node, connected };
    };
    // Every first campaigner connected before any fault starts.
    const first = await Promise.all(Array.from({ length: CAMPAIGNERS }, () => connect()));
    await Promise.all(first.map(({ connected }) => connected));
    await first[0]!.node.redlock.trustMembers();

    const reigns: Reign[] = [];
    const active = new Set<Reign>();
    /** Killed leaders' signals: awaited before checking, each aborts within the ttl. */
    const dying: Promise<void>[] = [];
    const stop = new AbortController();
    const ended = (signal: AbortSignal) =>
      new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));

    const record = (slot: number, leadership: Leadership): Reign => {
      const acquiredAt = performance.now();
      const reign: Reign = {
        client: slot,
        // The winning attempt's start is not visible; its votes came after any cut killRestart
        // made before acquiredAt − ttl, which is what the fault uses calledAt for.
        calledAt: acquiredAt,
        acquiredAt,
        validUntil: acquiredAt + leadership.remainingMs(),
        fence: leadership.term,
        term: leadership.term,
        lockedMembers: leadership.lock.votes.filter((vote) => vote.vote === 'locked').map((vote) => vote.member),
        resigned: false,
        killed: false,
      };
      // Every extension moves the guarantee: follow it. The clock is read before remainingMs(),
      // so each reading is a lower bound of the lock's real deadline.
      const follow = setInterval(() => {
        const at = performance.now();
        const remaining = leadership.remainingMs();
        // 0 is no reading: remainingMs() stops at 0, and after a stall at + 0 would be a deadline it never had.
        if (leadership.leading && remaining > 0) reign.validUntil = Math.max(reign.validUntil, at + remaining);
      }, 10);
      void ended(leadership.signal).then(() => {
        clearInterval(follow);
        reign.why = (leadership.signal.reason as LeadershipLostError).why;
      });
      leadership.signal.addEventListener('abort', () => (reign.abortedAt = performance.now()), { once: true });
      reigns.push(reign);
      active.add(reign);
      return reign;
    };

    const campaigner = async (slot: number): Promise<void> => {
      let node: { redlock: Redlock; members: Members } | undefined = first[slot]!.node;
      while (!stop.signal.aborted) {
        node ??= (await connect()).node;
        let leadership: Leadership;
        try {
          leadership = await node.redlock.election(ELECTION, { ttl: TTL, id: `c${slot}` }).campaign({ signal: stop.signal });
        } catch (error) {
          if (stop.signal.aborted) return;
          throw error;
        }
        const reign = record(slot, leadership);
        // Hold for 0.2–1.6 ttl (past the first extension, at ttl/3, more often than not), unless
        // the leadership ends first; the run's stop cuts it short.
        await Promise.race([sleep(between(0.2, 1.6) * TTL, stop.signal), ended(leadership.signal)]);
        if (leadership.leading && !stop.signal.aborted && reigns.indexOf(reign) % KILL_EVERY === 1) {
          reign.killed = true;
          node.members.close();
          void node.redlock.quit();
          node = undefined;
          dying.push(ended(leadership.signal));
        } else if (leadership.leading) {
          reign.releasedAt = performance.now();
          reign.resigned = true;
          await leadership.resign().catch(() => undefined);
        }
        active.delete(reign);
      }
    };

    const stalls: { start: number; end: number }[] = [];
    // Stalls nobody injected: this process not run for a while (two cores shared by the test
    // files, their servers and campaigners). The leadership's stop timer, due ttl/5 before the
    // deadline, cannot fire inside one (leadership.ts), as in an injected stall.
    const starved: { start: number; end: number }[] = [];
    let tickAt = performance.now();
    const watchdog = setInterval(() => {
      const at = performance.now();
      if (at - tickAt > 50) starved.push({ start: tickAt, end: at });
      tickAt = at;
    }, 10);
    const timer = setTimeout(() => stop.abort(), options.seconds * 1000);
    const campaigning = Promise.all(Array.from({ length: CAMPAIGNERS }, (_, slot) => campaigner(slot)));
    const injected = (fault === 'pauses' ? pausesAndStalls(stalls) : fault)({
      masters: set.masters,
      proxies,
      active,
      memberIndex: (member) => addresses.findIndex(({ host, port }) => member === `${host}:${port}/0`),
      ttl: TTL,
      signal: stop.signal,
    });
    const [, report] = await Promise.all([campaigning, injected]).finally(() => {
      clearTimeout(timer);
      clearInterval(watchdog);
      stop.abort();
    });
    await Promise.all(dying);

    // Left out of check (3): the deadline passed inside an injected stall that began before the
    // signal aborted, or inside a stall nobody injected that began before the stop timer was due.
    const stopDueBefore = TTL * STOP_SHARE;
    const stalledPast = (reign: Reign) =>
      stalls.some((s) => s.start < reign.validUntil && s.end > reign.validUntil - 50 && (reign.abortedAt ?? Infinity) > s.start) ||
      starved.some((s) => s.start <= reign.validUntil - stopDueBefore && s.end > reign.validUntil && (reign.abortedAt ?? Infinity) > s.start);
    const checked = reigns.filter((reign) => !reign.resigned && !stalledPast(reign) && reign.abortedAt !== undefined);
    const intervals = reigns.map(reignInterval);
    return {
      reigns,
      faults: report.counts,
      overlaps: overlaps(intervals),
      terms: termViolations(reigns),
      late: lateSignals(reigns, stalledPast),
      stalledPastDeadline: reigns.filter((reign) => !reign.resigned && stalledPast(reign)).length,
      signalsChecked: checked.length,
      minSignalSlackMs: Math.min(...checked.map((reign) => reign.validUntil - reign.abortedAt!)),
      campaignWarnings,
      unfenced: {
        total: unfencedAt.length,
        duringReign: unfencedAt.filter((at) => intervals.some(({ start, end }) => at > start && at < end)).length,
      },
      killed: reigns.filter((reign) => reign.killed).length,
    };
  } finally {
    for (const { redlock, members } of nodes) {
      await redlock.quit();
      members.close();
    }
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await set.stop();
  }
}

/** One line per run, for the report (the assertions below do not depend on it). */
function summary(name: string, outcome: Outcome): string {
  const why: Record<string, number> = {};
  for (const reign of outcome.reigns) why[reign.why ?? 'none'] = (why[reign.why ?? 'none'] ?? 0) + 1;
  return `${name}: ${JSON.stringify({
    reigns: outcome.reigns.length,
    terms: outcome.reigns.map((reign) => reign.term),
    why,
    killed: outcome.killed,
    faults: outcome.faults,
    overlaps: outcome.overlaps,
    termViolations: outcome.terms,
    late: outcome.late,
    stalledPastDeadline: outcome.stalledPastDeadline,
    // The exempted reigns too: a stalled leader is told only after its deadline, as documented.
    lateIncludingStalled: lateSignals(outcome.reigns).map(({ term, lateByMs }) => ({ term, lateByMs: Math.round(lateByMs) })),
    signalsChecked: outcome.signalsChecked,
    minSignalSlackMs: Math.round(outcome.minSignalSlackMs),
    campaignWarnings: outcome.campaignWarnings,
    unfenced: outcome.unfenced,
  })}`;
}

/** The safety checks: (1) no two reigns share guaranteed time, (2) terms strictly increase, (3) signals in time. */
function expectSafe(outcome: Outcome): void {
  expect({ overlaps: outcome.overlaps.count, termViolations: outcome.terms, lateSignals: outcome.late }).toEqual({
    overlaps: 0,
    termViolations: [],
    lateSignals: [],
  });
}

describe('election chaos (short runs)', () => {
  it('kill-restart: a member restarted empty under a bare-majority leader elects no second leader, terms increase', async () => {
    const outcome = await run(killRestart, { seconds: 7, quarantine: true, proxied: true });
    console.log(summary('kill-restart', outcome));
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.reigns.length).toBeGreaterThanOrEqual(2);
    expectSafe(outcome);
    // Not even the lock under the election let a second candidate in during a reign: no attempt
    // won a lock quorum there that only the fence round then refused (see the control below).
    expect(outcome.unfenced.duringReign).toBe(0);
  }, 40_000);

  it('pauses and stalls: minority and brief majority SIGSTOPs, an event-loop stall past a deadline, killed leaders', async () => {
    // 9 s: about 8 reigns, so the 2nd, 5th and 8th are up for a kill; with 6 s a stall once took
    // the only one due (reign 2 lost its lease in the stall), and check (3) checked nothing.
    const outcome = await run('pauses', { seconds: 9, quarantine: true, proxied: false });
    console.log(summary('pauses', outcome));
    expect(outcome.faults.minorityPauses).toBeGreaterThanOrEqual(1);
    expect(outcome.faults.stalls).toBeGreaterThanOrEqual(1);
    expect(outcome.reigns.length).toBeGreaterThanOrEqual(3);
    // Check (3) was not vacuous: some leader was killed or lost its leadership, and was told in time.
    expect(outcome.signalsChecked).toBeGreaterThanOrEqual(1);
    expectSafe(outcome);
  }, 40_000);

  // The control. Without quarantine the restart hazard is reached: while a leader still holds its
  // guarantee, another candidate wins a lock quorum (the restarted member and the two healed
  // ones), which for an unfenced lock is a second holder (chaos.test.ts, kill-restart without quarantine). An
  // election is always fenced, though, and the restarted member's counters are untrusted (the
  // quarantine off, they stay so: safety.md, "Fencing tokens"), so the fence round cannot reach a
  // quorum and the attempt fails as 'unfenced': no second leader, no repeated term. What the
  // quarantine adds for elections is that such a lock quorum is never won at all (above), and
  // liveness: without it restarted members never count for fencing again.
  it('kill-restart without quarantine: a second candidate wins a lock quorum during a reign, and fencing alone refuses it a term', async () => {
    // The faults are random: a 7 s run reached the hazard (a lock quorum won inside a reign) in
    // about 4 of 5 runs. Up to three runs until one reaches it, every run checked for safety.
    let outcome: Outcome | undefined;
    for (let runs = 0; runs < 3 && !(outcome && outcome.unfenced.duringReign > 0); runs++) {
      outcome = await run(killRestart, { seconds: 7, quarantine: false, proxied: true });
      console.log(summary('control', outcome));
      expectSafe(outcome);
    }
    expect(outcome!.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome!.unfenced.duringReign).toBeGreaterThanOrEqual(1);
  }, 90_000);
});
