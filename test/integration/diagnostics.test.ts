/** The diagnostics_channel events, as a metrics exporter would consume them. */
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { inspect } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { channels, LockExtendError, Redlock, subscribeChannel, type ChannelMessages, type ChannelName } from '../../src/index.js';
import { startTestMasters, trust, type TestMasters } from './masters.js';
import { eventually, fresh } from './util.js';

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
    // The first call after the flush finds another epoch there: refused, writing nothing, and sent
    // again bound to the new epoch only while its round waits (members/epochs.ts). From then on
    // the member's new epoch is known: the next acquire hears it is quarantined.
    const learning = await redlock.acquire(fresh('learning'), 1_000);
    await learning.release();
    const quarantined = await redlock.acquire(fresh('observed'), 1_000);
    await quarantined.release();

    const named = (name: string) => seen.filter((event) => event.name === name).map((event) => event.message);
    expect(named('quorumlock:acquire:start').length).toBeGreaterThanOrEqual(3);
    const ends = named('quorumlock:acquire:end');
    expect(ends[0]).toMatchObject({ resources: [resource], ttl: 5_000, acquired: true, attempts: 1 });
    expect(typeof ends[0]!.fence).toBe('number');
    expect(ends[1]).toMatchObject({ acquired: false, outcome: 'taken', attempts: 2 });
    expect(named('quorumlock:vote').some((vote) => vote.operation === 'fence')).toBe(true);
    expect(named('quorumlock:vote').every((vote) => typeof vote.member === 'string' && typeof vote.vote === 'string' && typeof vote.ms === 'number')).toBe(
      true,
    );
    expect(named('quorumlock:extend').map((event) => event.extended)).toEqual([true, false]);
    expect(named('quorumlock:extend')[1]).toMatchObject({ reason: 'lost' });
    expect(named('quorumlock:lost')).toEqual([{ lockId: lock.id, resources: [resource], reason: 'extension failed', lostBecause: 'gone' }]);
    expect(ends[0]!.lockId).toBe(lock.id);
    // The lost lock's release is no second end of holding: only the quarantined lock's release shows.
    expect(named('quorumlock:release').map((event) => event.lockId)).toEqual([learning.id, quarantined.id]);
    expect(named('quorumlock:release')[0]).toMatchObject({ freed: true });
    // Member 0's quarantined answer may come after the others decided its round: wait for it.
    await eventually(async () => expect(named('quorumlock:quarantine')).toContainEqual(expect.objectContaining({ member: redlock.members[0]!.id })));
    expect(named('quorumlock:quarantine').every((event) => event.member === redlock.members[0]!.id)).toBe(true);
    expect(JSON.stringify(seen)).not.toContain(lock.value);
  } finally {
    for (const stop of listeners) stop();
    await trust(servers.clients);
  }
});

it('traces acquire, extend and release on tracing channels: one context from start to end, named by lockId, never a value', async () => {
  type Event = { operation: string; event: string; context: Record<string, unknown> };
  const events: Event[] = [];
  const stops = ['acquire', 'extend', 'release'].map((operation) => {
    const channel = tracingChannel(`quorumlock:${operation}`);
    const on = (event: string) => (context: unknown) => events.push({ operation, event, context: context as Record<string, unknown> });
    const handlers = { start: on('start'), end: on('end'), asyncStart: on('asyncStart'), asyncEnd: on('asyncEnd'), error: on('error') };
    channel.subscribe(handlers);
    return () => channel.unsubscribe(handlers);
  });
  try {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const resource = fresh('traced');
    const lock = await redlock.acquire(resource, 5_000, { fencing: true });
    await lock.extend(6_000);
    const refused = await redlock.acquire(resource, 5_000).catch((error: unknown) => error);
    expect(await redlock.tryAcquire(resource, 5_000)).toBeNull();
    await lock.release();

    const of = (operation: string, event: string) => events.filter((e) => e.operation === operation && e.event === event).map((e) => e.context);
    // The won acquire: start and asyncEnd see the same context object, with the summary as result.
    const [wonStart, refusedStart] = of('acquire', 'start');
    expect(wonStart).toMatchObject({ lockId: lock.id, resources: [resource], ttl: 5_000 });
    const wonEnd = of('acquire', 'asyncEnd').find((context) => context === wonStart);
    expect(wonEnd).toBeDefined();
    expect(wonEnd!.result).toEqual({ fence: lock.fence, remainingMs: expect.any(Number) });
    // The refused one ends with its error on its own context.
    expect(refusedStart!.lockId).not.toBe(lock.id);
    expect(of('acquire', 'error')).toEqual([refusedStart]);
    // tryAcquire's null is an answer, not an error: it ends with { taken: true }.
    const tryStart = of('acquire', 'start')[2]!;
    expect(of('acquire', 'asyncEnd').find((context) => context === tryStart)!.result).toEqual({ taken: true });
    expect(Object.isFrozen(tryStart.resources)).toBe(true); // the same array the members key on
    expect(refusedStart!.error).toBe(refused);
    expect(of('extend', 'start')).toEqual([expect.objectContaining({ lockId: lock.id, ttl: 6_000 })]);
    expect(of('extend', 'asyncEnd')[0]!.result).toEqual({ remainingMs: expect.any(Number) });
    expect(of('release', 'asyncEnd')).toEqual([expect.objectContaining({ lockId: lock.id, result: { freed: true, elapsedMs: expect.any(Number) } })]);
    expect(JSON.stringify(events.map((e) => ({ ...e.context, error: undefined })))).not.toContain(lock.value);
  } finally {
    for (const stop of stops) stop();
  }
});

it('keeps lock values out of failed votes: errors carry name, message and code, not the command', async () => {
  const redlock = new Redlock(servers.clients, { retryCount: 0 });
  const lock = await redlock.acquire(fresh('leak'), 10_000);
  const seen: unknown[] = [];
  const onVote = (message: unknown) => seen.push(message);
  subscribe('quorumlock:vote', onVote);
  // Two of three members now refuse our scripts: ioredis rejects with errors that carry the command.
  const refusing = servers.clients.slice(0, 2);
  await Promise.all(refusing.map((client) => client.call('ACL', 'SETUSER', 'default', '-evalsha', '-eval')));
  try {
    const error = (await lock.extend(10_000).then(
      () => undefined,
      (e: unknown) => e,
    )) as LockExtendError;
    expect(error.reason).toBe('unavailable');
    const failed = error.votes.filter((vote) => vote.vote === 'error');
    expect(failed).toHaveLength(2);
    for (const vote of failed) {
      expect(vote.error!.message).toMatch(/NOPERM/);
      expect(Object.keys(vote.error!)).not.toContain('command');
    }
    expect(inspect(error, { depth: 10 })).not.toContain(lock.value);
    expect(inspect(seen, { depth: 10 })).not.toContain(lock.value);
  } finally {
    unsubscribe('quorumlock:vote', onVote);
    await Promise.all(refusing.map((client) => client.call('ACL', 'SETUSER', 'default', '+@all')));
    await lock.release();
  }
});

/** Every plain event, in order, while `body` runs. */
async function recording(body: (events: { channel: ChannelName; lockId?: string; message: ChannelMessages[ChannelName] }[]) => Promise<void>): Promise<void> {
  const events: { channel: ChannelName; lockId?: string; message: ChannelMessages[ChannelName] }[] = [];
  const names: ChannelName[] = ['quorumlock:acquire:end', 'quorumlock:release', 'quorumlock:lost', 'quorumlock:extend'];
  const stops = names.map((channel) =>
    subscribeChannel(channel, (message) => events.push({ channel, lockId: 'lockId' in message ? message.lockId : undefined, message })),
  );
  try {
    await body(events);
  } finally {
    for (const stop of stops) stop();
  }
}

it('ends each lock once: a second release() publishes nothing, a release() after a loss publishes nothing', async () => {
  await recording(async (events) => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const twice = await redlock.acquire(fresh('twice'), 10_000);
    const [first, second] = await Promise.all([twice.release(), twice.release()]); // concurrent: still one end
    expect([first.freed, second.freed]).toEqual([true, true]);
    await twice.release();
    const ends = (lockId: string) => events.filter((event) => event.lockId === lockId && event.channel !== 'quorumlock:extend').map((event) => event.channel);
    expect(ends(twice.id)).toEqual(['quorumlock:acquire:end', 'quorumlock:release']);

    const lost = await redlock.acquire(fresh('lost'), 10_000);
    await Promise.all(servers.clients.map((client) => client.del(lost.resources[0]!)));
    await expect(lost.extend(10_000)).rejects.toMatchObject({ reason: 'lost' });
    await lost.release();
    await lost.release();
    expect(ends(lost.id)).toEqual(['quorumlock:acquire:end', 'quorumlock:lost']);
    expect(events.find((event) => event.channel === 'quorumlock:lost')!.message).toEqual({
      lockId: lost.id,
      resources: lost.resources,
      reason: 'extension failed',
      lostBecause: 'gone',
    });
  });
});

it('publishes the expiry of a lock nobody watches when lost had subscribers at its acquire, and then no release', async () => {
  await recording(async (events) => {
    const redlock = new Redlock(servers.clients, { retryCount: 0 });
    const lock = await redlock.acquire(fresh('expires'), 200); // its signal is never read
    await eventually(async () => expect(events.filter((event) => event.channel === 'quorumlock:lost')).toHaveLength(1));
    expect(lock.remainingMs()).toBe(0);
    expect(events.find((event) => event.channel === 'quorumlock:lost')!.message).toEqual({
      lockId: lock.id,
      resources: lock.resources,
      reason: 'expired',
      lostBecause: 'expired',
    });
    await lock.release();
    expect(events.filter((event) => event.lockId === lock.id).map((event) => event.channel)).toEqual(['quorumlock:acquire:end', 'quorumlock:lost']);
  });
});

it('arms no expiry timer for a lock made while nobody listened on lost: the expiry shows once its signal is read', async () => {
  const redlock = new Redlock(servers.clients, { retryCount: 0 });
  expect(channels.lost.hasSubscribers).toBe(false);
  const lock = await redlock.acquire(fresh('unobserved'), 100);
  await recording(async (events) => {
    await eventually(async () => expect(lock.remainingMs()).toBe(0));
    // Had a timer been armed, it would have fired by now (it is due at the deadline just passed)
    // and published here; a slow machine can only make this pass late, never fail it.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events).toEqual([]);
    expect(lock.signal.aborted).toBe(true); // reading it finds the expiry at once
    expect(events.map((event) => event.channel)).toEqual(['quorumlock:lost']);
  });
  await lock.release();
});

it("publishes a member's timeout as its vote, as it publishes an answer", async () => {
  const votes: Record<string, unknown>[] = [];
  const onVote = (message: unknown) => votes.push(message as Record<string, unknown>);
  subscribe('quorumlock:vote', onVote);
  const redlock = new Redlock(servers.clients, { retryCount: 0, nodeTimeout: 100 });
  await redlock.acquire(fresh('warm'), 1_000).then((lock) => lock.release()); // epochs read, connections ready
  await Promise.all(servers.masters.slice(1).map((master) => master.pause()));
  try {
    // Two of three silent: the round is decided at their deadline, both counted 'timeout'.
    await expect(redlock.acquire(fresh('timed-out'), 1_000)).rejects.toMatchObject({ outcome: 'unavailable' });
    const acquireVotes = votes.filter((vote) => vote.operation === 'acquire');
    for (const member of redlock.members.slice(1)) expect(acquireVotes).toContainEqual(expect.objectContaining({ member: member.id, vote: 'timeout' }));
  } finally {
    unsubscribe('quorumlock:vote', onVote);
    await Promise.all(servers.masters.slice(1).map((master) => master.resume()));
  }
});
