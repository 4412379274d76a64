/**
 * The quorumlock CLI as a user runs it: a child process (node --import tsx src/cli/main.ts)
 * against three real redis-server masters.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/cli/duration.js';
import { UsageError } from '../../src/cli/errors.js';
import { describeError, memberStates, waitReason } from '../../src/cli/member-state.js';
import { parseMembers, redact } from '../../src/cli/members.js';
import { startTestMasters, type TestMasters } from '../integration/masters.js';
import { cli, cliOnTerminal, closedPort, events, killRunning, nodeCommand } from './spawn.js';

let t: TestMasters;
let members: string;

beforeAll(async () => {
  t = await startTestMasters(3);
  members = t.masters.map((master) => `redis://${master.host}:${master.port}`).join(',');
});

afterEach(async () => {
  killRunning();
  await t.resumeAll();
});

afterAll(async () => {
  await t?.close();
});

describe('parsing', () => {
  it('reads durations in ms, s, m, h and plain ms, and names the flag when it cannot', () => {
    expect(parseDuration('--ttl', '500ms')).toBe(500);
    expect(parseDuration('--ttl', '1.5s')).toBe(1500);
    expect(parseDuration('--ttl', '2m')).toBe(120_000);
    expect(parseDuration('--ttl', '1h')).toBe(3_600_000);
    expect(parseDuration('--wait', '0', { allowZero: true })).toBe(0);
    // A bare number is ambiguous (--ttl 300: 300 ms or 300 s?): refused, with both spellings offered.
    expect(() => parseDuration('--ttl', '300')).toThrow(/--ttl: "300" has no unit: write 300ms or 300s/);
    expect(() => parseDuration('--ttl', '0')).toThrow(/--ttl: must be larger than 0/);
    expect(() => parseDuration('--ttl', '10x')).toThrow(UsageError);
    expect(() => parseDuration('--grace', '-1s')).toThrow(/--grace: "-1s" is not a duration/);
    expect(() => parseDuration('--ttl', '0.5ms')).toThrow(/whole number of milliseconds/);
  });

  it('reads member URLs with password, user and db, from the flag or QUORUMLOCK_MEMBERS, and never echoes a password', () => {
    expect(parseMembers('redis://:secret@h1:7000/2, rediss://user:pw@h2,redis://[::1]:7001', {})).toEqual([
      { url: 'redis://:secret@h1:7000/2', name: 'h1:7000/2' },
      { url: 'rediss://user:pw@h2', name: 'h2:6379/0' },
      { url: 'redis://[::1]:7001', name: '::1:7001/0' },
    ]);
    expect(parseMembers(undefined, { QUORUMLOCK_MEMBERS: 'redis://a:1,redis://b:2' }).map((m) => m.name)).toEqual(['a:1/0', 'b:2/0']);
    expect(() => parseMembers(undefined, {})).toThrow(/--members is required \(or set QUORUMLOCK_MEMBERS\)/);
    expect(() => parseMembers('redis://a:1,redis://a:1', {})).toThrow(/listed twice/);
    expect(() => parseMembers('redis://h/abc', {})).toThrow(/database must be a number/);
    let message = '';
    try {
      parseMembers('http://user:hunter2@h', {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/--members: .*scheme must be redis:\/\/, rediss:\/\/, redis\+sentinel:\/\//);
    expect(message).not.toContain('hunter2');
    expect(redact('redis://u:hunter2@h:1')).toBe('redis://u:***@h:1');
  });

  it('reports a port out of range as such, for redis:// as for sentinel and cluster URLs', () => {
    for (const url of ['redis://h:99999', 'rediss://:pw@h:0/1', 'redis://[::1]:70000', 'redis://h:12ab']) {
      expect(() => parseMembers(url, {})).toThrow(/port must be a number from 1 to 65535/);
    }
    expect(() => parseMembers('redis+cluster://h:99999', {})).toThrow(/port must be a number from 1 to 65535/);
    expect(parseMembers('redis://h:65535', {}).map((m) => m.name)).toEqual(['h:65535/0']);
  });
});

describe('usage errors exit 64 and name the flag', () => {
  it.each([
    [['run', '--members', 'http://x', '--resource', 'r', '--ttl', '1s', ...nodeCommand('0')], '--members'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', 'soon', ...nodeCommand('0')], '--ttl'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '1s', '--wait', '5y', ...nodeCommand('0')], '--wait'],
    [['run', '--members', 'redis://x', '--ttl', '1s', ...nodeCommand('0')], '--resource'],
    [['run', '--members', 'redis://x', '--resource', 'r', ...nodeCommand('0')], '--ttl'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '1s'], '--'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '1s', '--bogus', ...nodeCommand('0')], '--bogus'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '2m', '--max-lock-ttl', '1m', ...nodeCommand('0')], '--max-lock-ttl'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '2s', '--at-least', '2m', '--max-lock-ttl', '1m', ...nodeCommand('0')], '--at-least'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '2s', '--at-least', '10', ...nodeCommand('0')], '--at-least'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '2s', '--tls-ca', '/nonexistent/ca.pem', ...nodeCommand('0')], '--tls-ca'],
    [['status', 'r', '--members', 'redis://x', '--timeout', '500'], '--timeout'],
    [['trust', '--members', 'redis://x', '--yes', '--max-lock-ttl', '60'], '--max-lock-ttl'],
    [['members', '--members', 'redis://x', '--yes'], '--yes'],
    [['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '150ms', ...nodeCommand('0')], '--node-timeout'],
    [['status', '--members', 'redis://x'], '<resource>'],
    [['members'], '--members'],
  ])('%j', async (args, flag) => {
    const { code, stderr, stdout } = await cli(args).done;
    expect(code).toBe(64);
    expect(stderr).toContain(flag);
    expect(stdout).toBe('');
  });

  it('refuses a duration without a unit (--ttl 300 is not 300 ms), suggesting both spellings', async () => {
    const { code, stderr } = await cli(['run', '--members', 'redis://x', '--resource', 'r', '--ttl', '300', ...nodeCommand('0')]).done;
    expect(code).toBe(64);
    expect(stderr).toContain('--ttl: "300" has no unit: write 300ms or 300s');
  });

  it('--version and `version` print the version in package.json', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    for (const args of [['--version'], ['version']]) {
      const { code, stdout } = await cli(args).done;
      expect(code).toBe(0);
      expect(stdout).toBe(`quorumlock ${version}\n`);
    }
  });

  it('the built CLI (dist/cli/main.js, as scripts/build.mjs bundles it) finds package.json too', async () => {
    // Bundled as the build does, into a package laid out like the published one: <root>/dist/cli/main.js
    // beside <root>/package.json. Inside node_modules, so that the bundle's ioredis import resolves.
    const root = mkdtempSync(join(fileURLToPath(new URL('../../node_modules/', import.meta.url)), '.quorumlock-cli-version-'));
    try {
      await build({
        entryPoints: [fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url))],
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'esm',
        external: ['ioredis'],
        outfile: join(root, 'dist/cli/main.js'),
        logLevel: 'silent',
      });
      writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'quorumlock', version: '9.8.7-test' }));
      const output = execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), '--version'], { encoding: 'utf8' });
      expect(output).toBe('quorumlock 9.8.7-test\n');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('--help documents every exit code and the trust step', async () => {
    const { code, stdout } = await cli(['--help']).done;
    expect(code).toBe(0);
    for (const text of [
      '64',
      '69',
      '73',
      '75',
      '128+n',
      'quorumlock trust --yes',
      'QUORUMLOCK_MEMBERS',
      'QUORUMLOCK_FENCE',
      'QUORUMLOCK_TLS_CA',
      '--skip-if-locked',
      '--at-least',
      '--version',
      'source',
      'min(--grace, ttl/2)',
    ])
      expect(stdout).toContain(text);
  });
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
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'contended',
      '--ttl',
      '5s',
      ...nodeCommand('console.log("holding"); setTimeout(() => {}, 1500)'),
    ]);
    await holder.waitFor('holding');
    const refused = await cli(['run', '--members', members, '--resource', 'contended', '--ttl', '5s', '--wait', '300ms', ...nodeCommand('console.log("ran")')])
      .done;
    expect(refused.code).toBe(73);
    expect(refused.stdout).not.toContain('ran');
    expect(refused.stderr).toMatch(/could not lock "contended"/);
    // Waits in line and runs once the holder is done (within its 1.5 s).
    const waiter = await cli([
      'run',
      '--members',
      members,
      '--resource',
      'contended',
      '--ttl',
      '5s',
      '--wait',
      '10s',
      '--json',
      ...nodeCommand('console.log("ran")'),
    ]).done;
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
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'lost',
      '--ttl',
      '1s',
      ...nodeCommand(
        'process.on("SIGTERM", () => { console.log("child got SIGTERM"); process.exit(0); }); console.log("holding"); setTimeout(() => {}, 20000)',
      ),
    ]);
    await holder.waitFor('holding');
    // Another party takes the keys away on a majority: the next extension fails.
    await Promise.all([t.clients[0]!.del('lost'), t.clients[1]!.del('lost')]);
    const { code, stdout, stderr, ms } = await holder.done;
    expect(code).toBe(75);
    expect(stdout).toContain('child got SIGTERM');
    // Names the resource once, quoted, and says why in words (it read "lock on lost lost" once).
    expect(stderr).toMatch(/quorumlock: lost the lock on "lost": its keys are gone on too many members .*; stopping the command: SIGTERM now, SIGKILL in /);
    expect(stderr).not.toMatch(/lost lost/);
    expect(ms).toBeLessThan(8000);
  });

  it('a command that ignores SIGTERM after a lost lock is SIGKILLed after --grace', async () => {
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'stubborn',
      '--ttl',
      '1s',
      '--grace',
      '300ms',
      ...nodeCommand('process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 20000)'),
    ]);
    await holder.waitFor('holding');
    await Promise.all([t.clients[0]!.del('stubborn'), t.clients[1]!.del('stubborn'), t.clients[2]!.del('stubborn')]);
    const { code, stdout, ms } = await holder.done;
    expect(code).toBe(75);
    expect(stdout).toContain('ignoring SIGTERM');
    expect(ms).toBeLessThan(8000);
  });

  it('forwards SIGTERM to the command, exits with its code, and releases the lock', async () => {
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'forwarded',
      '--ttl',
      '5s',
      ...nodeCommand(
        'process.on("SIGTERM", () => { console.log("child got SIGTERM"); process.exit(42); }); console.log("holding"); setTimeout(() => {}, 20000)',
      ),
    ]);
    await holder.waitFor('holding');
    expect((await t.valuesOf('forwarded')).every((value) => value !== null)).toBe(true);
    holder.child.kill('SIGTERM');
    const { code, stdout } = await holder.done;
    expect(code).toBe(42);
    expect(stdout).toContain('child got SIGTERM');
    expect(await t.valuesOf('forwarded')).toEqual([null, null, null]);
  });

  it('exits 127 for a command that does not exist, holding nothing afterwards', async () => {
    const { code, stderr } = await cli(['run', '--members', members, '--resource', 'missing', '--ttl', '2s', '--', 'quorumlock-no-such-command']).done;
    expect(code).toBe(127);
    expect(stderr).toContain('quorumlock-no-such-command: command not found');
    expect(await t.valuesOf('missing')).toEqual([null, null, null]);
  });

  it('SIGINT while waiting in line abandons the wait: exit 130, the command never runs', async () => {
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'interrupted',
      '--ttl',
      '5s',
      ...nodeCommand('console.log("holding"); setTimeout(() => {}, 20000)'),
    ]);
    await holder.waitFor('holding');
    const waiter = cli(['run', '--members', members, '--resource', 'interrupted', '--ttl', '5s', '--wait', '30s', ...nodeCommand('console.log("ran")')]);
    // Past start-up (tsx) and into the wait: the line key on the members names it.
    await expect.poll(() => t.clients[0]!.zcard('{interrupted}:quorumlock:line'), { timeout: 5000, interval: 50 }).toBeGreaterThan(0);
    waiter.child.kill('SIGINT');
    const { code, stdout, stderr } = await waiter.done;
    expect(code).toBe(130);
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
});

describe('status', () => {
  it('shows the lock held with an owner fingerprint, never the value, as a table and as JSON', async () => {
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'report',
      '--ttl',
      '10s',
      ...nodeCommand('console.log("holding"); setTimeout(() => {}, 20000)'),
    ]);
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

    const trusted = await cli(['trust', '--yes', '--members', members]).done;
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
});

/** A holder that keeps `resource` until killed; resolves once its command runs. */
async function hold(resource: string, ttl = '10s') {
  const holder = cli([
    'run',
    '--members',
    members,
    '--resource',
    resource,
    '--ttl',
    ttl,
    ...nodeCommand('console.log("holding"); setTimeout(() => {}, 30000)'),
  ]);
  await holder.waitFor('holding');
  return holder;
}

describe('run: when the lock is not had', () => {
  it('exits 73 saying the lock is held by another owner, suggesting --wait, and naming each member; --json carries outcome, reason and member states', async () => {
    const holder = await hold('busy');
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
    const [p1, p2, p3] = [await closedPort(), await closedPort(), await closedPort()];
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
    const holder = await hold('live-line');
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
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'deadline',
      '--ttl',
      '1500ms',
      '--grace',
      '10s',
      ...nodeCommand('process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 30000)'),
    ]);
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

  it('a lock lost outright: SIGKILL after at most the validity left, not the 10 s --grace', async () => {
    const holder = cli([
      'run',
      '--members',
      members,
      '--resource',
      'lost-outright',
      '--ttl',
      '1500ms',
      '--grace',
      '10s',
      ...nodeCommand('process.on("SIGTERM", () => console.log("ignoring SIGTERM")); console.log("holding"); setTimeout(() => {}, 30000)'),
    ]);
    await holder.waitFor('holding');
    const deletedAt = performance.now();
    // Gone on every member: the next extension (within 0.5 s) finds the lock lost.
    await Promise.all(t.clients.map((client) => client.del('lost-outright')));
    const { code, stdout, stderr } = await holder.done;
    expect(code).toBe(75);
    expect(stdout).toContain('ignoring SIGTERM');
    expect(stderr).toMatch(/lost the lock on "lost-outright": its keys are gone on too many members/);
    // The 1.5 s lock's validity, at most: far from the 10 s --grace.
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
    const partial = `redis://127.0.0.1:${await closedPort()},redis://${live.host}:${live.port},redis://127.0.0.1:${await closedPort()}`;
    const { code, stdout } = await cli(['status', 'partial', '--members', partial, '--timeout', '500ms']).done;
    expect(code).toBe(69);
    expect(stdout).toContain('partial: not held by a quorum (free on 1 of 3 members; 2 unreachable; quorum 2 of 3)');
    expect(stdout).not.toContain('everywhere');
    const json = JSON.parse((await cli(['status', 'partial', '--json', '--members', partial, '--timeout', '500ms']).done).stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ held: false, freeOn: 1, unreachable: 2, heldOn: 0 });
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

  it('warns (stderr and --json) when a member restarted empty while the others show fence tokens issued', async () => {
    const fenced = await cli(['run', '--fencing', '--members', members, '--resource', 'history', '--ttl', '2s', ...nodeCommand('0')]).done;
    expect(fenced.code).toBe(0);
    const restarted = t.masters[2]!;
    await restarted.restart();
    await t.clients[2]!.ping();
    const json = await cli(['trust', '--yes', '--json', '--members', members]).done;
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { warning: string; members: { trusted: boolean }[] };
    expect(parsed.members.map((member) => member.trusted)).toEqual([true, true, true]);
    const name = `${restarted.host}:${restarted.port}/0`;
    expect(parsed.warning).toContain(`${name} has no epoch or a fresh one`);
    expect(parsed.warning).toContain('fence tokens issued');
    expect(json.stderr).toContain(`quorumlock: WARNING: ${parsed.warning}`);

    // The same on a plain run, and none on a set that shows no such split.
    await restarted.restart();
    await t.clients[2]!.ping();
    const plain = await cli(['trust', '--yes', '--members', members]).done;
    expect(plain.code).toBe(0);
    expect(plain.stderr).toMatch(/WARNING: these members held data before: .*fence tokens issued.*; yet .* has no epoch or a fresh one/);
    const quiet = await cli(['trust', '--yes', '--members', members]).done;
    expect(quiet).toMatchObject({ code: 0, stderr: '' });
    await t.heal();
  });
});
