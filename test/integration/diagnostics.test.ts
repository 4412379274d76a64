/** The diagnostics_channel events, as a metrics exporter would consume them. */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { channels, Redlock } from '../../src/index.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { fresh } from './util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

it('publishes acquire, vote, extend, release, lost and quarantine events, never a lock value', async () => {
  const seen: { name: string; message: Record<string, unknown> }[] = [];
  const listeners = Object.values(channels).map((channel) => {
    const listener = (message: unknown) => seen.push({ name: String(channel.name), message: message as Record<string, unknown> });
    subscribe(channel.name, listener);
    return () => unsubscribe(channel.name, listener);
  });
  try {
    const redlock = new Redlock(servers.clients, { retryCount: 1, retryDelay: 10 });
    const resource = fresh('observed');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    await redlock.acquire(resource, 5_000).catch(() => undefined); // refused: taken
    await lock.extend(5_000);
    await Promise.all(servers.clients.map((c) => c.del(resource)));
    await lock.extend(5_000).catch(() => undefined); // fails: lost
    await lock.release();
    await servers.clients[0]!.flushall();
    const quarantined = await redlock.acquire(fresh('observed'), 1_000);
    await quarantined.release();

    const named = (name: string) => seen.filter((event) => event.name === name).map((event) => event.message);
    expect(named('quorumlock:acquire:start').length).toBeGreaterThanOrEqual(3);
    const ends = named('quorumlock:acquire:end');
    expect(ends[0]).toMatchObject({ resources: [resource], ttl: 5_000, acquired: true, attempts: 1 });
    expect(typeof ends[0]!.fence).toBe('number');
    expect(ends[1]).toMatchObject({ acquired: false, outcome: 'taken', attempts: 2 });
    expect(named('quorumlock:vote').some((vote) => vote.operation === 'fence')).toBe(true);
    expect(named('quorumlock:vote').every((vote) => typeof vote.member === 'string' && typeof vote.vote === 'string' && typeof vote.ms === 'number')).toBe(true);
    expect(named('quorumlock:extend').map((event) => event.extended)).toEqual([true, false]);
    expect(named('quorumlock:extend')[1]).toMatchObject({ reason: 'lost' });
    expect(named('quorumlock:lost')).toEqual([{ resources: [resource], reason: 'extension failed' }]);
    expect(named('quorumlock:release')[0]).toMatchObject({ resources: [resource], freed: true });
    expect(named('quorumlock:quarantine')).toEqual([expect.objectContaining({ member: redlock.members[0]!.id })]);
    expect(JSON.stringify(seen)).not.toContain(lock.value);
  } finally {
    for (const stop of listeners) stop();
    await trust(servers.clients);
  }
});
