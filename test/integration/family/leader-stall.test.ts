/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

it('leader() after an event-loop stall reads the replies that arrived in time (as acquire rounds do)', async () => {
  const leaderSide = new Redlock(servers.connect());
  const observer = new Redlock(servers.connect());
  const leadership = await leaderSide.election('stall', { ttl: 10_000, id: 'L' }).campaign();
  const election = observer.election('stall', { ttl: 10_000, id: 'O' });
  expect((await election.leader())?.id).toBe('L'); // warm
  // For comparison: an acquire round under the same stall.
  const lockP = observer.tryAcquire('stall-res', 5_000);
  stall(observer.settings.nodeTimeout + 300);
  const lock = await lockP;
  const p = election.leader().then(
    (l) => l,
    (e: Error) => e,
  );
  stall(observer.settings.nodeTimeout + 300);
  const seen = await p;
  await leadership.resign();
  await lock?.release();
  await Promise.all([leaderSide.quit(), observer.quit()]);
  expect(seen).not.toBeInstanceOf(Error);
});
