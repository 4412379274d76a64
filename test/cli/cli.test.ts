/**
 * The quorumlock CLI as a user runs it: a child process (node, the CLI bundled from src/: spawn.ts)
 * against three real redis-server masters.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestMasters } from '../integration/masters.js';
import { cli, events, everyMemberHolds, nodeCommand, runCli, within, withMasters } from './spawn.js';

let t: TestMasters;
let members: string;
withMasters(3, (masters, urls) => {
  t = masters;
  members = urls;
});

describe('run', () => {
  it("exits with the command's exit code, and 128+n when a signal kills it", async () => {
    expect((await cli(['run', '--members', members, '--resource', 'exit-code', '--ttl', '5s', ...nodeCommand('process.exit(7)')]).done).code).toBe(7);
    expect(
      (await cli(['run', '--members', members, '--resource', 'exit-code', '--ttl', '5s', ...nodeCommand('process.kill(process.pid, "SIGKILL")')]).done).code,
    ).toBe(128 + 9);
    // Released at exit: a third run gets it at once.
    expect((await cli(['run', '--members', members, '--resource', 'exit-code', '--ttl', '5s', ...nodeCommand('process.exit(0)')]).done).code).toBe(0);
    expect(await t.valuesOf('exit-code')).toEqual([null, null, null]);
  });

  it("keeps the lock and the command's exit code when its stderr reader is gone (EPIPE on every message)", async () => {
    // `… --json 2>&1 | logger` with the logger gone: each event written fails. Before, the first
    // one ended the CLI with 1, its command left running on a lock no longer extended.
    const run = runCli(members, 'stderr-gone', '2s', 'setTimeout(() => { console.log("ran"); process.exit(7) }, 2300)', ['--json']);
    run.child.stderr!.destroy();
    const done = await run.done;
    expect(done.stdout).toContain('ran'); // it outlived the ttl: extended throughout
    expect(done.code).toBe(7);
    expect(await t.valuesOf('stderr-gone')).toEqual([null, null, null]); // released at its exit
  });

  it('passes QUORUMLOCK_RESOURCE, and QUORUMLOCK_FENCE with --fencing, increasing from run to run', async () => {
    const print = nodeCommand('console.log(JSON.stringify({ fence: process.env.QUORUMLOCK_FENCE ?? null, resource: process.env.QUORUMLOCK_RESOURCE }))');
    const first = await cli(['run', '--members', members, '--resource', 'fenced', '--ttl', '5s', '--fencing', ...print]).done;
    const second = await cli(['run', '--members', members, '--resource', 'fenced', '--ttl', '5s', '--fencing', ...print]).done;
    const plain = await cli(['run', '--members', members, '--resource', 'fenced', '--ttl', '5s', ...print], { QUORUMLOCK_FENCE: 'stale' }).done;
    expect([first.code, second.code, plain.code]).toEqual([0, 0, 0]);
    const a = JSON.parse(first.stdout) as { fence: string; resource: string };
    const b = JSON.parse(second.stdout) as { fence: string; resource: string };
    expect(a.resource).toBe('fenced');
    expect(a.fence).toMatch(/^\d+$/);
    expect(Number(b.fence)).toBeGreaterThan(Number(a.fence));
    expect(JSON.parse(plain.stdout)).toEqual({ fence: null, resource: 'fenced' });
  });

  it('exits 73 when another run holds the resource past --wait, and gets it when the holder finishes within --wait', async () => {
    const holder = runCli(members, 'contended', '5s', 'console.log("holding"); setTimeout(() => {}, 1500)');
    await holder.waitFor('holding');
    const refused = await cli(['run', '--members', members, '--resource', 'contended', '--ttl', '5s', '--wait', '300ms', ...nodeCommand('console.log("ran")')])
      .done;
    expect(refused.code).toBe(73);
    expect(refused.stdout).not.toContain('ran');
    expect(refused.stderr).toMatch(/could not lock "contended"/);
    // Waits in line and runs once the holder is done (within its 1.5 s).
    const waiter = await runCli(members, 'contended', '5s', 'console.log("ran")', ['--wait', '10s', '--json']).done;
    expect(waiter.code).toBe(0);
    expect(waiter.stdout).toContain('ran');
    expect(
      waiter.stderr
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { event: string }).event),
    ).toEqual(['acquired', 'exit']);
    expect((await holder.done).code).toBe(0);
  });

  it('when the lock is lost, sends SIGTERM to the command and exits 75', async () => {
    const holder = runCli(
      members,
      'lost',
      '1s',
      'process.on("SIGTERM", () => { console.log("child got SIGTERM"); process.exit(0); }); console.log("holding"); setTimeout(() => {}, 20000)',
    );
    await holder.waitFor('holding');
    // Another party takes the keys away on a majority: the next extension fails.
    await Promise.all([t.clients[0]!.del('lost'), t.clients[1]!.del('lost')]);
    const { code, stderr, ms } = await holder.done;
    expect(code).toBe(75);
    // SIGTERM and SIGKILL go out together for a lost lock, so whether the child's SIGTERM handler
    // gets to print first is a race: the CLI's own account is what is asserted.
    // Names the resource once, quoted, and says why in words (it read "lock on lost lost" once).
    expect(stderr).toMatch(/quorumlock: lost the lock on "lost": its keys are gone on too many members .*; stopping the command: SIGTERM now, SIGKILL now/);
    expect(stderr).not.toMatch(/lost lost/);
    expect(ms).toBeLessThan(8000);
  });

  it('a command that ignores SIGTERM after a lost lock is SIGKILLed at once, whatever --grace says (a lost lock guarantees nothing)', async () => {
    const holder = runCli(
      members,
      'stubborn',
      '1s',
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 20000)',
      ['--grace', '10s', '--json'],
    );
    await holder.waitFor('holding');
    await Promise.all([t.clients[0]!.del('stubborn'), t.clients[1]!.del('stubborn'), t.clients[2]!.del('stubborn')]);
    const { code, stderr, ms } = await holder.done;
    expect(code).toBe(75);
    expect(events(stderr).find((event) => event.event === 'lost')).toMatchObject({ why: 'lost', killAfterMs: 0 });
    expect(events(stderr).find((event) => event.event === 'exit')).toMatchObject({ commandExitCode: 137 });
    expect(ms).toBeLessThan(8000); // not the 10 s --grace
  });

  it('forwards SIGTERM to the command, exits with its code, and releases the lock', async () => {
    const holder = runCli(
      members,
      'forwarded',
      '5s',
      'process.on("SIGTERM", () => { console.log("child got SIGTERM"); process.exit(42); }); console.log("holding"); setTimeout(() => {}, 20000)',
    );
    await holder.waitFor('holding');
    await within(3000, () => everyMemberHolds(t, 'forwarded'), 'the lock held on every member');
    holder.child.kill('SIGTERM');
    const { code, stdout } = await holder.done;
    expect(code).toBe(42);
    expect(stdout).toContain('child got SIGTERM');
    expect(await t.valuesOf('forwarded')).toEqual([null, null, null]);
  });

  it('a command that ignores a forwarded SIGTERM gets SIGKILL after --grace, and the lock is released', async () => {
    const holder = runCli(
      members,
      'ignores-term',
      '5s',
      'process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => console.log("finished"), 20000)',
      ['--grace', '1s', '--json'],
    );
    await holder.waitFor('holding');
    holder.child.kill('SIGTERM');
    const { stdout, stderr, ms } = await holder.done;
    expect(stdout).toContain('ignoring SIGTERM');
    expect(stdout).not.toContain('finished');
    expect(events(stderr).find((event) => event.event === 'exit')).toMatchObject({ exitCode: 137, source: 'command' });
    expect(ms).toBeLessThan(15_000); // not the command's 20 s
    expect(await t.valuesOf('ignores-term')).toEqual([null, null, null]);
  });

  it('gives a command that ignores a forwarded SIGTERM its whole --grace while the lock keeps being extended (longer than the ttl)', async () => {
    // ttl 2 s, --grace 4 s: the lock is extended all along, so the SIGKILL waits for the grace,
    // not for the deadline the lock had when the SIGTERM came.
    const holder = runCli(
      members,
      'long-grace',
      '2s',
      'let at; process.on("SIGTERM", () => { at = Date.now(); }); console.log("holding"); setInterval(() => at && console.log("alive " + (Date.now() - at)), 200)',
      ['--grace', '4s'],
    );
    await holder.waitFor('holding');
    holder.child.kill('SIGTERM');
    const { stdout } = await holder.done;
    const alive = [...stdout.matchAll(/^alive (\d+)$/gm)].map((match) => Number(match[1]));
    expect(Math.max(...alive)).toBeGreaterThan(3_000);
    expect(await t.valuesOf('long-grace')).toEqual([null, null, null]);
  });

  it('exits 127 for a command that does not exist, holding nothing afterwards', async () => {
    const { code, stderr } = await cli(['run', '--members', members, '--resource', 'missing', '--ttl', '2s', '--', 'quorumlock-no-such-command']).done;
    expect(code).toBe(127);
    expect(stderr).toContain('quorumlock-no-such-command: command not found');
    expect(await t.valuesOf('missing')).toEqual([null, null, null]);
  });

  it("exits 126 for a script whose #! interpreter does not exist (a CRLF line end included, or where PATH finds it first), in quorumlock's words; runs one whose interpreter's path is not ASCII", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'quorumlock-shebang-'));
    const [shadowed, later] = [join(dir, 'a'), join(dir, 'b')];
    mkdirSync(shadowed);
    mkdirSync(later);
    const script = join(dir, 'job.sh');
    writeFileSync(script, '#! /usr/bin/quorumlock-no-such-shell -e\necho ran\n', { mode: 0o755 });
    const crlf = join(dir, 'crlf.sh');
    writeFileSync(crlf, '#!/bin/sh\r\necho ran\r\n', { mode: 0o755 });
    // `job` on PATH: first a copy with a missing interpreter, then one that runs. dash would go on
    // to the second, bash would stop at the first: the first is refused, the same on every system.
    const accented = join(dir, 'café');
    mkdirSync(accented);
    symlinkSync('/bin/sh', join(accented, 'sh'));
    const utf8 = join(dir, 'utf8.sh');
    writeFileSync(utf8, `#!${join(accented, 'sh')}\necho utf8\n`, { mode: 0o755 });
    writeFileSync(join(shadowed, 'job'), '#!/usr/bin/quorumlock-no-such-shell\necho shadowed\n', { mode: 0o755 });
    writeFileSync(join(later, 'job'), '#!/bin/sh\necho later\n', { mode: 0o755 });
    const run = (command: string, env?: NodeJS.ProcessEnv) =>
      cli(['run', '--members', members, '--resource', 'bad-interpreter', '--ttl', '2s', '--', command], env).done;
    try {
      const missing = await run(script);
      expect(missing).toMatchObject({ code: 126, stdout: '' });
      expect(missing.stderr).toContain(`${script}: bad interpreter "/usr/bin/quorumlock-no-such-shell"`);
      const windows = await run(crlf);
      expect(windows).toMatchObject({ code: 126, stdout: '' });
      expect(windows.stderr).toContain(`${crlf}: bad interpreter "/bin/sh\\r": not found or not executable (the script's lines end in CRLF)`);
      expect(await t.valuesOf('bad-interpreter')).toEqual([null, null, null]);
      const first = await run('job', { PATH: `${shadowed}${delimiter}${later}${delimiter}${process.env.PATH ?? ''}` });
      expect(first).toMatchObject({ code: 126, stdout: '' });
      expect(first.stderr).toContain('job: bad interpreter "/usr/bin/quorumlock-no-such-shell"');
      expect(await run(utf8)).toMatchObject({ code: 0, stdout: 'utf8\n' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SIGINT while waiting in line abandons the wait: run dies by SIGINT (what 130 stood for), the command never runs', async () => {
    const holder = runCli(members, 'interrupted', '5s', 'console.log("holding"); setTimeout(() => {}, 20000)');
    await holder.waitFor('holding');
    const waiter = cli(['run', '--members', members, '--resource', 'interrupted', '--ttl', '5s', '--wait', '30s', ...nodeCommand('console.log("ran")')]);
    // Past start-up and into the wait: the line key on the members names it.
    await expect.poll(() => t.clients[0]!.zcard('{interrupted}:quorumlock:line'), { timeout: 5000, interval: 50 }).toBeGreaterThan(0);
    waiter.child.kill('SIGINT');
    const { code, signal, stdout, stderr } = await waiter.done;
    // Ended by the signal itself, as a shell expects of an interrupted program (ending.ts).
    expect({ code, signal }).toEqual({ code: null, signal: 'SIGINT' });
    expect(stdout).toBe('');
    expect(stderr).toMatch(/interrupted by SIGINT/);
    holder.child.kill('SIGTERM');
    await holder.done;
  });

  it('exits 69 when too few members are reachable', async () => {
    await Promise.all([t.masters[0]!.pause(), t.masters[1]!.pause()]);
    const { code, stderr, ms } = await cli(['run', '--members', members, '--resource', 'down', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(code).toBe(69);
    expect(stderr).toMatch(/timed out/);
    // Exits by itself once done: no socket to a paused member keeps it alive (the CLI's 5 s
    // fallback exit would show here).
    expect(ms).toBeLessThan(4000);
  });

  it('names a server listed twice (two databases of one server) as the reason, not a quarantine to wait out', async () => {
    const { host, port } = t.masters[0]!;
    const twice = `redis://${host}:${port}/0,redis://${host}:${port}/1`;
    const { code, stderr } = await cli(['run', '--members', twice, '--resource', 'twice', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(code).toBe(69);
    // Either may be named the duplicate: the one whose yes came second, or the one marked.
    expect(stderr).toMatch(new RegExp(`${host}:${port}/[01] is the same server as ${host}:${port}/[01]\\. List each server once`));
    expect(stderr).not.toMatch(/younger than --max-lock-ttl/);
    // members says so too: the second name does not count (it said OK, all healthy).
    const listed = await cli(['members', '--members', twice]).done;
    expect(listed.code).toBe(69);
    expect(listed.stdout).toMatch(new RegExp(`${host}:${port}/1 +UNHEALTHY .*the same server as ${host}:${port}/0`));
    expect(listed.stdout).toMatch(/1 of 2 healthy masters, quorum 2: NOT ENOUGH/);
  });
});

describe('status', () => {
  it('shows the lock held with an owner fingerprint, never the value, as a table and as JSON', async () => {
    const holder = runCli(members, 'report', '10s', 'console.log("holding"); setTimeout(() => {}, 20000)');
    await holder.waitFor('holding');
    const values = await t.valuesOf('report');
    const value = values[0]!;
    expect(value).toBeTruthy();
    const owner = createHash('sha256').update(value).digest('hex').slice(0, 8);

    const text = await cli(['status', 'report', '--members', members]).done;
    expect(text.code).toBe(0);
    expect(text.stdout).not.toContain(value);
    expect(text.stdout).toContain(owner);
    expect(text.stdout).toMatch(/report: held by owner [0-9a-f]{8} on 3 of 3 members/);
    expect(text.stdout.match(/\bheld\b/g)?.length).toBeGreaterThanOrEqual(3);

    const json = await cli(['status', 'report', '--json'], { QUORUMLOCK_MEMBERS: members }).done;
    expect(json.code).toBe(0);
    expect(json.stdout).not.toContain(value);
    const parsed = JSON.parse(json.stdout) as {
      held: boolean;
      owner: string;
      members: { reachable: boolean; role: string; latencyMs: number; lock: { held: boolean; pttlMs: number; owner: string }; epoch: { state: string } }[];
    };
    expect(parsed.held).toBe(true);
    expect(parsed.owner).toBe(owner);
    expect(parsed.members).toHaveLength(3);
    for (const member of parsed.members) {
      expect(member).toMatchObject({ reachable: true, role: 'master', lock: { held: true, owner }, epoch: { state: 'trusted' } });
      expect(member.lock.pttlMs).toBeGreaterThan(0);
      expect(member.lock.pttlMs).toBeLessThanOrEqual(10_000);
      expect(member.latencyMs).toBeGreaterThanOrEqual(0);
    }
    holder.child.kill('SIGTERM');
    await holder.done;

    const free = JSON.parse((await cli(['status', 'report', '--json', '--members', members]).done).stdout) as {
      held: boolean;
      members: { lock: { held: boolean } }[];
    };
    expect(free.held).toBe(false);
    expect(free.members.map((m) => m.lock.held)).toEqual([false, false, false]);
  });
});

describe('members', () => {
  it('exits 0 with 3 healthy masters, and reports role, version, latency and epoch', async () => {
    const { code, stdout } = await cli(['members', '--members', members, '--json']).done;
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as {
      quorum: number;
      healthy: number;
      ok: boolean;
      members: { healthy: boolean; role: string; version: string; latencyMs: number; epoch: { state: string; ageMs: number } }[];
    };
    expect(parsed).toMatchObject({ quorum: 2, healthy: 3, ok: true });
    for (const member of parsed.members) {
      expect(member).toMatchObject({ healthy: true, role: 'master', epoch: { state: 'trusted' } });
      expect(member.version).toMatch(/^\d+\.\d+/);
      expect(member.epoch.ageMs).toBeGreaterThan(0);
    }
    const table = await cli(['members', '--members', members]).done;
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/3 of 3 healthy masters, quorum 2: OK/);
  });

  it('exits 69 within a bounded time when 2 of 3 are paused', async () => {
    await Promise.all([t.masters[0]!.pause(), t.masters[2]!.pause()]);
    const { code, stdout, ms } = await cli(['members', '--members', members, '--timeout', '500ms']).done;
    expect(code).toBe(69);
    expect(stdout).toMatch(/1 of 3 healthy masters, quorum 2: NOT ENOUGH/);
    expect(stdout.match(/UNHEALTHY/g)).toHaveLength(2);
    expect(ms).toBeLessThan(4000);
  });
});

describe('trust and the restart quarantine', () => {
  it('a member set that lost its epochs refuses run (69, pointing at trust) until `quorumlock trust`', async () => {
    await Promise.all(t.clients.map((c) => c.del('quorumlock:epoch')));
    const before = await cli(['status', 'q', '--json', '--members', members]).done;
    expect((JSON.parse(before.stdout) as { members: { epoch: { state: string } }[] }).members.map((m) => m.epoch.state)).toEqual(['none', 'none', 'none']);

    const refused = await cli(['run', '--members', members, '--resource', 'q', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(refused.code).toBe(69);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toMatch(/quorumlock trust/);
    const quarantined = await cli(['members', '--members', members]).done;
    expect(quarantined.stdout).toMatch(/quarantined, .* left/);
    // Healthy, yet no lock can be had: monitoring must not stay green (exit 69).
    expect(quarantined.stdout).toMatch(/3 of 3 healthy masters, but only 0 past the restart quarantine, quorum 2: NOT ENOUGH/);
    expect(quarantined.code).toBe(69);
    expect(JSON.parse((await cli(['members', '--members', members, '--json']).done).stdout)).toMatchObject({ healthy: 3, trusted: 0, ok: false });

    // A restart from disk or a failover leaves the epoch hash in place but written by another
    // server process: shown as stale, as the next acquire will quarantine the member again.
    await t.clients[0]!.hset('quorumlock:epoch', 'run_id', '0000000000000000000000000000000000000000');
    const stale = await cli(['members', '--members', members, '--json']).done;
    expect((JSON.parse(stale.stdout) as { members: { epoch: { state: string } }[] }).members.map((m) => m.epoch.state)).toEqual([
      'stale',
      'quarantined',
      'quarantined',
    ]);
    expect((await cli(['members', '--members', members]).done).stdout).toMatch(/epoch of an earlier server process/);

    // One member shows a past (an epoch of an earlier server process), the others none: the
    // restarted case, which trust refuses without --force.
    const notForced = await cli(['trust', '--yes', '--members', members]).done;
    expect(notForced.code).toBe(64);
    expect(notForced.stderr).toMatch(/trust: refusing: these members held data before: .*an epoch written by an earlier server process/);
    const trusted = await cli(['trust', '--yes', '--force', '--members', members]).done;
    expect(trusted.code).toBe(0);
    expect(trusted.stdout.match(/\btrusted\b/g)).toHaveLength(3);

    const ran = await cli(['run', '--members', members, '--resource', 'q', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('ran');
  });
});

describe('restore-fencing', () => {
  it('raises every fence counter to the floor, so the next fenced run gets a token above it; refuses a missing or bad floor', async () => {
    const missing = await cli(['restore-fencing', '--members', members]).done;
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/--floor is required/);
    const bad = await cli(['restore-fencing', '--floor', '0', '--members', members]).done;
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--floor must be an integer from 1/);
    expect((await cli(['members', '--floor', '5', '--members', members]).done).code).toBe(64);

    const restored = await cli(['restore-fencing', '--floor', '5000', '--members', members, '--json']).done;
    expect(restored.code).toBe(0);
    const parsed = JSON.parse(restored.stdout) as { members: { trusted: boolean; fenceCounter: number }[] };
    for (const member of parsed.members) expect(member).toMatchObject({ trusted: true, fenceCounter: expect.any(Number) });
    for (const member of parsed.members) expect(member.fenceCounter).toBeGreaterThanOrEqual(5000);

    const ran = await cli([
      'run',
      '--fencing',
      '--members',
      members,
      '--resource',
      'fenced-after-restore',
      '--ttl',
      '2s',
      ...nodeCommand('console.log("fence=" + process.env.QUORUMLOCK_FENCE)'),
    ]).done;
    expect(ran.code).toBe(0);
    expect(Number(/fence=(\d+)/.exec(ran.stdout)![1])).toBeGreaterThan(5000);
  });

  // Last in the file: it leaves two members in a quarantine as long as the default --max-lock-ttl.
  it('a fenced run after a majority lost its data says to restore fencing, not to trust (69)', async () => {
    const fenced = ['run', '--fencing', '--members', members, '--resource', 'unfenced', '--ttl', '500ms', '--max-lock-ttl', '1s', ...nodeCommand('')];
    expect((await cli(fenced).done).code).toBe(0);
    // Two of three lose their data (their epochs and fence counters): after their quarantine they
    // count for the lock, but their counters are not trusted, and one trusted member is no quorum.
    await Promise.all(t.clients.slice(1).map((client) => client.del('quorumlock:epoch')));
    expect((await cli(fenced).done).code).toBe(69); // their quarantine begins
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const refused = await cli(fenced).done;
    expect(refused.code).toBe(69);
    expect(refused.stderr).toMatch(/locked, but too few members have trusted fence counters/);
    expect(refused.stderr).toMatch(/run quorumlock restore-fencing --floor N/);
    expect(refused.stderr).not.toMatch(/trustMembers/);
  });
});
