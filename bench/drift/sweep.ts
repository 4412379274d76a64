/**
 * The parameter grid: which members run fast (a minority, 2 of 5, or a majority, 3 of 5), by how
 * much, against which driftFactor, for each ttl and network delay; a single fast member at the
 * headline ttl; and a few cells with random member pauses. Every cell is seeded by its own parameters, so any one can be re-run alone.
 */
import { cellKey, runCell, type CellResult, type CellSpec } from './scenario.js';

export const DRIFT_PCTS = [0, 0.5, 1, 2, 5, 10, 30, 50];
export const DRIFT_FACTORS = [0.001, 0.01, 0.05, 0.1, 0.3, 0.4];
export const TTLS = [100, 1000, 10_000];
export const DELAYS_MS = [0.2, 5, 20];
export const PLACEMENTS = [2, 3];
/** The headline panels. */
export const MAIN = { ttl: 1000, delayMs: 0.2 };

/** Per-member timeout for a mean one-way delay d: 4d (twice the mean round trip), at least 1 ms. */
export const nodeTimeoutFor = (delayMs: number) => Math.max(1, 4 * delayMs);

export interface SweepOptions {
  /** Only the headline ttl and delay. */
  quick: boolean;
  clients: number;
  durationTtls: number;
  thinkTtl: number;
}

export function grid(options: SweepOptions): CellSpec[] {
  const specs: CellSpec[] = [];
  const base = { clients: options.clients, durationTtls: options.durationTtls, thinkTtl: options.thinkTtl };
  const ttls = options.quick ? [MAIN.ttl] : TTLS;
  const delays = options.quick ? [MAIN.delayMs] : DELAYS_MS;
  for (const ttl of ttls) {
    for (const delayMs of delays) {
      for (const fastMembers of PLACEMENTS) {
        for (const driftFactor of DRIFT_FACTORS) {
          for (const driftPct of DRIFT_PCTS) {
            specs.push({ ...base, fastMembers, driftPct, driftFactor, ttl, delayMs, nodeTimeout: nodeTimeoutFor(delayMs), pauses: false });
          }
        }
      }
    }
  }
  // A single fast member, at the headline ttl: enough to break safety in a race (see README).
  for (const delayMs of delays) {
    for (const driftFactor of DRIFT_FACTORS) {
      for (const driftPct of DRIFT_PCTS) {
        specs.push({ ...base, fastMembers: 1, driftPct, driftFactor, ttl: MAIN.ttl, delayMs, nodeTimeout: nodeTimeoutFor(delayMs), pauses: false });
      }
    }
  }
  // Pauses: requests queue on a paused member and run late; the rollback must still clean up.
  for (const fastMembers of PLACEMENTS) {
    for (const driftPct of [0, 50]) {
      for (const driftFactor of [0.01, 0.4]) {
        specs.push({ ...base, fastMembers, driftPct, driftFactor, ttl: 1000, delayMs: 5, nodeTimeout: nodeTimeoutFor(5), pauses: true });
      }
    }
  }
  return specs;
}

export async function runSweep(specs: CellSpec[], progress: (done: number, total: number, cell: CellResult) => void): Promise<CellResult[]> {
  const results: CellResult[] = [];
  for (const spec of specs) {
    const { holdings: _holdings, violationList: _list, ...result } = await runCell(spec);
    results.push(result);
    progress(results.length, specs.length, result);
  }
  return results;
}

export { cellKey };
