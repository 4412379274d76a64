/**
 * redlock.release(resources, value): a lock released by another process that knows only its
 * resources and value (go-redsync's split lock/unlock; docs/migration.md), on three real masters.
 * Owner-only: a wrong or stale value deletes nothing. Bad input is refused before any call.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ArgumentRangeError, ArgumentTypeError } from '../../src/index.js';
import { redlocksOn, startTestMasters, type TestMasters } from './masters.js';
import { fresh, heldOnEvery, scriptCalls, warmedUp } from './util.js';

let servers: TestMasters;
const redlocks = redlocksOn(() => servers);

beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterEach(() => redlocks.quitAll());
afterAll(() => servers?.close());

/**
 * The owner's Redlock on connections of its own (another process), warmed by one lock taken and
 * released: its members' epochs are read, so its next acquire goes to every member at once (a
 * member whose epoch is still being read when a round settles is sent nothing, and on a busy
 * machine that round can settle on the other two). And a wait until every member ran what was
 * sent: a PING on the same connection comes back behind it. A release sent on other connections
 * could otherwise reach a straggler before the acquire does (that member would then keep the key
 * until its ttl, as after any release a quorum confirmed).
 */
async function owner() {
  const clients = servers.connect();
  const redlock = await warmedUp(redlocks.client({ retryCount: 0 }, clients));
  const settled = () => Promise.all(clients.map((client) => client.ping()));
  await settled();
  return { redlock, settled };
}

describe('redlock.release(resources, value)', () => {
  it('releases a lock another process acquired, from its resources and value alone', async () => {
    const { redlock: first, settled } = await owner();
    // The releasing side on connections of its own too, so the test can wait until a member that
    // was still pending when the quorum answered has run the release.
    const { redlock: other, settled: released } = await owner();
    const resources = [fresh('split-a'), fresh('split-b')].map((name) => `{split}${name}`);
    const lock = await first.acquire(resources, 10_000);
    await settled();
    // What the other side receives: plain data, no handle.
    const { value } = JSON.parse(JSON.stringify({ resources: lock.resources, value: lock.value })) as { value: string };

    const result = await other.release(resources, value);
    expect(result.freed).toBe(true);
    expect(result.votes.filter((vote) => vote.vote === 'released').length).toBeGreaterThanOrEqual(2);
    expect(result.votes.map((vote) => vote.vote)).not.toContain('absent');
    await released();
    for (const name of resources) expect(await servers.valuesOf(name)).toEqual([null, null, null]);
    // Free at once for anyone: no waiting for the ttl.
    const next = await other.acquire(resources, 10_000);
    await next.release();
  });

  it("is owner-only: another owner's keys stay, and the votes say nothing of that value was there", async () => {
    const { redlock: first, settled } = await owner();
    const resource = fresh('not-mine');
    const lock = await first.acquire(resource, 10_000);
    const stale = await first.acquire(fresh('stale'), 10_000);
    await stale.release();
    await settled();

    // A well-formed value that holds nothing here (another lock's, already released).
    const result = await redlocks.client().release(resource, stale.value);
    expect(result.votes.map((vote) => vote.vote).filter((vote) => vote !== 'pending')).not.toContain('released');
    await Promise.all(servers.clients.map((client) => client.ping()));
    expect(await servers.valuesOf(resource)).toEqual([lock.value, lock.value, lock.value]);
    expect(lock.held).toBe(true);
    await lock.release();
  });

  it("releases a shared lock's own hold only: the other reader keeps its lock, then an exclusive one gets in", async () => {
    const { redlock: first, settled } = await owner();
    const resource = fresh('shared-by-value');
    const mine = await first.acquire(resource, 10_000, { shared: true });
    const theirs = await first.acquire(resource, 10_000, { shared: true });
    await settled();
    expect(mine.value.startsWith('~')).toBe(true);

    expect((await redlocks.client().release(resource, mine.value)).freed).toBe(true);
    // The other reader still holds: an exclusive acquire is refused.
    expect(await first.tryAcquire(resource, 10_000)).toBeNull();
    await theirs.release();
    const exclusive = await first.tryAcquire(resource, 10_000);
    expect(exclusive).not.toBeNull();
    await exclusive!.release();
  });

  it('refuses bad input with typed errors, before any call to a member', async () => {
    const redlock = redlocks.client();
    const lock = await redlock.acquire(fresh('bad-input'), 10_000);
    // The acquire resolves on a majority: the last member's call may land later (its own connection).
    await heldOnEvery(servers.clients, lock.resources[0]!, lock.value);
    const before = await Promise.all(servers.clients.map(scriptCalls));

    const refused = async (call: Promise<unknown>) =>
      call.then(
        () => expect.fail('resolved'),
        (error: unknown) => error,
      );
    const notString = await refused(redlock.release(lock.resources, 42 as unknown as string));
    expect(notString).toBeInstanceOf(ArgumentTypeError);
    expect(notString).toMatchObject({ parameter: 'value', code: 'QUORUMLOCK_ERR_INVALID_ARG_TYPE' });
    const id = await refused(redlock.release(lock.resources, lock.id));
    expect(id).toBeInstanceOf(ArgumentRangeError);
    expect(id).toMatchObject({ parameter: 'value', code: 'QUORUMLOCK_ERR_OUT_OF_RANGE' });
    expect((id as Error).message).toMatch(/not lock\.id/);
    const aLock = await refused(redlock.release(lock as unknown as string, lock.value));
    expect(aLock).toBeInstanceOf(ArgumentTypeError);
    expect((aLock as Error).message).toMatch(/call lock\.release\(\)/);
    expect(await refused(redlock.release([], lock.value))).toMatchObject({ parameter: 'resources' });

    expect(await Promise.all(servers.clients.map(scriptCalls))).toEqual(before);
    expect(await servers.valuesOf(lock.resources[0]!)).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();
  });
});
