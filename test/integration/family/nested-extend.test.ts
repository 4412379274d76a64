/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';
import { sleep } from '../util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

it('a nested handle extended with a short ttl does not make the outer using() lose its lock', async () => {
  const redlock = new Redlock(servers.connect(), { maxReentrancy: 4 });
  const result = await redlock
    .using('nested-extend', 6_000, async (signal) => {
      const inner = await redlock.acquire('nested-extend', 1_000, { reentrant: true });
      await inner.extend(1_000); // the helper renews "its" lock with its own ttl
      await sleep(2_500);
      return signal.aborted ? `outer aborted: ${String((signal.reason as Error).message)}` : 'outer still held';
    })
    .catch((e: Error) => `using rejected: ${e.message}`);
  await redlock.quit();
  expect(result).toBe('outer still held');
}, 30_000);
