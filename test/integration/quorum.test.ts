/**
 * The quorum rule against real masters: for N = 1..7 and every number of unreachable members,
 * acquire succeeds exactly when a majority answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { quorumOf, Redlock } from '../../src/index.js';
import { startTestMasters, type TestMasters } from './masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(7);
});
afterAll(() => servers?.close());

describe.each([1, 2, 3, 4, 5, 6, 7])('N = %i members', (n) => {
  it.each(Array.from({ length: n + 1 }, (_, paused) => paused))('with %i paused: locks iff N - paused >= floor(N/2)+1', async (paused) => {
    const redlock = new Redlock(servers.clients.slice(0, n), { nodeTimeout: 100, retryCount: 0 });
    const resource = `quorum:${n}:${paused}`;
    for (const master of servers.masters.slice(0, paused)) await master.pause();
    try {
      const shouldLock = n - paused >= quorumOf(n);
      if (shouldLock) {
        const lock = await redlock.acquire([resource], 5_000);
        expect(lock.votes.filter((vote) => vote.vote === 'locked').length).toBeGreaterThanOrEqual(quorumOf(n));
        expect(lock.votes.slice(0, paused).every((vote) => vote.vote === 'timeout' || vote.vote === 'pending')).toBe(true);
        await servers.resumeAll();
        await lock.release();
      } else {
        const error = await redlock.acquire([resource], 5_000).catch((e: unknown) => e);
        expect(error).toMatchObject({ name: 'LockAcquireError', outcome: 'unavailable' });
        await servers.resumeAll();
      }
      // Whatever happened, nothing of this resource is left anywhere once the paused members ran their queue.
      expect(await servers.valuesOf(resource)).toEqual(Array(7).fill(null));
    } finally {
      await servers.resumeAll();
    }
  });
});
