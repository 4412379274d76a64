/**
 * Reentrancy chaos: 4 independent clients contend for one resource on 5 masters, each holding it
 * through a nested handle: an outer using() (kept extended) whose work takes a `{ reentrant: true }`
 * acquire of the same resource and holds that. The checker records the NESTED handle's guaranteed
 * interval (its acquire .. min(acquire + its remainingMs(), its release)) while members are
 * restarted empty under a holder (the restart hazard) or 2 of 5 are stopped again and again: a
 * nested handle claims no more than the outer lock guarantees, so no two clients' intervals may
 * overlap. Without the quarantine the same restarts let two nested holders overlap, which shows
 * the scenario reaches the hazard.
 */
import Redis from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Redlock, type AcquireOptions, type Lock } from '../../src/index.js';
import { startMasters } from '../harness/index.js';
import { contend, intervalOf, overlaps, type Holding } from './checker.js';
import { killRestart, minorityPause, type Fault } from './faults.js';
import { TcpProxy } from './proxy.js';
import { connectAll } from './scenarios.js';

const CLIENTS = 4;
const TTL = 1000;
const RESOURCE = 'chaos-reentrant';

/**
 * Takes the lock through a nested handle: resolves with it once the outer using() holds the lock;
 * the outer work (and so the outer lock) ends when the nested handle is released.
 */
function takeNested(redlock: Redlock, options: AcquireOptions): Promise<Lock> {
  return new Promise<Lock>((resolve, reject) => {
    let taken = false;
    redlock
      .using(
        RESOURCE,
        TTL,
        async () => {
          const nested = await redlock.acquire(RESOURCE, TTL, { reentrant: true });
          const released = new Promise<void>((done) => {
            const release = nested.release.bind(nested);
            nested.release = () => release().finally(done);
          });
          taken = true;
          resolve(nested);
          await released;
        },
        options,
      )
      // A lost outer lock rejects using() after the nested holding ended: that is no failure to take.
      .catch((error: unknown) => (taken ? undefined : reject(error)));
  });
}

async function run(fault: Fault, options: { seconds: number; quarantine: boolean; proxied: boolean; hold: [number, number] }) {
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
      redlocks.push(
        new Redlock(clients, { nodeTimeout: 50, maxLockTtl: 2 * TTL, quarantine: options.quarantine, retryDelay: 50, retryJitter: 25, maxReentrancy: 2 }),
      );
    }
    await redlocks[0]!.trustMembers();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), options.seconds * 1000);
    const contenders = contend({
      redlocks,
      resource: RESOURCE,
      ttl: TTL,
      hold: options.hold,
      acquire: { retryCount: Infinity, waitTimeout: 5_000 },
      signal: stop.signal,
      take: (redlock, _, acquire) => takeNested(redlock, acquire),
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
    return { holdings: recorded.holdings as Holding[], faults: report.counts, overlaps: overlaps(recorded.holdings.map(intervalOf)).count };
  } finally {
    for (const client of connections) client.disconnect();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await set.stop();
  }
}

describe('reentrancy chaos (short runs)', () => {
  it('kill-restart: a member restarted empty under a bare-majority holder lets no second nested holder in', async () => {
    const outcome = await run(killRestart, { seconds: 6, quarantine: true, proxied: true, hold: [0.5, 0.8] });
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.holdings.length).toBeGreaterThanOrEqual(3);
    expect(outcome.overlaps).toBe(0);
  }, 40_000);

  it('minority-pause: 2 of 5 stopped and resumed again and again, one nested holder at a time', async () => {
    const outcome = await run(minorityPause, { seconds: 4, quarantine: true, proxied: false, hold: [0.02, 0.2] });
    expect(outcome.faults.pauses).toBeGreaterThanOrEqual(2);
    expect(outcome.holdings.length).toBeGreaterThanOrEqual(8);
    expect(outcome.overlaps).toBe(0);
  }, 30_000);

  it('kill-restart without quarantine: the restart hazard lets two nested holders overlap', async () => {
    const outcome = await run(killRestart, { seconds: 6, quarantine: false, proxied: true, hold: [0.5, 0.8] });
    expect(outcome.faults.holderStillHolding).toBeGreaterThanOrEqual(1);
    expect(outcome.overlaps).toBeGreaterThan(0);
  }, 40_000);
});
