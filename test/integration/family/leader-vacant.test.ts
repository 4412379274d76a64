/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LeaderUnknownError, Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';
import { sleep } from '../util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

it('leader() does not report a vacancy while the leader holds its term (one member restarted empty)', async () => {
  // C holds a stale key of the election for 1 s: the leader wins on A and B only.
  await servers.clients[2]!.set('quorumlock:election:{vac}', 'stale', 'PX', 1000);
  const leaderSide = new Redlock(servers.connect());
  const observer = new Redlock(servers.connect());
  const rival = new Redlock(servers.connect(), { retryCount: 0 });
  const leadership = await leaderSide.election('vac', { ttl: 20_000, id: 'L' }).campaign();
  await sleep(1200); // C's stale key is gone
  await servers.masters[0]!.restart(); // A restarts empty: the restart hazard
  await sleep(300);
  // The lock is still guaranteed (A is quarantined for everyone else): a rival cannot win.
  const rivalTry = await rival
    .election('vac', { ttl: 20_000, id: 'R' })
    .campaign({ signal: AbortSignal.timeout(1500) })
    .then(
      () => 'won',
      (e: Error) => e.name,
    );
  expect(leadership.leading).toBe(true);
  expect(leadership.remainingMs()).toBeGreaterThan(10_000);
  expect(rivalTry).not.toBe('won');
  // Never "vacant" while the lock rests on it: either the leader, or "cannot tell".
  const seen = await observer
    .election('vac', { ttl: 20_000, id: 'O' })
    .leader()
    .then(
      (leader) => leader,
      (error: Error) => error,
    );
  expect(seen).not.toBeNull();
  expect(seen instanceof LeaderUnknownError || (seen as { id?: string }).id === 'L').toBe(true);
  await leadership.resign();
  await Promise.all([leaderSide.quit(), observer.quit(), rival.quit()]);
});
