/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import diagnostics_channel from 'node:diagnostics_channel';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

it('a nested acquire works while someone subscribes to quorumlock:lost', async () => {
  const redlock = new Redlock(servers.connect(), { maxReentrancy: 4 });
  const listener = () => {};
  diagnostics_channel.subscribe('quorumlock:lost', listener);
  try {
    const result = await redlock.using('nested-lost', 5_000, async () => {
      const inner = await redlock.acquire('nested-lost', 5_000, { reentrant: true });
      return inner.remainingMs() > 0;
    });
    expect(result).toBe(true);
  } finally {
    diagnostics_channel.unsubscribe('quorumlock:lost', listener);
    await redlock.quit();
  }
});
