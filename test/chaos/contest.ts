/**
 * The run the lock-family chaos scenarios share (shared locks, semaphores, reentrancy): 5 fresh
 * masters (behind TCP proxies when the fault cuts links), `clients` independent Redlocks each on
 * its own connections (scenarios.ts' connectAll, of the library clients.ts chose: no offline queue, no re-send), the members
 * declared brand new, then contend() with the scenario's `take` while `fault` runs for `seconds`.
 * Each scenario judges what was recorded with its own checker.
 */
import { Redlock, type AcquireOptions, type RedlockOptions } from '../../src/index.js';
import { startMasters } from '../harness/index.js';
import { contend, type ContendOptions, type Recording } from './checker.js';
import type { Fault } from './faults.js';
import { TcpProxy } from './proxy.js';
import type { Members } from './clients.js';
import { connectAll } from './scenarios.js';

export interface ContestOptions {
  clients: number;
  redlockOptions: RedlockOptions;
  /** Members behind TCP proxies (a fault that cuts links needs them). */
  proxied: boolean;
  fault: Fault;
  seconds: number;
  resource: string;
  ttl: number;
  hold: readonly [number, number];
  acquire: AcquireOptions;
  take: NonNullable<ContendOptions['take']>;
}

export async function contest(options: ContestOptions): Promise<{ recording: Recording; faults: Record<string, number> }> {
  const set = await startMasters(5);
  const proxies: TcpProxy[] = [];
  const connections: Members[] = [];
  const redlocks: Redlock[] = [];
  try {
    if (options.proxied) proxies.push(...(await Promise.all(set.masters.map((master) => TcpProxy.start(master)))));
    const addresses = set.masters.map((master, i) => ({ host: '127.0.0.1', port: proxies[i]?.port ?? master.port }));
    for (let i = 0; i < options.clients; i++) {
      const members = await connectAll(addresses);
      connections.push(members);
      redlocks.push(new Redlock(members.clients, options.redlockOptions));
    }
    await redlocks[0]!.trustMembers();
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), options.seconds * 1000);
    const contenders = contend({
      redlocks,
      resource: options.resource,
      ttl: options.ttl,
      hold: options.hold,
      acquire: options.acquire,
      signal: stop.signal,
      take: options.take,
    });
    const injected = options.fault({
      masters: set.masters,
      proxies,
      active: contenders.active,
      memberIndex: (member) => addresses.findIndex(({ host, port }) => member === `${host}:${port}/0`),
      ttl: options.ttl,
      signal: stop.signal,
    });
    const [recording, report] = await Promise.all([contenders.done, injected]).finally(() => {
      clearTimeout(timer);
      stop.abort();
    });
    return { recording, faults: report.counts };
  } finally {
    await Promise.all(redlocks.map((redlock) => redlock.quit()));
    for (const members of connections) members.close();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await set.stop();
  }
}
