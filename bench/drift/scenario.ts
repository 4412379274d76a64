/**
 * One cell of the sweep: 5 simulated members (some with fast clocks), K clients each with its own
 * Redlock (the real one from src/) on its own connections, looping
 *   tryAcquire → hold up to the FULL validity it was given → release → think,
 * on one ManualClock, for a fixed stretch of true time. Then: did two clients ever hold at once?
 */
import { driftMs, LockAcquireError, ManualClock, Redlock, type Lock } from '../../src/index.js';
import type { Redis } from 'ioredis';
import { runUntilIdle } from './event-loop.js';
import { holdFor, overlappingPairs } from './exclusion.js';
import { exponential, mulberry32, seedOf, type Rng } from '../../test/harness/prng.js';
import { SimConnection, type TraceEvent } from './sim-connection.js';
import { SimMember } from './sim-member.js';

export const MEMBERS = 5;
export const RESOURCE = 'drift:resource';

export interface CellSpec {
  /** How many of the 5 members run fast: 2 (a minority) or 3 (a majority). */
  fastMembers: number;
  /** How much faster the fast members' clocks run, in %: rate = 1 + driftPct / 100. */
  driftPct: number;
  driftFactor: number;
  ttl: number;
  /** Mean one-way network delay; each message takes delayMs × (0.5 + Exp(mean 0.5)). */
  delayMs: number;
  nodeTimeout: number;
  clients: number;
  /** True time simulated, in units of ttl. */
  durationTtls: number;
  /** Think time between attempts: uniform in [0, thinkTtl × ttl]. */
  thinkTtl: number;
  /** Each member is paused (requests queue) for Exp(mean 3 × nodeTimeout) spans, ~10 % of the time. */
  pauses: boolean;
}

/** A holding as the client lived it, in true time. */
export interface Holding {
  client: number;
  value: string;
  /** tryAcquire resolved. */
  start: number;
  /** The client let go (called release): start + hold, never past validUntil. */
  end: number;
  /** start + remainingMs() at acquisition: the end of the guarantee. */
  validUntil: number;
  /** Per member: its value of the resource when this holding started. */
  valuesAtStart: (string | undefined)[];
  /** Per member: its vote in the winning round ('locked', 'taken', 'pending', ...). */
  votes: string[];
  /** Whether another client was holding when this client's attempt started. */
  startedWhileHeld: boolean;
}

export interface Violation {
  /** Earlier and later holding's client. */
  first: number;
  second: number;
  overlapMs: number;
  /** Honest (not fast) members that still held the first holder's key when the second got in. */
  honestHoldingFirst: number;
  /** Fast members that still held it. */
  fastHoldingFirst: number;
}

export interface CellResult {
  spec: CellSpec;
  valid: boolean;
  /** Why not valid (a ttl the options reject). */
  invalidReason?: string;
  attempts: number;
  acquired: number;
  /** tryAcquire → null: another owner holds it. */
  refused: number;
  /** Attempts started while no other client was holding, and how many of those won. */
  attemptsWhileFree: number;
  acquiredWhileFree: number;
  /** tryAcquire threw LockAcquireError, by outcome ('unavailable', 'expired', ...). */
  failedBy: Record<string, number>;
  successRate: number;
  /** acquiredWhileFree / attemptsWhileFree: availability when nobody holds the lock. */
  freeSuccessRate: number;
  /** Mean validity granted, as a fraction of ttl. */
  meanValidity: number;
  /** Pairs of holdings of different clients that overlap in true time. */
  violations: number;
  maxOverlapMs: number;
  /** How the violating pairs looked: "honest members still holding the first key" → pairs. */
  diagnosis: Record<string, number>;
  /** Widest possible unsafe window in ms (see predictedMarginMs); > 0: violations can happen. */
  marginMs: number;
  steps: number;
  cpuMs: number;
}

export const rateOf = (driftPct: number) => 1 + driftPct / 100;

/**
 * The widest window, in true ms, in which a second client can complete an acquire while the
 * first may still rely on its lock: a fast member that got the first SET after the least network
 * delay drops it ttl / rate later; the second client's yes from it comes back after the least
 * delay again; the first's guarantee ends ttl − drift after it started sending. So
 * ttl × (1 − 1/rate) − drift − 2 × (least one-way delay). ≤ 0: no violation is possible.
 */
export function predictedMarginMs(spec: Pick<CellSpec, 'ttl' | 'driftPct' | 'driftFactor' | 'delayMs'>): number {
  const { ttl, driftPct, driftFactor, delayMs } = spec;
  return ttl * (1 - 1 / rateOf(driftPct)) - driftMs(ttl, driftFactor) - 2 * 0.5 * delayMs;
}

export function cellKey(spec: CellSpec): string {
  return `fast${spec.fastMembers} drift${spec.driftPct} df${spec.driftFactor} ttl${spec.ttl} delay${spec.delayMs}${spec.pauses ? ' pauses' : ''}`;
}

/** Pause/resume each member at random until `endAt`, all on the clock. */
function schedulePauses(clock: ManualClock, members: SimMember[], rng: Rng, spec: CellSpec, endAt: number): void {
  const pausedMean = 3 * spec.nodeTimeout;
  const upMean = 9 * pausedMean; // paused ~10 % of the time
  for (const member of members) {
    const up = () => {
      member.resume();
      if (clock.now() < endAt) clock.setTimer(down, exponential(rng, upMean));
    };
    const down = () => {
      member.pause();
      clock.setTimer(up, exponential(rng, pausedMean));
    };
    clock.setTimer(down, exponential(rng, upMean));
  }
}

function findViolations(holdings: Holding[], fast: boolean[]): Pick<CellResult, 'violations' | 'maxOverlapMs' | 'diagnosis'> & { list: Violation[] } {
  const list: Violation[] = overlappingPairs(holdings).map(({ first: a, second: b, overlapMs }) => {
    const held = b.valuesAtStart.map((value) => value === a.value);
    return {
      first: a.client,
      second: b.client,
      overlapMs,
      honestHoldingFirst: held.filter((h, k) => h && !fast[k]).length,
      fastHoldingFirst: held.filter((h, k) => h && fast[k]).length,
    };
  });
  const diagnosis: Record<string, number> = {};
  const honest = fast.filter((f) => !f).length;
  for (const v of list) {
    const label = `${v.honestHoldingFirst}/${honest} honest members still held the first key`;
    diagnosis[label] = (diagnosis[label] ?? 0) + 1;
  }
  return { violations: list.length, maxOverlapMs: Math.max(0, ...list.map((v) => v.overlapMs)), diagnosis, list };
}

export async function runCell(
  spec: CellSpec,
  seed = cellKey(spec),
  trace?: (event: TraceEvent) => void,
): Promise<CellResult & { holdings: Holding[]; violationList: Violation[] }> {
  const cpuStart = process.cpuUsage();
  const rng = mulberry32(seedOf(seed));
  const clock = new ManualClock(0);
  const rate = rateOf(spec.driftPct);
  const fast = Array.from({ length: MEMBERS }, (_, i) => i >= MEMBERS - spec.fastMembers);
  const members = fast.map((isFast, i) => new SimMember(clock, { host: 'sim', port: 7001 + i, rate: isFast ? rate : 1, offsetMs: 1e12 + rng() * 1e6 }));
  const delay = () => spec.delayMs * (0.5 + exponential(rng, 0.5));
  const options = {
    clock,
    driftFactor: spec.driftFactor,
    nodeTimeout: spec.nodeTimeout,
    retryCount: 0,
    quarantine: false,
    maxLockTtl: Math.max(60_000, spec.ttl),
  };
  const redlocks = Array.from(
    { length: spec.clients },
    (_, id) =>
      new Redlock(
        members.map((member) => new SimConnection(member, delay, id, trace) as unknown as Redis),
        options,
      ),
  );

  const result: CellResult = {
    spec,
    valid: true,
    attempts: 0,
    acquired: 0,
    refused: 0,
    attemptsWhileFree: 0,
    acquiredWhileFree: 0,
    failedBy: {},
    successRate: 0,
    freeSuccessRate: 0,
    meanValidity: 0,
    violations: 0,
    maxOverlapMs: 0,
    diagnosis: {},
    marginMs: predictedMarginMs(spec),
    steps: 0,
    cpuMs: 0,
  };
  const minimum = spec.nodeTimeout + driftMs(spec.ttl, spec.driftFactor);
  if (spec.ttl <= minimum) {
    return {
      ...result,
      valid: false,
      invalidReason: `ttl ${spec.ttl} ≤ nodeTimeout + drift (${spec.nodeTimeout} + ${driftMs(spec.ttl, spec.driftFactor)} ms)`,
      holdings: [],
      violationList: [],
    };
  }

  const endAt = spec.durationTtls * spec.ttl;
  const holdings: Holding[] = [];
  let validitySum = 0;
  let holders = 0;

  async function client(id: number, redlock: Redlock): Promise<void> {
    await clock.sleep(rng() * spec.thinkTtl * spec.ttl);
    while (clock.now() < endAt) {
      result.attempts++;
      const startedWhileHeld = holders > 0;
      if (!startedWhileHeld) result.attemptsWhileFree++;
      let lock: Lock | null = null;
      try {
        lock = await redlock.tryAcquire(RESOURCE, spec.ttl);
        if (!lock) result.refused++;
      } catch (error) {
        if (!(error instanceof LockAcquireError)) throw error;
        result.failedBy[error.outcome] = (result.failedBy[error.outcome] ?? 0) + 1;
      }
      if (lock) {
        const start = clock.now();
        const validFor = lock.remainingMs();
        result.acquired++;
        if (!startedWhileHeld) result.acquiredWhileFree++;
        holders++;
        validitySum += validFor / spec.ttl;
        const hold = holdFor(validFor, rng);
        const holding: Holding = {
          client: id,
          value: lock.value,
          start,
          end: start + hold,
          validUntil: start + validFor,
          valuesAtStart: members.map((m) => m.peek(RESOURCE)),
          votes: lock.votes.map((v) => v.vote),
          startedWhileHeld,
        };
        holdings.push(holding);
        await clock.sleep(hold);
        holders--;
        await lock.release();
      }
      await clock.sleep(rng() * spec.thinkTtl * spec.ttl);
    }
  }

  if (spec.pauses) schedulePauses(clock, members, rng, spec, endAt);
  let failure: unknown;
  let finished = 0;
  redlocks.forEach((redlock, id) => {
    void client(id, redlock).then(
      () => finished++,
      (error: unknown) => (failure ??= error),
    );
  });
  result.steps = await runUntilIdle(clock, () => {
    const fatal = failure ?? members.find((m) => m.fatal)?.fatal;
    if (fatal) throw fatal;
  });
  if (finished !== spec.clients) throw new Error(`sim: ${spec.clients - finished} clients never finished (${cellKey(spec)}): the event loop ran dry`);

  const found = findViolations(holdings, fast);
  result.violations = found.violations;
  result.maxOverlapMs = found.maxOverlapMs;
  result.diagnosis = found.diagnosis;
  result.successRate = result.attempts ? result.acquired / result.attempts : 0;
  result.freeSuccessRate = result.attemptsWhileFree ? result.acquiredWhileFree / result.attemptsWhileFree : 0;
  result.meanValidity = result.acquired ? validitySum / result.acquired : 0;
  const cpu = process.cpuUsage(cpuStart);
  result.cpuMs = (cpu.user + cpu.system) / 1000;
  return { ...result, holdings, violationList: found.list };
}
