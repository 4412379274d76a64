/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LockAcquireError, Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterAll(() => servers?.close());

it('many concurrent fenced readers all get in (readers do not exclude each other)', async () => {
  const outcomes: string[] = [];
  for (let round = 0; round < 3; round++) {
    const clientSets = Array.from({ length: 10 }, () => servers.connect());
    await Promise.all(clientSets.flat().map((c) => c.ping()));
    const redlocks = clientSets.map((clients) => new Redlock(clients, { retryCount: 0, nodeTimeout: 500 }));
    await Promise.all(redlocks.map((r) => r.tryAcquire(`warm-${round}-${Math.random()}`, 1000).then((l) => l?.release())));
    const results = await Promise.all(
      redlocks.map((r) =>
        r.acquire(`fr-${round}`, 10_000, { shared: true, fencing: true }).then(
          (l) => {
            void l.release();
            return `ok:${l.fence}`;
          },
          (e: unknown) => (e instanceof LockAcquireError ? `fail:${e.outcome}` : `err:${String(e)}`),
        ),
      ),
    );
    outcomes.push(...results);
    await Promise.all(redlocks.map((r) => r.quit()));
  }
  expect(outcomes.filter((o) => o.startsWith('fail'))).toEqual([]);
}, 60_000);
