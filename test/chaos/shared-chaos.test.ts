/**
 * Shared-lock chaos: 8 independent clients (4 readers, 4 writers) contend for one resource on 5
 * masters while a fault driver restarts members empty under holders (faults.ts killRestart: the
 * restart hazard, made to happen every cycle) or stops 2 of 5 with SIGSTOP again and again. The
 * checker (shared-checker.ts) requires that no writer's guaranteed interval overlaps any other
 * holder's, readers' may overlap; fence tokens of readers and writers together strictly increase
 * against every writer's in the order of their acquisition (one counter per resource). The
 * writers start once every reader's first acquire has settled (writersAfterReaders: why).
 */
import { describe, expect, it } from 'vitest';
import { intervalOf, type Holding } from './checker.js';
import { killRestart, minorityPause, type Fault } from './faults.js';
import { contest } from './contest.js';
import { sharedViolations, type SharedInterval } from './shared-checker.js';

const CLIENTS = 8;
const TTL = 1000;
const RESOURCE = 'chaos-shared';
const isReader = (client: number) => client % 2 === 0;

interface Outcome {
  holdings: Holding[];
  faults: Record<string, number>;
  verdict: ReturnType<typeof sharedViolations>;
  /** Pairs of a writer's and another holding whose tokens are out of their acquisition order. */
  fenceViolations: number;
}

/**
 * Tokens are ordered against every writer: a holding acquired before a writer's has a smaller
 * token, one acquired after it a larger one (their intervals never overlap, so one wholly
 * precedes the other). Readers among themselves may draw in either order.
 */
function writerFenceViolations(holdings: readonly Holding[]): number {
  const fenced = holdings.filter((h) => h.fence !== undefined);
  let violations = 0;
  for (const w of fenced.filter((h) => !isReader(h.client)))
    for (const h of fenced) {
      if (h === w) continue;
      if (h.acquiredAt < w.acquiredAt ? h.fence! >= w.fence! : h.fence! <= w.fence!) violations++;
    }
  return violations;
}

/**
 * A gate the writers' first acquires wait at until every reader's first acquire has settled.
 *
 * Why: the line is first come, first served, and a client that lets go comes back at its end. So
 * whatever order the 8 clients' first tickets take at the start repeats for the whole run: readers
 * share only where they stand side by side in it. All 8 start in the same millisecond, readers
 * and writers alternating (client 0, 1, 2, ...). With ioredis or node-redis every member reads
 * client 0's first attempt first (each socket is written in call order, in the caller's tick), a
 * reader wins, the other readers' first attempts get in beside it before any writer has joined
 * the line, and the four readers stay together all along. GLIDE writes each client's request from
 * its own task in its Rust core, so the first attempts reach each member in its own order: a
 * writer often wins the first race, or joins the line before the other readers' first attempts
 * land; the line then alternates reader, writer, reader, ... and no two readers hold at once
 * again. With kill-restart each turn of the line is then 8 holds long (about 5 s) instead of 5,
 * and no holder that called after the cut comes within the fault's 4 s to restart under. The gate
 * takes that race out: the readers start together, and whichever the library, the writers join
 * the line only once they hold.
 */
function writersAfterReaders(): { before(client: number, signal: AbortSignal | undefined): Promise<void>; after(client: number): void } {
  const readers = new Set(Array.from({ length: CLIENTS }, (_, client) => client).filter(isReader));
  let open!: () => void;
  const readersIn = new Promise<void>((resolve) => (open = resolve));
  return {
    before(client, signal) {
      if (isReader(client) || readers.size === 0) return Promise.resolve();
      // Let go at the stop too: contend() then sees the signal aborted and ends this client.
      return Promise.race([readersIn, new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }))]);
    },
    after(client) {
      if (readers.delete(client) && readers.size === 0) open();
    },
  };
}

async function run(fault: Fault, options: { seconds: number; proxied: boolean; hold: [number, number] }): Promise<Outcome> {
  const gate = writersAfterReaders();
  const { recording, faults } = await contest({
    clients: CLIENTS,
    redlockOptions: { nodeTimeout: 50, maxLockTtl: 2 * TTL, retryDelay: 50, retryJitter: 25 },
    proxied: options.proxied,
    fault,
    seconds: options.seconds,
    resource: RESOURCE,
    ttl: TTL,
    hold: options.hold,
    acquire: { retryCount: Infinity, waitTimeout: 5_000, fencing: true },
    take: async (redlock, client, acquire) => {
      await gate.before(client, acquire.signal);
      return redlock.acquire(RESOURCE, TTL, { ...acquire, shared: isReader(client) }).finally(() => gate.after(client));
    },
  });
  const intervals: SharedInterval[] = recording.holdings.map((holding) => ({ ...intervalOf(holding), shared: isReader(holding.client) }));
  return {
    holdings: recording.holdings,
    faults,
    verdict: sharedViolations(intervals),
    fenceViolations: writerFenceViolations(recording.holdings),
  };
}

describe('shared-lock chaos (short runs)', () => {
  it('the checker sees a writer beside a reader, and lets readers share', () => {
    const reader = (client: number, start: number, end: number) => ({ client, start, end, shared: true });
    const writer = (client: number, start: number, end: number) => ({ client, start, end, shared: false });
    expect(sharedViolations([reader(0, 0, 10), reader(2, 5, 15)])).toEqual({ violations: [], maxConcurrentReaders: 2 });
    expect(sharedViolations([reader(0, 0, 10), writer(1, 9, 20)]).violations).toHaveLength(1);
    expect(sharedViolations([writer(1, 0, 10), writer(3, 10, 20), reader(0, 20, 30)]).violations).toHaveLength(0);
  });

  it('kill-restart: members restarted empty under a bare-majority holder let no writer beside anyone', async () => {
    const outcome = await run(killRestart, { seconds: 7, proxied: true, hold: [0.5, 0.8] });
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.holdings.filter((h) => isReader(h.client)).length).toBeGreaterThanOrEqual(2);
    expect(outcome.holdings.filter((h) => !isReader(h.client)).length).toBeGreaterThanOrEqual(1);
    expect({ violations: outcome.verdict.violations, fences: outcome.fenceViolations }).toEqual({ violations: [], fences: 0 });
  }, 40_000);

  it('minority-pause: 2 of 5 stopped and resumed again and again; readers share, writers stay alone', async () => {
    const outcome = await run(minorityPause, { seconds: 5, proxied: false, hold: [0.02, 0.2] });
    expect(outcome.faults.pauses).toBeGreaterThanOrEqual(2);
    expect(outcome.holdings.filter((h) => !isReader(h.client)).length).toBeGreaterThanOrEqual(3);
    expect({ violations: outcome.verdict.violations, fences: outcome.fenceViolations }).toEqual({ violations: [], fences: 0 });
    // Readers did hold together: the lock shared, not merely took turns.
    expect(outcome.verdict.maxConcurrentReaders).toBeGreaterThanOrEqual(2);
  }, 30_000);
});
