/**
 * The mutual-exclusion checker: independent clients contend for one resource, every holding is
 * recorded on one monotonic clock (all clients live in this process, so performance.now() orders
 * them all), and pure functions below decide afterwards whether two clients ever held at once.
 */
import { LockAcquireError, type AcquireOptions, type Lock, type Redlock } from '../../src/index.js';

/** One holding, as one client saw it. Times are performance.now() readings. */
export interface Holding {
  client: number;
  /** When acquire() was called. */
  calledAt: number;
  /** When acquire() resolved. */
  acquiredAt: number;
  /** acquiredAt + lock.remainingMs() read right then: the end of the guaranteed interval. */
  validUntil: number;
  /** When the client called release(): from then on it no longer acts as the holder. */
  releasedAt?: number;
  /** lock.fence, with { fencing: true }. */
  fence?: number;
  /** Members that voted 'locked' (host:port/db): what a fault can aim at. */
  lockedMembers: string[];
  /** Which permit, when a semaphore's permit is held. */
  permit?: number;
}

export interface Interval {
  client: number;
  start: number;
  end: number;
}

/**
 * What a client may rely on: from acquire's resolution until it lets go, and never past the
 * guarantee. A release ends it early, so a successor that got in after a release is no violation.
 */
export function intervalOf(holding: Pick<Holding, 'client' | 'acquiredAt' | 'validUntil' | 'releasedAt'>): Interval {
  return { client: holding.client, start: holding.acquiredAt, end: Math.min(holding.validUntil, holding.releasedAt ?? Infinity) };
}

/**
 * Pairs of intervals of different clients that share time (touching, end === start, is not
 * sharing). Returns how many such pairs, and the longest shared stretch in ms.
 */
export function overlaps(intervals: readonly Interval[]): { count: number; maxOverlapMs: number } {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  let count = 0;
  let maxOverlapMs = 0;
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    // Sorted by start: once one starts at or after a's end, none later can overlap a.
    for (let j = i + 1; j < sorted.length && sorted[j]!.start < a.end; j++) {
      const b = sorted[j]!;
      const shared = Math.min(a.end, b.end) - b.start;
      if (b.client === a.client || shared <= 0) continue;
      count++;
      maxOverlapMs = Math.max(maxOverlapMs, shared);
    }
  }
  return { count, maxOverlapMs };
}

/**
 * Fencing tokens must strictly increase in holding order (by acquiredAt). Each consecutive pair
 * that does not increase is a violation. Holdings without a fence (fencing off) are left out.
 */
export function fenceViolations(holdings: readonly Pick<Holding, 'acquiredAt' | 'fence'>[]): number {
  const fenced = holdings.filter((h): h is { acquiredAt: number; fence: number } => h.fence !== undefined).sort((a, b) => a.acquiredAt - b.acquiredAt);
  let violations = 0;
  for (let i = 1; i < fenced.length; i++) if (fenced[i]!.fence <= fenced[i - 1]!.fence) violations++;
  return violations;
}

/** Holdings whose whole acquire (call to resolution) fell inside one of the windows. */
export function acquiredWithin(holdings: readonly Pick<Holding, 'calledAt' | 'acquiredAt'>[], windows: readonly { start: number; end: number }[]): number {
  return holdings.filter((h) => windows.some((w) => h.calledAt >= w.start && h.acquiredAt <= w.end)).length;
}

export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

export interface Recording {
  holdings: Holding[];
  /** Acquires that ended in LockAcquireError. */
  failed: number;
  /** The same, by the last attempt's outcome ('taken', 'unavailable', 'quarantined', ...). */
  failedBy: Record<string, number>;
  /** Call → resolve, successful acquires only. */
  latenciesMs: number[];
}

export interface ContendOptions {
  /** One Redlock per client, each on its own ioredis connections. */
  redlocks: readonly Redlock[];
  resource: string;
  ttl: number;
  /** Hold for a random fraction of the validity in [min, max]; max well below 1. */
  hold: readonly [number, number];
  acquire: AcquireOptions;
  signal: AbortSignal;
  /**
   * How a client takes what it holds; default redlock.acquire(resource, ttl, options). A
   * semaphore scenario passes one that acquires a permit (the Lock's `permit` is then recorded).
   */
  take?: (redlock: Redlock, client: number, options: AcquireOptions) => Promise<Lock>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs every client's acquire → hold → release loop until `signal` aborts, and returns what they
 * recorded. `active` shows the holdings not yet released, for faults that aim at the holder.
 * Errors other than LockAcquireError (and the stop itself) end the run and are rethrown.
 */
export function contend(options: ContendOptions): { active: Set<Holding>; done: Promise<Recording> } {
  const recording: Recording = { holdings: [], failed: 0, failedBy: {}, latenciesMs: [] };
  const active = new Set<Holding>();
  const { signal } = options;
  const [minHold, maxHold] = options.hold;

  async function client(id: number, redlock: Redlock): Promise<void> {
    while (!signal.aborted) {
      const calledAt = performance.now();
      let lock: Lock;
      try {
        const acquire = { ...options.acquire, signal };
        lock = await (options.take ? options.take(redlock, id, acquire) : redlock.acquire(options.resource, options.ttl, acquire));
      } catch (error) {
        if (signal.aborted) return;
        if (!(error instanceof LockAcquireError)) throw error;
        recording.failed++;
        recording.failedBy[error.outcome] = (recording.failedBy[error.outcome] ?? 0) + 1;
        continue;
      }
      const acquiredAt = performance.now();
      const remaining = lock.remainingMs();
      const holdMs = remaining * (minHold + Math.random() * (maxHold - minHold));
      const holding: Holding = {
        client: id,
        calledAt,
        acquiredAt,
        validUntil: acquiredAt + remaining,
        lockedMembers: lock.votes.filter((vote) => vote.vote === 'locked').map((vote) => vote.member),
      };
      if (lock.fence !== undefined) holding.fence = lock.fence;
      const { permit } = lock as { permit?: number };
      if (permit !== undefined) holding.permit = permit;
      recording.holdings.push(holding);
      recording.latenciesMs.push(acquiredAt - calledAt);
      active.add(holding);
      await sleep(holdMs); // not cut short by the stop: a holding always ends with its release
      holding.releasedAt = performance.now();
      active.delete(holding);
      await lock.release();
    }
  }

  const done = Promise.allSettled(options.redlocks.map((redlock, id) => client(id, redlock))).then((results) => {
    const failure = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failure) throw failure.reason;
    return recording;
  });
  return { active, done };
}

/**
 * For a semaphore: the instants at which more than `permits` guaranteed intervals overlap. Sweeps
 * the interval ends in time order (an end at the same instant as a start comes first: touching is
 * no overlap, as in overlaps()), and reports each stretch over the limit once, where it begins,
 * with how many overlapped at its height. maxOverlap is the largest count seen, for reports.
 */
export function permitViolations(
  intervals: readonly Pick<Interval, 'start' | 'end'>[],
  permits: number,
): { maxOverlap: number; violations: { at: number; holders: number }[] } {
  const events = intervals
    .filter((interval) => interval.end > interval.start)
    .flatMap((interval) => [
      { at: interval.start, delta: 1 },
      { at: interval.end, delta: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  const violations: { at: number; holders: number }[] = [];
  let holders = 0;
  let maxOverlap = 0;
  let over: { at: number; holders: number } | undefined;
  for (const { at, delta } of events) {
    holders += delta;
    maxOverlap = Math.max(maxOverlap, holders);
    if (holders > permits) {
      if (!over) violations.push((over = { at, holders }));
      else over.holders = Math.max(over.holders, holders);
    } else over = undefined;
  }
  return { maxOverlap, violations };
}
