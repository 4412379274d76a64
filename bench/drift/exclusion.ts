/**
 * Mutual-exclusion bookkeeping shared by the simulation (scenario.ts) and the real-master
 * cross-check (real.ts): how long a client holds, and which holdings of different clients overlapped.
 */
export interface Interval {
  client: number;
  /** When the client got the lock. */
  start: number;
  /** When it let go (called release), never past the validity it was given. */
  end: number;
}

/** Pairs (earlier, later) of intervals of different clients that share time; touching is not sharing. */
export function overlappingPairs<T extends Interval>(intervals: readonly T[]): { first: T; second: T; overlapMs: number }[] {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const pairs: { first: T; second: T; overlapMs: number }[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const a = sorted[i]!;
    // Sorted by start: once one starts at or after a's end, none later can overlap a.
    for (let j = i + 1; j < sorted.length && sorted[j]!.start < a.end; j++) {
      const b = sorted[j]!;
      if (b.client !== a.client) pairs.push({ first: a, second: b, overlapMs: Math.min(a.end, b.end) - b.start });
    }
  }
  return pairs;
}

/** Half the holdings use the full validity (a correct client may), the rest a uniform part of it. */
export function holdFor(validForMs: number, random: () => number): number {
  return random() < 0.5 ? validForMs : random() * validForMs;
}
