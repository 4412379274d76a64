/**
 * quarantine: 'from-restart': the restart quarantine counts from the restart, not from the first
 * lock after it, so a member restarted and left idle (no client connected, as at night between
 * cron runs) is ready maxLockTtl after its restart, whoever connects first (src/lua/_epoch.lua,
 * restartedAt). Where the server cannot prove that no lock was granted since its start (another
 * application's script ran first), it counts from the first call. The default counts from the
 * first call always: the server cannot prove that no standby took over the member's address.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { EPOCH_KEY } from '../../src/store/keys.js';
import { processBackend } from '../harness/process.js';
import { cli } from '../cli/spawn.js';
import type { MasterSet } from '../harness/types.js';
import { appendOnly, client, trust } from './masters.js';
import { fresh, sleep } from './util.js';

const MAX_LOCK_TTL = 2_000;
let set: MasterSet;
let directory: string;

beforeAll(async () => {
  // With persistence (AOF, fsync always): each restart brings back the old process's lock keys
  // and epoch hash, the harder case (the hash names another run id).
  directory = await mkdtemp(join(tmpdir(), 'quorumlock-idle-'));
  set = await processBackend.start(3, {
    args: appendOnly(directory),
  });
});
afterAll(async () => {
  await set?.stop();
  await rm(directory, { recursive: true, force: true });
});

/** A cron run: its own clients, one lock, then gone. */
async function cronRun(resource: string, quarantine: true | 'from-restart' = 'from-restart'): Promise<Awaited<ReturnType<Redlock['acquire']>>['votes']> {
  const clients = set.masters.map(client);
  // A few retries, as a cron job has: a new process's first calls also connect and load the
  // scripts, which on a busy machine can outlast one attempt's 50 ms per member.
  const redlock = new Redlock(clients, { retryCount: 3, maxLockTtl: MAX_LOCK_TTL, quarantine });
  try {
    const lock = await redlock.acquire(resource, MAX_LOCK_TTL);
    await lock.release();
    return lock.votes;
  } finally {
    await redlock.quit();
    for (const c of clients) c.disconnect();
  }
}

it('a rolling restart with no lock in between: the next run locks at once, except where another script ran first', async () => {
  const first = set.masters.map(client);
  await trust(first);
  for (const c of first) c.disconnect();
  // A lock held across the first restart: its key comes back from disk with its ttl.
  const held = fresh('held-across');
  const holderClients = set.masters.map(client);
  // A few retries, as cronRun has: new connections' first calls (connect, epoch read, scripts)
  // can outlast one attempt's 50 ms per member on a busy machine (seen with one core kept busy).
  const holder = new Redlock(holderClients, { retryCount: 3, maxLockTtl: MAX_LOCK_TTL });
  await holder.acquire(held, MAX_LOCK_TTL);
  await holder.quit();
  // The process ends: a client still connected would reconnect at each restart and begin the
  // epoch there and then (its first call after a new connection reads the epoch).
  for (const c of holderClients) c.disconnect();

  // One member at a time, maxLockTtl apart, nobody of ours connected. Before member 2's first
  // call of ours, another application runs a script there: it might have written anything.
  const restartedAt: number[] = [];
  for (const [index, master] of set.masters.entries()) {
    await master.restart();
    restartedAt.push(Date.now());
    if (index === 2) {
      const other = client(master);
      await other.eval("return redis.call('SET', KEYS[1], 'theirs')", 1, 'another-app');
      other.disconnect();
    }
    await sleep(MAX_LOCK_TTL + 1_200); // + the second uptime_in_seconds may be short by, and a margin
  }

  // A client that counts from the first call (the default) waits out the quarantine everywhere,
  // from this first call: the epochs begin now.
  const cautious = await cronRun(fresh('default-after-rolling-restart'), true).then(
    () => 'locked',
    (error: { outcome?: string }) => error.outcome,
  );
  expect(cautious).toBe('quarantined');

  // A fresh process counting from the restart: members 0 and 1 count at once; member 2, where
  // another script ran first, is quarantined from the first call.
  const votes = await cronRun(fresh('after-rolling-restart'));
  // (Member 2's answer may come after the decision: then it shows as pending, never as a yes.)
  expect(votes.slice(0, 2).map((vote) => vote.vote)).toEqual(['locked', 'locked']);
  expect(['quarantined', 'pending']).toContain(votes[2]!.vote);

  // What each member recorded: members 0 and 1 their process start (to the second, never before
  // it), beside the epoch's own start; member 2 no restart it could prove.
  const readers = set.masters.map(client);
  try {
    const epochs = await Promise.all(readers.map((c) => c.hgetall(EPOCH_KEY)));
    for (const index of [0, 1]) {
      const { since, restart } = epochs[index]!;
      expect(Number(restart)).toBeLessThan(Number(since));
      // Its process start, which came shortly before restart() returned.
      expect(Number(restart)).toBeGreaterThanOrEqual(restartedAt[index]! - 3_000);
      expect(Number(restart)).toBeLessThanOrEqual(restartedAt[index]! + 1_000);
    }
    expect(epochs[2]!.restart).toBeUndefined();
  } finally {
    for (const c of readers) c.disconnect();
  }

  // `quorumlock members --quarantine-from-restart` reports the quarantine such a client sees:
  // members 0 and 1 past it, their restarts over maxLockTtl ago (test/unit/readings.test.ts
  // checks the count against the default's).
  const members = set.masters.map((master) => `redis://${master.host}:${master.port}`).join(',');
  const probed = async (...flags: string[]) => {
    const report = JSON.parse((await cli(['members', '--json', '--members', members, '--max-lock-ttl', `${MAX_LOCK_TTL}ms`, ...flags]).done).stdout) as {
      members: { epoch?: { state: string; leftMs?: number } }[];
    };
    return report.members.map((member) => member.epoch);
  };
  const fromRestart = await probed('--quarantine-from-restart');
  expect(fromRestart.slice(0, 2).map((epoch) => epoch?.state)).toEqual(['trusted', 'trusted']);
});

it('counted from the restart, a member restarted just before a lock is still quarantined', async () => {
  await set.masters[0]!.restart();
  await set.masters[1]!.restart();
  // At once: two of three members are in their quarantine, so no majority.
  const clients = set.masters.map(client);
  await Promise.all(clients.map((c) => c.ping()));
  const redlock = new Redlock(clients, { retryCount: 3, maxLockTtl: MAX_LOCK_TTL, quarantine: 'from-restart' });
  try {
    const error = await redlock.acquire(fresh('right-after'), 1_000).then(
      () => undefined,
      (e: { outcome?: string; attempts?: { votes: { vote: string }[] }[] }) => e,
    );
    expect(error?.outcome).toBe('quarantined');
    // Neither restarted member said a yes that counted (an answer after the decision shows as pending).
    for (const vote of error?.attempts?.at(-1)?.votes.slice(0, 2) ?? []) expect(['quarantined', 'pending']).toContain(vote.vote);
    expect(
      error?.attempts
        ?.at(-1)
        ?.votes.slice(0, 2)
        .some((vote) => vote.vote === 'quarantined'),
    ).toBe(true);
  } finally {
    await redlock.quit();
    for (const c of clients) c.disconnect();
  }
});
