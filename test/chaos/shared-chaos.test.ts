/**
 * Shared-lock chaos: 8 independent clients (4 readers, 4 writers) contend for one resource on 5
 * masters while a fault driver restarts members empty under holders (faults.ts killRestart: the
 * restart hazard, made to happen every cycle) or stops 2 of 5 with SIGSTOP again and again. The
 * checker (shared-checker.ts) requires that no writer's guaranteed interval overlaps any other
 * holder's, readers' may overlap; fence tokens of readers and writers together strictly increase
 * against every writer's in the order of their acquisition (one counter per resource).
 */
import Redis from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { startMasters } from '../harness/index.js';
import { contend, intervalOf, type Holding } from './checker.js';
import { killRestart, minorityPause, type Fault } from './faults.js';
import { TcpProxy } from './proxy.js';
import { connectAll } from './scenarios.js';
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

async function run(fault: Fault, options: { seconds: number; proxied: boolean; hold: [number, number] }): Promise<Outcome> {
  const set = await startMasters(5);
  const proxies: TcpProxy[] = [];
  const connections: Redis[] = [];
  try {
    if (options.proxied) proxies.push(...(await Promise.all(set.masters.map((master) => TcpProxy.start(master)))));
    const addresses = set.masters.map((master, i) => ({ host: '127.0.0.1', port: proxies[i]?.port ?? master.port }));
    const redlocks: Redlock[] = [];
    for (let i = 0; i < CLIENTS; i++) {
      const clients = await connectAll(addresses);
      connections.push(...clients);
      redlocks.push(new Redlock(clients, { nodeTimeout: 50, maxLockTtl: 2 * TTL, retryDelay: 50, retryJitter: 25 }));
    }
    await redlocks[0]!.trustMembers();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), options.seconds * 1000);
    const contenders = contend({
      redlocks,
      resource: RESOURCE,
      ttl: TTL,
      hold: options.hold,
      acquire: { retryCount: Infinity, waitTimeout: 5_000, fencing: true },
      signal: stop.signal,
      take: (redlock, client, acquire) => redlock.acquire(RESOURCE, TTL, { ...acquire, shared: isReader(client) }),
    });
    const injected = fault({
      masters: set.masters,
      proxies,
      active: contenders.active,
      memberIndex: (member) => addresses.findIndex(({ host, port }) => member === `${host}:${port}/0`),
      ttl: TTL,
      signal: stop.signal,
    });
    const [recorded, report] = await Promise.all([contenders.done, injected]).finally(() => {
      clearTimeout(timer);
      stop.abort();
    });
    const intervals: SharedInterval[] = recorded.holdings.map((holding) => ({ ...intervalOf(holding), shared: isReader(holding.client) }));
    return {
      holdings: recorded.holdings,
      faults: report.counts,
      verdict: sharedViolations(intervals),
      fenceViolations: writerFenceViolations(recorded.holdings),
    };
  } finally {
    for (const client of connections) client.disconnect();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await set.stop();
  }
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
