/**
 * The log lines, read from a real pino logger on three real masters: every line about a lock names
 * it (`lockId`, as docs/api.md and docs/operations.md promise), each lock has exactly one end line
 * (as the events have one end: src/diagnostics.ts), and a member in its restart quarantine is
 * logged at info once per epoch, not on every vote.
 */
import Redis from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock, type LockAcquireError } from '../../src/index.js';
import { startTestMasters, type TestMasters } from './masters.js';
import { errorOf, eventually, fresh, sleep } from './util.js';

interface Line {
  level: number;
  msg: string;
  lockId?: string;
  resources?: string[];
  member?: string;
  epoch?: string;
}

/** A pino logger at `level` writing parsed lines into `lines`. */
function capturing(level: string): { logger: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as Line) });
  return { logger, lines };
}

/** The lines that end a lock's holding: a release that ends it, or its loss. */
const END = /^lock (released|lost|release not confirmed)/;

let servers: TestMasters;

beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

describe('log lines about locks', () => {
  it('carry lockId (and resources) on every line at debug, and exactly one end line per lock', async () => {
    const { logger, lines } = capturing('debug');
    const redlock = new Redlock(servers.clients, { logger, retryCount: 1, retryDelay: 20 });
    const ids: string[] = [];

    // Released twice: one end.
    const twice = await redlock.acquire(fresh('log-twice'), 10_000);
    await twice.extend(10_000);
    await twice.release();
    await twice.release();
    ids.push(twice.id);

    // Lost at its expiry (its signal watched), then released: the loss is its end.
    const lost = await redlock.acquire(fresh('log-lost'), 1_000);
    const signal = lost.signal;
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    await lost.release();
    ids.push(lost.id);

    // Expired with nobody watching, then released: that release is its end, and says so.
    const overdue = await redlock.acquire(fresh('log-overdue'), 1_000);
    await eventually(async () => expect(overdue.remainingMs()).toBe(0), 10_000);
    await overdue.release();
    ids.push(overdue.id);

    // using(): acquired, then released at the end of the work.
    let usedId = '';
    await redlock.using(fresh('log-using'), 10_000, async (_signal, lock) => {
      usedId = lock.id;
      await sleep(1);
    });
    ids.push(usedId);

    // An acquire that fails (held elsewhere): its lines name it too, though no Lock was made.
    const held = await redlock.acquire(fresh('log-held'), 10_000);
    const contender = new Redlock(servers.connect(), { logger, retryCount: 1, retryDelay: 20 });
    const refused = (await errorOf(contender.acquire(held.resources, 10_000, { waitTimeout: 10_000 }))) as LockAcquireError;
    expect(refused.outcome).toBe('taken');
    await contender.quit(); // the subscriber connections its wait opened
    await held.release();
    ids.push(held.id);

    const aboutLocks = lines.filter((line) => line.msg.startsWith('lock '));
    expect(aboutLocks.length).toBeGreaterThanOrEqual(12);
    for (const line of aboutLocks) {
      expect(line.lockId, line.msg).toMatch(/\S/);
      expect(line.resources, line.msg).toHaveLength(1);
    }
    // The refused acquire's lines: attempts failed, then not acquired, all under one lockId no lock has.
    const refusedLines = aboutLocks.filter((line) => !ids.includes(line.lockId!));
    expect(refusedLines.map((line) => line.msg)).toEqual(['lock attempt failed', 'lock attempt failed', 'lock not acquired']);
    expect(new Set(refusedLines.map((line) => line.lockId)).size).toBe(1);

    for (const id of ids) {
      const mine = aboutLocks.filter((line) => line.lockId === id);
      expect(mine[0]?.msg, id).toBe('lock acquired');
      expect(
        mine.filter((line) => END.test(line.msg)),
        id,
      ).toHaveLength(1);
    }
    const endOf = (id: string) => aboutLocks.find((line) => line.lockId === id && END.test(line.msg))!;
    expect(endOf(twice.id)).toMatchObject({ msg: 'lock released', level: 20 });
    expect(endOf(lost.id)).toMatchObject({ msg: 'lock lost', level: 40 });
    expect(endOf(overdue.id)).toMatchObject({ level: 40 });
    expect(endOf(overdue.id).msg).toMatch(/^lock released after its validity had run out/);
    expect(endOf(usedId)).toMatchObject({ msg: 'lock released' });
    expect(aboutLocks.filter((line) => line.lockId === twice.id).map((line) => line.msg)).toEqual(['lock acquired', 'lock extended', 'lock released']);
  });
});

describe('the restart quarantine in the log', () => {
  it('is logged at info once per member and epoch, however many votes it answers', async () => {
    const { logger, lines } = capturing('info');
    // Two of three restart empty: their data is younger than maxLockTtl (60 s), so every acquire
    // fails 'quarantined' for the test's whole length.
    for (const index of [0, 1]) await servers.masters[index]!.restart();
    try {
      await Promise.all(servers.clients.map((client) => client.ping()));
      const redlock = new Redlock(servers.clients, { logger, retryCount: 0 });
      const restarted = redlock.members.slice(0, 2).map((member) => member.id);
      const quarantinedVotes = new Map(restarted.map((id) => [id, 0]));
      // Until each restarted member has answered 'quarantined' at least twice (an answer after the
      // round was decided shows as 'pending', so the count is what they said, not what was asked).
      await eventually(async () => {
        const error = await errorOf(redlock.acquire(fresh('log-quarantine'), 1_000));
        expect(error.outcome).toBe('quarantined');
        for (const vote of error.attempts[0]!.votes)
          if (vote.vote === 'quarantined') quarantinedVotes.set(vote.member, (quarantinedVotes.get(vote.member) ?? 0) + 1);
        for (const id of restarted) expect(quarantinedVotes.get(id)).toBeGreaterThanOrEqual(2);
      }, 20_000);
      // Every answer sent has been read (a PING comes back behind them on the same connection).
      await Promise.all(servers.clients.map((client) => client.ping()));
      const quarantine = lines.filter((line) => line.msg.startsWith('member is in its restart quarantine'));
      expect(quarantine.map((line) => line.member).sort()).toEqual([...restarted].sort());
      for (const line of quarantine) {
        expect(line.level).toBe(30);
        expect(line.epoch).toMatch(/\S/);
      }
    } finally {
      await servers.heal();
    }
  });
});

describe('a logger that throws', () => {
  /**
   * The library logs in the middle of its bookkeeping: a member found to be another's server is
   * logged at error as it is marked. A logger whose every method throws (a closed destination)
   * stopped that check part-way: the duplicate was never marked (it kept counting wherever a
   * round did not catch it itself), and what the logger threw escaped as an uncaught error from
   * the server watch's listener, which ends a process that has no handler for it. Every call to
   * the user's logger is guarded now (src/options/check.ts).
   */
  it('changes nothing: the duplicate is marked, and locks are taken, extended and released', async () => {
    const calls: string[] = [];
    const throwing = (level: string) => () => {
      calls.push(level);
      throw new Error(`the ${level} destination is closed`);
    };
    const logger = { debug: throwing('debug'), info: throwing('info'), warn: throwing('warn'), error: throwing('error'), isLevelEnabled: () => true };
    const master = servers.masters[0]!;
    const alias = new Redis({ host: 'localhost', family: 4, port: master.port }); // the same server as clients[0]
    alias.on('error', () => {});
    try {
      await alias.ping();
      const redlock = new Redlock([...servers.clients, alias], { logger, retryCount: 0 });
      await eventually(async () => expect(redlock.members[3]!.notCounting).toMatch(/^the same server as /), 10_000);
      expect(calls).toContain('error');
      const lock = await redlock.acquire(fresh('log-throwing'), 10_000);
      expect(calls).toContain('debug'); // 'lock acquired' was attempted
      await lock.extend(10_000);
      await lock.release();
      expect(await servers.valuesOf(lock.resources[0]!)).toEqual([null, null, null]);
    } finally {
      alias.disconnect();
    }
  });
});
