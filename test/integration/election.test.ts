/**
 * Leader election (src/election/, docs/elections.md) on five real masters. Each candidate is its
 * own Redlock on its own connections (another process, in effect). Times are compared on one
 * monotonic clock (performance.now()), shared by every candidate of this process: "the next
 * leader was elected after the old one's validity ended" is then a comparison of two readings,
 * not a timed assertion about how fast anything is.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeadershipLostError, LeaderUnknownError, Redlock, type Leadership, type LeaderInfo, type RedlockOptions } from '../../src/index.js';
import { electionResource } from '../../src/store/keys.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { eventually, fresh, sleep } from './util.js';

let servers: TestMasters;
const opened: Redlock[] = [];

beforeAll(async () => {
  servers = await startTestMasters(5);
});
afterEach(async () => {
  await servers.heal();
  await Promise.all(opened.splice(0).map((redlock) => redlock.quit()));
});
afterAll(() => servers?.close());

/** A candidate: a Redlock on its own clients, as another process would have. */
function candidate(options?: RedlockOptions): { redlock: Redlock; clients: Redis[] } {
  const clients = servers.connect();
  const redlock = new Redlock(clients, options);
  opened.push(redlock);
  return { redlock, clients };
}

/** Blocks the event loop for `ms`, as a GC pause or a synchronous handler does. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** When `leadership` ended, and how much validity it had left then. */
function endOf(leadership: Leadership): Promise<{ at: number; leftMs: number; why: string }> {
  return new Promise((resolve) => {
    const { signal } = leadership;
    const ended = () => resolve({ at: performance.now(), leftMs: leadership.lock.remainingMs(), why: (signal.reason as LeadershipLostError).why });
    if (signal.aborted) ended();
    else signal.addEventListener('abort', ended, { once: true });
  });
}

describe('redlock.election()', () => {
  it('refuses bad input with typed errors before any network call', () => {
    const { redlock } = candidate();
    const codeOf = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        return `${(error as { parameter?: string }).parameter}:${(error as { code?: string }).code}`;
      }
      return 'accepted';
    };
    expect(codeOf(() => redlock.election('', { ttl: 1000 }))).toBe('name:QUORUMLOCK_ERR_OUT_OF_RANGE');
    expect(codeOf(() => redlock.election(7 as unknown as string, { ttl: 1000 }))).toBe('name:QUORUMLOCK_ERR_INVALID_ARG_TYPE');
    expect(codeOf(() => redlock.election('a{b}', { ttl: 1000 }))).toBe('name:QUORUMLOCK_ERR_OUT_OF_RANGE');
    expect(codeOf(() => redlock.election('x', undefined as unknown as { ttl: number }))).toBe('options:QUORUMLOCK_ERR_INVALID_ARG_TYPE');
    expect(codeOf(() => redlock.election('x', { ttl: 200 }))).toBe('ttl:QUORUMLOCK_ERR_OUT_OF_RANGE');
    expect(codeOf(() => redlock.election('x', { ttl: 1000, id: '' }))).toBe('id:QUORUMLOCK_ERR_OUT_OF_RANGE');
    expect(codeOf(() => redlock.election('x', { ttl: 1000, pollInterval: 0 }))).toBe('pollInterval:QUORUMLOCK_ERR_OUT_OF_RANGE');
    expect(codeOf(() => redlock.election('x', { ttl: 1000, fencing: true } as never))).toBe('fencing:QUORUMLOCK_ERR_UNKNOWN_OPTION');
    const election = redlock.election('x', { ttl: 1000 });
    expect(election.pollInterval).toBe(250);
    return expect(election.campaign({ signal: 'no' } as never)).rejects.toMatchObject({ parameter: 'signal' });
  });

  it('one leader at a time among four campaigners, terms strictly increasing, each resign handing over to the next', async () => {
    const name = fresh('election-one');
    let current: string | undefined;
    const overlaps: string[] = [];
    const elected: { id: string; term: number }[] = [];
    await Promise.all(
      ['a', 'b', 'c', 'd'].map(async (id) => {
        const election = candidate().redlock.election(name, { ttl: 2000, id });
        const leadership = await election.campaign();
        if (current !== undefined) overlaps.push(`${id} elected while ${current} led`);
        current = id;
        elected.push({ id, term: leadership.term });
        await sleep(150);
        expect(leadership.leading).toBe(true);
        current = undefined;
        await leadership.resign();
        expect(leadership.signal.reason).toBeInstanceOf(LeadershipLostError);
        expect((leadership.signal.reason as LeadershipLostError).why).toBe('resigned');
      }),
    );
    expect(overlaps).toEqual([]);
    expect(elected.map(({ id }) => id).sort()).toEqual(['a', 'b', 'c', 'd']);
    const terms = elected.map(({ term }) => term);
    for (let i = 1; i < terms.length; i++) expect(terms[i]).toBeGreaterThan(terms[i - 1]!);
  });

  it('leader() names the leader by quorum, with its term and a remainingMs within the ttl; null when vacant', async () => {
    const name = fresh('election-leader');
    // What is read, not how fast: 500 ms per member (the most a 3 s ttl allows), not 50, so that a
    // busy suite's slow server is not read as "cannot tell".
    const patient = { nodeTimeout: 500 };
    const reader = candidate(patient).redlock.election(name, { ttl: 3000 });
    expect(await reader.leader()).toBeNull();
    const leadership = await candidate(patient).redlock.election(name, { ttl: 3000, id: 'host-a:1' }).campaign();
    const leader = await reader.leader();
    expect(leader).toMatchObject({ id: 'host-a:1', term: leadership.term });
    expect(leader!.remainingMs).toBeGreaterThan(0);
    expect(leader!.remainingMs).toBeLessThanOrEqual(3000);
    // Kept extended past its first ttl: still named, by a record re-written after each extension.
    await sleep(3500);
    expect(await reader.leader()).toMatchObject({ id: 'host-a:1', term: leadership.term });
    await leadership.resign();
    // resign() returns once a quorum let go; the other members run the release when it reaches
    // them (the reader's own connections do not wait for it). Until then a reader may hear one
    // still holding the key: "cannot tell" (LeaderUnknownError). It must never name the old
    // leader, and it says vacant once every member has run the release.
    const named: unknown[] = [];
    await eventually(async () => {
      const now = await reader.leader();
      if (now !== null) named.push(now);
      expect(now).toBeNull();
    });
    expect(named).toEqual([]);
  });

  it('leader() cannot tell with three of five members paused: LeaderUnknownError, not null', async () => {
    const name = fresh('election-unknown');
    const reader = candidate().redlock.election(name, { ttl: 3000 });
    await Promise.all(servers.masters.slice(0, 3).map((master) => master.pause()));
    await expect(reader.leader()).rejects.toBeInstanceOf(LeaderUnknownError);
  });

  it("the leader record and leader() go out in rounds ('announce', 'read' votes); a member silent at the deadline is unheard", async () => {
    const name = fresh('election-rounds');
    const votes: { operation: string; vote: string }[] = [];
    const onVote = (message: unknown) => votes.push(message as { operation: string; vote: string });
    subscribe('quorumlock:vote', onVote);
    try {
      const leadership = await candidate().redlock.election(name, { ttl: 3000, id: 'host-r:1' }).campaign();
      expect(votes.filter((vote) => vote.operation === 'announce').map((vote) => vote.vote)).toEqual(['done', 'done', 'done', 'done', 'done']);
      const reader = candidate().redlock.election(name, { ttl: 3000 });
      // Its connections made and its members read first: on a busy machine the first calls of
      // new connections can miss the 50 ms deadline on every member (so can this one: tried
      // until it answers).
      await eventually(async () => expect(await reader.leader()).toMatchObject({ id: 'host-r:1' }));
      await servers.masters[0]!.pause();
      votes.length = 0;
      const started = performance.now();
      expect(await reader.leader()).toMatchObject({ id: 'host-r:1', term: leadership.term });
      expect(performance.now() - started).toBeLessThan(1_000);
      // The four answers, and the paused member's timeout at the round's deadline.
      expect(votes.filter((vote) => vote.operation === 'read').map((vote) => vote.vote)).toEqual(['done', 'done', 'done', 'done', 'timeout']);
    } finally {
      unsubscribe('quorumlock:vote', onVote);
    }
  });

  it('leader() does not answer null while a leader leads on a member restarted empty (its absence inside its quarantine is no evidence)', async () => {
    // Issue 21, defect 5, on three of the masters (quorum 2): a leader elected on m1 + m2; m2
    // restarts empty; an observer that cannot reach m1 hears m0 absent, m2 absent (restarted,
    // inside its quarantine) and m1 silent. Each Redlock is on its own clients; "cannot reach" is
    // a client that is closed, so the leader never wrote to m0 and the observer never hears m1.
    const name = fresh('election-restarted');
    const key = electionResource(name);
    const [m0, m1, m2] = servers.masters;
    const three = (unreachable: number) => {
      const clients = servers.connect().slice(0, 3);
      clients[unreachable]!.disconnect();
      const redlock = new Redlock(clients);
      opened.push(redlock);
      return { redlock, clients };
    };
    const leadership = await three(0).redlock.election(name, { ttl: 10_000, id: 'leader' }).campaign();
    expect(await servers.valuesOf(key).then((values) => values.slice(0, 3))).toEqual([null, leadership.lock.value, leadership.lock.value]);

    await m2!.restart();
    const observer = three(1);
    await Promise.all([observer.clients[0]!.ping(), observer.clients[2]!.ping()]); // both reachable ones connected
    const unknown = await observer.redlock
      .election(name, { ttl: 10_000 })
      .leader()
      .then(
        (answer) => answer,
        (error: unknown) => error,
      );
    // The leader still leads: its lock rests on m1, and on m2's quarantine keeping everyone else out.
    expect(leadership.leading).toBe(true);
    expect(await servers.clients[1]!.get(key)).toBe(leadership.lock.value);
    expect(unknown).toBeInstanceOf(LeaderUnknownError);
    const { votes, why } = unknown as LeaderUnknownError;
    expect(why).toBe('unavailable');
    expect(votes.map((vote) => vote.member)).toEqual([m0, m1, m2].map((master) => expect.stringContaining(`:${master!.port}`)));
    expect(votes[0]).toMatchObject({ reading: { leader: undefined, pttl: -2, quarantinedForMs: 0 } });
    expect(votes[1]!.error).toBeDefined();
    expect(votes[2]).toMatchObject({ reading: { leader: undefined, pttl: -2 } });
    expect(votes[2]!.reading!.quarantinedForMs).toBeGreaterThan(50_000); // of the default maxLockTtl, 60 s
    await leadership.resign();
  });

  it('observe() reports each change: the first leader, the next after a resign, then vacancy', async () => {
    const name = fresh('election-observe');
    const observer = candidate().redlock.election(name, { ttl: 2000, pollInterval: 25 });
    const stop = new AbortController();
    const seen: (LeaderInfo | null)[] = [];
    const watching = (async () => {
      for await (const leader of observer.observe({ signal: stop.signal })) seen.push(leader);
    })();
    await sleep(200);
    const a = await candidate().redlock.election(name, { ttl: 2000, id: 'a' }).campaign();
    const bCampaign = candidate().redlock.election(name, { ttl: 2000, id: 'b' }).campaign();
    await sleep(500);
    await a.resign();
    const b = await bCampaign;
    await sleep(500);
    await b.resign();
    await sleep(500);
    stop.abort();
    await watching;
    expect(seen[0]).toBeNull();
    const leaders = seen.filter((leader): leader is LeaderInfo => leader !== null).map(({ id, term }) => `${id}:${term}`);
    expect(leaders).toEqual([`a:${a.term}`, `b:${b.term}`]);
    expect(seen[seen.length - 1]).toBeNull();
    // Each change once: no two consecutive reports the same.
    for (let i = 1; i < seen.length; i++) expect(`${seen[i]?.term}`).not.toBe(`${seen[i - 1]?.term}`);
  });

  it('a leader that is gone (its connections closed) is replaced only after its validity ended, never before', async () => {
    const name = fresh('election-killed');
    const old = candidate();
    const leadership = await old.redlock.election(name, { ttl: 2000, id: 'old' }).campaign();
    const ended = endOf(leadership);
    const next = candidate().redlock.election(name, { ttl: 2000, id: 'next' }).campaign();
    await sleep(300);
    // The process is gone as far as the members can tell: nothing extends or releases any more.
    const deadline = performance.now() + leadership.lock.remainingMs();
    for (const client of old.clients) client.disconnect();
    const successor = await next;
    const electedAt = performance.now();
    expect(electedAt).toBeGreaterThanOrEqual(deadline);
    expect(successor.term).toBeGreaterThan(leadership.term);
    // The old leader (had it been running without its members) stopped while still valid.
    const end = await ended;
    expect(end.why).toBe('failing');
    expect(end.at).toBeLessThan(deadline);
    expect(end.leftMs).toBeGreaterThan(0);
    await successor.resign();
  });

  it("a campaign whose members' clients were quit rejects ('clients closed') rather than retrying without a pause, and keeps the event loop turning", async () => {
    const name = fresh('election-quit');
    const leader = await candidate().redlock.election(name, { ttl: 2000, id: 'leader' }).campaign();
    const standby = candidate();
    const campaign = standby.redlock.election(name, { ttl: 2000, id: 'standby' }).campaign();
    await sleep(100); // waiting in line
    let ticks = 0;
    const ticking = setInterval(() => ticks++, 10);
    try {
      await Promise.all(standby.clients.map((client) => client.quit()));
      await expect(campaign).rejects.toMatchObject({ stoppedBecause: 'clients closed' });
      await sleep(50);
      expect(ticks).toBeGreaterThan(0); // timers ran: no spin
    } finally {
      clearInterval(ticking);
    }
    await leader.resign();
  });

  it('three of five members paused past the validity: the leader stops before its validity ends, and the next leader comes after it', async () => {
    const name = fresh('election-paused');
    const leadership = await candidate().redlock.election(name, { ttl: 2000, id: 'old' }).campaign();
    const ended = endOf(leadership);
    const next = candidate().redlock.election(name, { ttl: 2000, id: 'next' }).campaign();
    await sleep(100);
    const deadline = performance.now() + leadership.lock.remainingMs();
    await Promise.all(servers.masters.slice(0, 3).map((master) => master.pause()));
    const end = await ended;
    expect(end.why).toBe('failing');
    expect(end.at).toBeLessThan(deadline);
    expect(end.leftMs).toBeGreaterThan(0);
    await sleep(Math.max(0, deadline - performance.now()) + 500);
    await servers.resumeAll();
    const successor = await next;
    expect(performance.now()).toBeGreaterThan(deadline);
    expect(successor.term).toBeGreaterThan(leadership.term);
    await successor.resign();
  });

  it('two of five members paused (a minority partitioned away): the leader keeps leading, nobody else is elected', async () => {
    const name = fresh('election-minority');
    const leadership = await candidate().redlock.election(name, { ttl: 1500, id: 'old' }).campaign();
    const waiting = new AbortController();
    const next = candidate().redlock.election(name, { ttl: 1500, id: 'next' }).campaign({ signal: waiting.signal });
    await Promise.all(servers.masters.slice(0, 2).map((master) => master.pause()));
    await sleep(4000); // more than two ttls: several extensions, each on the three reachable members
    expect(leadership.leading).toBe(true);
    waiting.abort(new Error('enough'));
    await expect(next).rejects.toThrow('enough');
    await servers.resumeAll();
    await leadership.resign();
  });

  it('a leader whose event loop stalls past its validity knows it (signal aborted) before anyone else is elected', async () => {
    const name = fresh('election-stall');
    const leadership = await candidate().redlock.election(name, { ttl: 1000, id: 'old' }).campaign();
    const next = candidate().redlock.election(name, { ttl: 1000, id: 'next' }).campaign();
    await sleep(50);
    stall(1500);
    const successor = await next;
    expect(leadership.signal.aborted).toBe(true);
    expect(leadership.leading).toBe(false);
    expect(leadership.remainingMs()).toBe(0);
    expect(successor.term).toBeGreaterThan(leadership.term);
    await successor.resign();
  });
});
