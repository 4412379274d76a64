/** Regression test for a review finding on the lock family (issue 13): see the test name. */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../../src/index.js';
import { startTestMasters, type TestMasters } from '../masters.js';
import { scriptCalls } from '../util.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** Script calls on one master, read synchronously (the event loop is blocked). */
function scriptCallsNow(port: number): number {
  const info = execFileSync('redis-cli', ['-p', String(port), 'INFO', 'commandstats'], { encoding: 'utf8' });
  let calls = 0;
  for (const match of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(match[1]);
  return calls;
}

/**
 * Blocks the event loop past the round's deadline and until every master has run the script
 * calls just sent (on a busy machine a server can take longer than any fixed stall), plus a
 * margin for their replies to reach this process' sockets: replies that arrived in time.
 */
function stall(ms: number, before: readonly number[]): void {
  busy(ms);
  const deadline = performance.now() + 30_000;
  while (servers.masters.some((master, index) => scriptCallsNow(master.port) <= before[index]!)) {
    if (performance.now() > deadline) throw new Error('the masters did not run the calls');
    busy(10);
  }
  busy(50);
}

const callsNow = () => Promise.all(servers.clients.map(scriptCalls));

/**
 * Returns in this turn's check phase: the calls just made are written (our calls go out when the
 * tick that made them ends: redis-member.ts corks the socket for it), and their replies can be
 * read no sooner than the next turn's poll phase, which comes after its timers.
 */
const written = () => new Promise<void>((resolve) => setImmediate(resolve));

it('leader() after an event-loop stall reads the replies that arrived in time (as acquire rounds do)', async () => {
  const leaderSide = new Redlock(servers.connect());
  const observer = new Redlock(servers.connect());
  const leadership = await leaderSide.election('stall', { ttl: 10_000, id: 'L' }).campaign();
  const election = observer.election('stall', { ttl: 10_000, id: 'O' });
  expect((await election.leader())?.id).toBe('L'); // warm
  // For comparison: an acquire round under the same stall.
  let before = await callsNow();
  const lockP = observer.tryAcquire('stall-res', 5_000);
  await written();
  stall(observer.settings.nodeTimeout + 300, before);
  const lock = await lockP;
  expect(lock).not.toBeNull(); // its replies were read, not timed out
  before = await callsNow();
  const p = election.leader().then(
    (l) => l,
    (e: Error) => e,
  );
  await written();
  stall(observer.settings.nodeTimeout + 300, before);
  const seen = await p;
  await leadership.resign();
  await lock?.release();
  await Promise.all([leaderSide.quit(), observer.quit()]);
  expect(seen).not.toBeInstanceOf(Error);
});
