/**
 * The checker for shared (read) locks: a writer's guaranteed interval overlapping any other
 * holder's is a violation; readers may overlap each other. Intervals are intervalOf() (checker.ts:
 * acquire's resolution .. min(validity end, release), on one performance.now() clock).
 */
import type { Interval } from './checker.js';

export interface SharedInterval extends Interval {
  shared: boolean;
}

export interface SharedVerdict {
  /** Pairs of different clients' intervals that share time with a writer among them. */
  violations: [SharedInterval, SharedInterval][];
  /** The most readers whose intervals were open at one instant (shows readers did share). */
  maxConcurrentReaders: number;
}

export function sharedViolations(intervals: readonly SharedInterval[]): SharedVerdict {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const violations: [SharedInterval, SharedInterval][] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    // Sorted by start: once one starts at or after a's end, none later can overlap a.
    for (let j = i + 1; j < sorted.length && sorted[j]!.start < a.end; j++) {
      const b = sorted[j]!;
      if (a.client === b.client || (a.shared && b.shared) || Math.min(a.end, b.end) <= b.start) continue;
      violations.push([a, b]);
    }
  }
  // A sweep over the readers' starts and ends: an end at the same instant as a start comes first.
  const events = intervals.filter((interval) => interval.shared).flatMap((interval) => [[interval.start, 1] as const, [interval.end, -1] as const]);
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let maxConcurrentReaders = 0;
  for (const [, delta] of events) maxConcurrentReaders = Math.max(maxConcurrentReaders, (open += delta));
  return { violations, maxConcurrentReaders };
}
