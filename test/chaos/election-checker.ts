/**
 * The election checker: pure functions over recorded leaderships ("reigns"), all timed on one
 * performance.now() clock. A reign's guaranteed interval is intervalOf's (checker.ts): from
 * campaign()'s resolution to min(validity end, the moment it stopped leading: resigned, signal
 * aborted, or killed-and-aborted), so two reigns may never share time (overlaps()).
 */
import { intervalOf, type Holding, type Interval } from './checker.js';

/** One leadership, as its campaigner saw it. A Holding, so that faults.ts can aim at it. */
export interface Reign extends Holding {
  /** The leadership's term (the lock's fencing token). */
  term: number;
  /** When leadership.signal aborted (for any reason, also resign()). */
  abortedAt?: number;
  /** LeadershipLostError.why. */
  why?: string;
  /** resign() was called while still leading. */
  resigned: boolean;
  /** Its clients were disconnected while leading, without resigning. */
  killed: boolean;
}

/**
 * Guaranteed interval: the lock's validity (validUntil, moved by every extension seen), cut short
 * when the leader resigned (releasedAt) or was told it no longer leads (abortedAt).
 */
export function reignInterval(reign: Reign, index: number): Interval {
  const stoppedAt = Math.min(reign.releasedAt ?? Infinity, reign.abortedAt ?? Infinity);
  return intervalOf({ client: index, acquiredAt: reign.acquiredAt, validUntil: reign.validUntil, ...(stoppedAt < Infinity ? { releasedAt: stoppedAt } : {}) });
}

/** Consecutive reigns (by start) whose term did not strictly increase: [earlier term, later term]. */
export function termViolations(reigns: readonly Pick<Reign, 'acquiredAt' | 'term'>[]): [number, number][] {
  const ordered = [...reigns].sort((a, b) => a.acquiredAt - b.acquiredAt);
  const bad: [number, number][] = [];
  for (let i = 1; i < ordered.length; i++) if (ordered[i]!.term <= ordered[i - 1]!.term) bad.push([ordered[i - 1]!.term, ordered[i]!.term]);
  return bad;
}

/**
 * Reigns that ended without resign() and whose signal did not abort by their validity end (or
 * never aborted). `exempt` leaves out reigns the caller knows were frozen past their deadline (an
 * event-loop stall: no timer can fire inside it, leadership.ts says so; the term covers that case).
 */
export function lateSignals(reigns: readonly Reign[], exempt: (reign: Reign) => boolean = () => false): { term: number; lateByMs: number }[] {
  return reigns
    .filter((reign) => !reign.resigned && !exempt(reign))
    .filter((reign) => reign.abortedAt === undefined || reign.abortedAt > reign.validUntil)
    .map((reign) => ({ term: reign.term, lateByMs: (reign.abortedAt ?? Infinity) - reign.validUntil }));
}
