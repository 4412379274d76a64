/**
 * The quorumlock CLI as an operator meets it (issue 14): why a lock was not had, member states in
 * words, cron flags, stopping the command by the lock's deadline, partial status reads, and trust's
 * confirmation; a child process against three real redis-server masters.
 */
import { describe, expect, it } from 'vitest';
import { describeError, memberStates, waitReason } from '../../src/cli/member-state.js';
import { Redlock } from '../../src/index.js';
import type { TestMasters } from '../integration/masters.js';
import { sleep } from '../integration/util.js';
import { cli, cliOnTerminal, closedPorts, events, nodeCommand, hold, runCli, withMasters } from './spawn.js';

let t: TestMasters;
let members: string;
withMasters(3, (masters, urls) => {
  t = masters;
  members = urls;
});

describe('run: when the lock is not had', () => {
  it('exits 73 saying the lock is held by another owner, suggesting --wait, and naming each member; --json carries outcome, reason and member states', async () => {
    const holder = await hold(members, 'busy');
    const plain = await cli(['run', '--members', members, '--resource', 'busy', '--ttl', '5s', ...nodeCommand('console.log("ran")')]).done;
    expect(plain.code).toBe(73);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toContain('could not lock "busy": it is held by another owner. To wait in line for it instead, add --wait <duration>');
    // Two 'taken' decide the round; the third may come after it ("not waited for").
    const named = t.masters.filter((master) => plain.stderr.includes(`${master.host}:${master.port}/0: connected, held by another owner`));
    expect(named.length).toBeGreaterThanOrEqual(2);

    const json = await cli(['run', '--members', members, '--resource', 'busy', '--ttl', '5s', '--json', ...nodeCommand('console.log("ran")')]).done;
    expect(json.code).toBe(73);
    const [failed, ...more] = events(json.stderr);
    expect(more).toEqual([]);
    expect(failed).toMatchObject({ event: 'failed', resource: 'busy', outcome: 'taken', exitCode: 73, source: 'quorumlock' });
    expect(failed!.reason).toMatch(/held by another owner/);
    const states = failed!.members as { member: string; vote: string; state: string }[];
    expect(states.map((state) => state.member)).toEqual(t.masters.map((master) => `${master.host}:${master.port}/0`));
    expect(states.filter((state) => state.vote === 'taken' && state.state.startsWith('connected, held by another owner')).length).toBeGreaterThanOrEqual(2);
    holder.child.kill('SIGTERM');
    await holder.done;
  });

  it('names the cause and the host: connection refused for members nobody listens on, no ioredis retry text', async () => {
    const [p1, p2, p3] = closedPorts(3);
    const allDown = await cli([
      'run',
      '--members',
      `redis://127.0.0.1:${p1},redis://127.0.0.1:${p2},redis://127.0.0.1:${p3}`,
      '--resource',
      'down',
      '--ttl',
      '2s',
      ...nodeCommand('console.log("ran")'),
    ]).done;
    expect(allDown.code).toBe(69);
    expect(allDown.stdout).toBe('');
    expect(allDown.stderr).toContain('could not lock "down": too few members answered for a quorum (2 of 3 needed');
    for (const port of [p1, p2, p3]) expect(allDown.stderr).toContain(`127.0.0.1:${port}/0: connection refused (ECONNREFUSED)`);
    expect(allDown.stderr).not.toMatch(/timed out/);

    // Two down, one up: the live member is named as it is, and ioredis' retry text stays out.
    const live = t.masters[0]!;
    const twoDown = await cli([
      'run',
      '--members',
      `redis://127.0.0.1:${p1},redis://${live.host}:${live.port},redis://127.0.0.1:${p2}`,
      '--resource',
      'two-down',
      '--ttl',
      '2s',
      '--json',
      ...nodeCommand('console.log("ran")'),
    ]).done;
    expect(twoDown.code).toBe(69);
    expect(twoDown.stderr).not.toMatch(/max retries/i);
    const [failed] = events(twoDown.stderr);
    expect(failed).toMatchObject({ event: 'failed', outcome: 'unavailable', exitCode: 69, source: 'quorumlock' });
    const states = failed!.members as { member: string; state: string; code?: string }[];
    expect(states[0]).toMatchObject({ member: `127.0.0.1:${p1}/0`, state: 'connection refused (ECONNREFUSED)', code: 'ECONNREFUSED' });
    // It locked, or was not waited for: the two refused members may decide the round first.
    expect(states[1]).toMatchObject({ member: `${live.host}:${live.port}/0`, state: expect.stringMatching(/^connected, (locked|not waited for)/) });
    expect(states[2]).toMatchObject({ member: `127.0.0.1:${p2}/0`, code: 'ECONNREFUSED' });
    expect(await t.valuesOf('two-down')).toEqual([null, null, null]);
  });

  it('names paused members as connected but not answering', async () => {
    await Promise.all([t.masters[0]!.pause(), t.masters[1]!.pause()]);
    const { code, stderr } = await cli(['run', '--members', members, '--resource', 'paused', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(code).toBe(69);
    for (const master of t.masters.slice(0, 2))
      expect(stderr).toMatch(new RegExp(`${master.host}:${master.port}/0: (TCP )?connected, not answering \\(timed out after `));
    // The live one locked, or was not waited for: the two silent ones may decide the round first.
    expect(stderr).toMatch(new RegExp(`${t.masters[2]!.host}:${t.masters[2]!.port}/0: connected, (locked|not waited for)`));
  });

  it('on a terminal, the live line says why it waits (held by another owner)', async () => {
    const holder = await hold(members, 'live-line');
    const waiter = await cliOnTerminal([
      'run',
      '--members',
      members,
      '--resource',
      'live-line',
      '--ttl',
      '5s',
      '--wait',
      '1500ms',
      ...nodeCommand('console.log("ran")'),
    ]).done;
    expect(waiter.code).toBe(73);
    expect(waiter.stdout).toMatch(/waiting for live-line… \d+\.\d s \(held by another owner\)/);
    expect(waiter.stdout).toContain('was not freed within --wait 1.5 s');
    holder.child.kill('SIGTERM');
    await holder.done;
  });
});

describe('run: cron', () => {
  it('--skip-if-locked exits 0 silently when held; --at-least keeps the lock to the end of its window, then the next run runs', async () => {
    const resource = 'cron-window';
    const ran = nodeCommand('console.log("ran")');
    // A fast job: done in well under its 8 s window.
    const first = await cli(['run', '--members', members, '--resource', resource, '--ttl', '2s', '--at-least', '8s', '--json', ...ran]).done;
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('ran');
    const exit = events(first.stderr).find((event) => event.event === 'exit')!;
    expect(exit).toMatchObject({ exitCode: 0, source: 'command' });
    expect(exit.keptLockMs).toBeGreaterThan(2000);
    expect(exit.keptLockMs).toBeLessThanOrEqual(8000);
    // Not released: the keys expire at the end of the window (their PTTL is what is left of it).
    for (const client of t.clients) {
      const pttl = await client.pttl(resource);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(8000);
    }

    const [refused, skipped, skippedJson] = await Promise.all([
      cli(['run', '--members', members, '--resource', resource, '--ttl', '2s', ...ran]).done,
      cli(['run', '--members', members, '--resource', resource, '--ttl', '2s', '--skip-if-locked', ...ran]).done,
      cli(['run', '--members', members, '--resource', resource, '--ttl', '2s', '--skip-if-locked', '--json', ...ran]).done,
    ]);
    // All three ran inside the window: the first run's keys are still there.
    expect((await t.valuesOf(resource)).every((value) => value !== null)).toBe(true);
    expect(refused.code).toBe(73);
    expect(refused.stdout).toBe('');
    expect(skipped).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(skippedJson.code).toBe(0);
    expect(skippedJson.stdout).toBe('');
    expect(events(skippedJson.stderr)).toEqual([
      { event: 'skipped', resource, outcome: 'taken', reason: 'held by another owner', exitCode: 0, source: 'quorumlock' },
    ]);

    // After the window, the next run gets it.
    await expect.poll(() => t.valuesOf(resource), { timeout: 15_000, interval: 200 }).toEqual([null, null, null]);
    const after = await cli(['run', '--members', members, '--resource', resource, '--ttl', '2s', '--skip-if-locked', ...ran]).done;
    expect(after.code).toBe(0);
    expect(after.stdout).toContain('ran');
  });

  it('--skip-if-locked is no skip during an outage: one member holding a stale key, the others down, exits 69 and says so', async () => {
    await t.clients[0]!.set('outage-skip', 'a stale key of another owner', 'PX', 30_000);
    await Promise.all(t.masters.slice(1).map((master) => master.kill()));
    try {
      const { code, stderr } = await runCli(members, 'outage-skip', '2s', 'console.log("ran")', ['--skip-if-locked']).done;
      expect(code).toBe(69);
      expect(stderr).toMatch(/connection refused/);
      expect(stderr).not.toMatch(/held by another owner\. To wait/);
    } finally {
      await t.heal();
      await t.clients[0]!.del('outage-skip');
    }
  });

  it("says whose exit code it is: source in --json, and a note when the command's own code is one of quorumlock's", async () => {
    const json = await cli(['run', '--members', members, '--resource', 'own-73', '--ttl', '2s', '--json', ...nodeCommand('process.exit(73)')]).done;
    expect(json.code).toBe(73);
    expect(events(json.stderr).at(-1)).toMatchObject({ event: 'exit', exitCode: 73, source: 'command' });
    const plain = await cli(['run', '--members', members, '--resource', 'own-73', '--ttl', '2s', ...nodeCommand('process.exit(73)')]).done;
    expect(plain.code).toBe(73);
    expect(plain.stderr).toBe("quorumlock: note: the command itself exited 73, which is also one of quorumlock's own exit codes (quorumlock --help)\n");
    // An ordinary code passes without a word.
    const seven = await cli(['run', '--members', members, '--resource', 'own-7', '--ttl', '2s', ...nodeCommand('process.exit(7)')]).done;
    expect(seven).toMatchObject({ code: 7, stderr: '' });
  });
});

describe('run: stopping the command by the lock deadline', () => {
  it('extensions failing (members paused): a command that ignores SIGTERM is SIGKILLed by the deadline, not --grace later', async () => {
    const holder = runCli(
      members,
      'deadline',
      '1500ms',
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 30000)',
      ['--grace', '10s'],
    );
    await holder.waitFor('holding');
    const pausedAt = performance.now();
    await Promise.all(t.masters.map((master) => master.pause()));
    const { code, stdout, stderr } = await holder.done;
    const stoppedAfterMs = performance.now() - pausedAt;
    expect(code).toBe(75);
    // SIGTERM first, then SIGKILL: the lock's 1.5 s deadline, far from the 10 s --grace.
    expect(stdout).toContain('ignoring SIGTERM');
    expect(stderr).toMatch(/the lock on "deadline" could not be extended .* SIGTERM now, SIGKILL in \d+ ms, by the lock's deadline/);
    expect(stoppedAfterMs).toBeLessThan(5000);
  });

  it('with --grace 0 too: SIGKILLed by the deadline, not when the expiry timer fires after it', async () => {
    const holder = runCli(
      members,
      'deadline-no-grace',
      '1500ms',
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 30000)',
      ['--grace', '0', '--json'],
    );
    await holder.waitFor('holding');
    await Promise.all(t.masters.map((master) => master.pause()));
    const { code, stderr } = await holder.done;
    expect(code).toBe(75);
    // Stopped while validity was left (the stop window is 0: SIGTERM and SIGKILL together, just
    // before the deadline), not by the loss at the deadline.
    const lost = events(stderr).find((event) => event.event === 'lost');
    expect(lost).toMatchObject({ why: 'failing' });
    expect(lost!.leftMs).toBeGreaterThan(0);
  });

  it('one failed extension, then a successful retry: the command is not stopped', async () => {
    // ttl 3 s: extended when 2 s are left (1 s in); the stop window is 900 ms. Two of three members
    // paused across the first extension: it fails, and its retry (when 3/4 of the validity is left)
    // finds them back.
    const holder = runCli(members, 'one-failure', '3s', 'console.log("holding"); setTimeout(() => console.log("done"), 3500)', ['--json']);
    await holder.waitFor('holding');
    await sleep(800);
    await Promise.all(t.masters.slice(0, 2).map((master) => master.pause()));
    await sleep(500);
    await t.resumeAll();
    const { code, stdout, stderr } = await holder.done;
    expect(stdout).toContain('done');
    expect(code).toBe(0);
    expect(events(stderr).some((event) => event.event === 'lost')).toBe(false);
  });

  it('a lock lost outright: SIGTERM and SIGKILL at once, not the 10 s --grace later', async () => {
    const holder = runCli(
      members,
      'lost-outright',
      '1500ms',
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 30000)',
      ['--grace', '10s'],
    );
    await holder.waitFor('holding');
    const deletedAt = performance.now();
    // Gone on every member: the next extension (within 0.5 s) finds the lock lost.
    await Promise.all(t.clients.map((client) => client.del('lost-outright')));
    const { code, stderr } = await holder.done;
    expect(code).toBe(75);
    expect(stderr).toMatch(/lost the lock on "lost-outright": its keys are gone on too many members.*SIGTERM now, SIGKILL now/);
    // Found at the next extension (within the 1.5 s lock's validity): far from the 10 s --grace.
    expect(performance.now() - deletedAt).toBeLessThan(5000);
  });
});

describe('member states and wait reasons, in words', () => {
  it('names connection errors by their cause, and why a wait goes on', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(describeError(refused)).toEqual({ state: 'connection refused (ECONNREFUSED)', code: 'ECONNREFUSED' });
    expect(describeError(Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' })).state).toMatch(
      /TLS: certificate not trusted .*--tls-ca/,
    );
    expect(describeError(new Error('WRONGPASS invalid username-password pair'))).toMatchObject({
      code: 'WRONGPASS',
      state: 'authentication failed (WRONGPASS)',
    });
    expect(waitReason([{ vote: 'locked' }, { vote: 'taken' }, { vote: 'timeout' }])).toBe('held by another owner');
    expect(waitReason([{ vote: 'locked' }, { vote: 'quarantined' }, { vote: 'quarantined' }])).toBe('2 members quarantined');
    expect(waitReason([{ vote: 'locked' }, { vote: 'timeout' }, { vote: 'error' }])).toBe('2 members unreachable');
    expect(waitReason([])).toBeUndefined();
    const states = memberStates(
      ['a:1/0', 'b:2/0', 'c:3/0'],
      [
        { client: { status: 'reconnecting' }, lastError: refused },
        { client: { status: 'ready' }, lastError: undefined },
        { client: { status: 'ready' }, lastError: refused },
      ],
      [
        { member: 'b:2/0', vote: 'timeout', ms: 50 },
        {
          member: 'c:3/0',
          vote: 'error',
          ms: 1,
          error: new Error('Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.'),
        },
      ],
      50,
    );
    expect(states).toEqual([
      { member: 'a:1/0', state: 'connection refused (ECONNREFUSED)', code: 'ECONNREFUSED' },
      { member: 'b:2/0', vote: 'timeout', state: 'connected, not answering (timed out after 50 ms)' },
      { member: 'c:3/0', vote: 'error', state: 'connected, error: connection refused (ECONNREFUSED)', code: 'ECONNREFUSED' },
    ]);
  });
});

describe('status: partial reads', () => {
  it('with 2 of 3 members unreachable, says free on 1 of 3 and 2 unreachable, not free everywhere', async () => {
    const live = t.masters[1]!;
    const [down1, down2] = closedPorts(2);
    const partial = `redis://127.0.0.1:${down1},redis://${live.host}:${live.port},redis://127.0.0.1:${down2}`;
    const { code, stdout } = await cli(['status', 'partial', '--members', partial, '--timeout', '500ms']).done;
    expect(code).toBe(69);
    expect(stdout).toContain('partial: not held by a quorum (free on 1 of 3 members; 2 unreachable; quorum 2 of 3)');
    expect(stdout).not.toContain('everywhere');
    const json = JSON.parse((await cli(['status', 'partial', '--json', '--members', partial, '--timeout', '500ms']).done).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ held: false, freeOn: 1, unreachable: 2, heldOn: 0 });
  });

  it('a resource held by readers (shared locks) shows as held shared, not free', async () => {
    const redlock = new Redlock(t.clients);
    const readers = await Promise.all([redlock.acquire('read-only', 10_000, { shared: true }), redlock.acquire('read-only', 10_000, { shared: true })]);
    try {
      const { code, stdout } = await cli(['status', 'read-only', '--members', members]).done;
      expect(code).toBe(0);
      expect(stdout).toContain('read-only: held shared by readers on 3 of 3 members (quorum 2)');
      expect(stdout).toContain('shared (2)');
      const json = JSON.parse((await cli(['status', 'read-only', '--json', '--members', members]).done).stdout) as Record<string, unknown>;
      expect(json).toMatchObject({ held: false, sharedOn: 3, freeOn: 0 });
    } finally {
      await Promise.all(readers.map((reader) => reader.release()));
      await redlock.quit();
    }
    const { stdout } = await cli(['status', 'read-only', '--members', members]).done;
    expect(stdout).toContain('read-only: not held by a quorum (free on 3 of 3 members; quorum 2 of 3)');
  });
});

describe('trust: confirmation and the restarted-empty warning', () => {
  it('refuses without --yes, explaining what trust does, and writes nothing', async () => {
    await t.clients[0]!.del('quorumlock:epoch');
    const refused = await cli(['trust', '--members', members]).done;
    expect(refused.code).toBe(64);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/trust: refusing without --yes\. trust declares every member brand new/);
    expect(refused.stderr).toMatch(/one-time step for a brand-new deployment/);
    expect(await t.clients[0]!.exists('quorumlock:epoch')).toBe(0);
    await t.heal();
  });

  it('refuses (exit 64) when a member restarted empty while the others show fence tokens issued; --force trusts anyway, with the warning', async () => {
    const fenced = await cli(['run', '--fencing', '--members', members, '--resource', 'history', '--ttl', '2s', ...nodeCommand('0')]).done;
    expect(fenced.code).toBe(0);
    const restarted = t.masters[2]!;
    await restarted.restart();
    await t.clients[2]!.ping();
    const name = `${restarted.host}:${restarted.port}/0`;
    const refused = await cli(['trust', '--yes', '--json', '--members', members]).done;
    expect(refused.code).toBe(64);
    const parsed = JSON.parse(refused.stdout) as { refused: boolean; warning: string };
    expect(parsed.refused).toBe(true);
    expect(parsed.warning).toContain(`${name} has no epoch or a fresh one`);
    expect(parsed.warning).toContain('fence tokens issued');
    expect(refused.stderr).toContain('quorumlock: trust: refusing: these members held data before');
    expect(refused.stderr).toContain('run quorumlock trust --yes --force');
    // Nothing was written: the restarted member has no genesis epoch.
    expect(await t.clients[2]!.hget('quorumlock:epoch', 'genesis')).toBeNull();

    const forced = await cli(['trust', '--yes', '--force', '--json', '--members', members]).done;
    expect(forced.code).toBe(0);
    const trusted = JSON.parse(forced.stdout) as { warning: string; members: { trusted: boolean }[] };
    expect(trusted.members.map((member) => member.trusted)).toEqual([true, true, true]);
    expect(forced.stderr).toContain(`quorumlock: WARNING (trusting anyway: --force): ${trusted.warning}`);

    // A set that shows no such split needs no --force, and gets no warning.
    const quiet = await cli(['trust', '--yes', '--members', members]).done;
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    await t.heal();
  });
});

describe('never pointing at trust for members that restarted', () => {
  it('members and run say to wait, not to trust, when a member shows a past; they name trust only when none does', async () => {
    try {
      const fenced = await cli(['run', '--fencing', '--members', members, '--resource', 'restarted', '--ttl', '2s', ...nodeCommand('0')]).done;
      expect(fenced.code).toBe(0);
      // Two of three restarted empty; the third shows fence tokens issued.
      await Promise.all(t.masters.slice(1).map((master) => master.restart()));
      const run = await cli(['run', '--members', members, '--resource', 'restarted', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
      expect(run.code).toBe(69);
      expect(run.stderr).toContain('too few members count toward a quorum');
      expect(run.stderr).toContain('do not run quorumlock trust');
      expect(run.stderr).not.toContain('trust --yes');
      const health = await cli(['members', '--members', members]).done;
      expect(health.code).toBe(69);
      expect(health.stdout).toMatch(/note: locks fail until a quorum is past it\. Members show a past \(.*fence tokens issued.*\): the others restarted/);
      expect(health.stdout).not.toContain('trust --yes');
      expect(JSON.parse((await cli(['members', '--json', '--members', members]).done).stdout)).toMatchObject({ ok: false, trustAdvised: false });

      // Every member brand new (fresh servers, empty): trust is the step, and is named.
      await Promise.all(t.masters.map((master) => master.restart()));
      const fresh = await cli(['run', '--members', members, '--resource', 'restarted', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
      expect(fresh.code).toBe(69);
      expect(fresh.stderr).toContain('No member shows a past: if every one is brand new (it never held a lock), run quorumlock trust --yes once');
      const freshHealth = await cli(['members', '--members', members]).done;
      expect(freshHealth.stdout).toContain('run quorumlock trust --yes once');
    } finally {
      await t.heal();
    }
  });
});

describe('run: flock(1) parity', () => {
  it('-E / --conflict-exit-code sets the exit code of a held lock (and only of a held lock)', async () => {
    const holder = await hold(members, 'conflict-code');
    const short = await cli(['run', '--members', members, '--resource', 'conflict-code', '--ttl', '5s', '-E', '3', ...nodeCommand('console.log("ran")')]).done;
    expect(short.code).toBe(3);
    expect(short.stdout).toBe('');
    expect(short.stderr).toContain('could not lock "conflict-code": it is held by another owner');
    const json = await cli([
      'run',
      '--members',
      members,
      '--resource',
      'conflict-code',
      '--ttl',
      '5s',
      '--conflict-exit-code',
      '0',
      '--json',
      ...nodeCommand('0'),
    ]).done;
    expect(json.code).toBe(0);
    expect(events(json.stderr)).toEqual([expect.objectContaining({ event: 'failed', outcome: 'taken', exitCode: 0, source: 'quorumlock' })]);
    holder.child.kill('SIGTERM');
    await holder.done;
    // Members down is no conflict: still 69.
    const down = await cli([
      'run',
      '--members',
      `redis://127.0.0.1:${closedPorts(1)[0]}`,
      '--resource',
      'conflict-code',
      '--ttl',
      '2s',
      '-E',
      '3',
      ...nodeCommand('0'),
    ]).done;
    expect(down.code).toBe(69);
  });

  it('refuses an -E out of 0..255, or beside --skip-if-locked, with a stable code and before connecting to any member', async () => {
    // A member that counts every connection made to it.
    const { createServer } = await import('node:net');
    let connections = 0;
    const listener = createServer((socket) => (connections++, socket.destroy()));
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const member = `redis://127.0.0.1:${(listener.address() as { port: number }).port}`;
    try {
      for (const value of ['256', '-1', '2.5', 'x', '']) {
        const refused = await cli([
          'run',
          '--members',
          member,
          '--resource',
          'e-range',
          '--ttl',
          '2s',
          `--conflict-exit-code=${value}`,
          '--json',
          ...nodeCommand('0'),
        ]).done;
        expect(refused.code).toBe(64);
        expect(events(refused.stderr)).toEqual([
          expect.objectContaining({ event: 'failed', outcome: 'usage', code: 'QUORUMLOCK_ERR_CLI_OUT_OF_RANGE', flag: '--conflict-exit-code', exitCode: 64 }),
        ]);
      }
      const plain = await cli(['run', '--members', member, '--resource', 'e-range', '--ttl', '2s', '-E', '300', ...nodeCommand('0')]).done;
      expect(plain.code).toBe(64);
      expect(plain.stderr).toContain('run: --conflict-exit-code must be an exit code, an integer from 0 to 255, got "300"');
      const both = await cli(['run', '--members', member, '--resource', 'e-range', '--ttl', '2s', '-E', '3', '--skip-if-locked', '--json', ...nodeCommand('0')])
        .done;
      expect(both.code).toBe(64);
      expect(events(both.stderr)[0]).toMatchObject({ code: 'QUORUMLOCK_ERR_CLI_CONFLICTING_FLAGS' });
      expect(connections).toBe(0);
    } finally {
      listener.close();
    }
  });

  it('-s / --shared: shared holders run side by side; an exclusive run is refused while they hold it (with the conflict code)', async () => {
    const reader = runCli(members, 'shared-doc', '5s', 'console.log("reading"); setTimeout(() => {}, 30000)', ['-s', '--json']);
    await reader.waitFor('reading');
    expect(events(reader.stderr.slice(0, reader.stderr.lastIndexOf('\n') + 1))[0]).toMatchObject({ event: 'acquired', shared: true });
    const second = await runCli(members, 'shared-doc', '5s', 'console.log("also reading")', ['--shared']).done;
    expect(second).toMatchObject({ code: 0, stdout: 'also reading\n' });
    const status = await cli(['status', 'shared-doc', '--members', members]).done;
    expect(status.stdout).toContain('shared-doc: held shared by readers on 3 of 3 members');
    const writer = await runCli(members, 'shared-doc', '5s', 'console.log("writing")', ['-E', '9']).done;
    expect(writer).toMatchObject({ code: 9, stdout: '' });
    reader.child.kill('SIGTERM');
    await reader.done;
    expect(await runCli(members, 'shared-doc', '5s', 'console.log("writing")').done).toMatchObject({ code: 0, stdout: 'writing\n' });
  });
});
