/**
 * The quorumlock CLI's parsing and usage errors (exit 64, naming the flag), --version and --help:
 * no member is ever reached, so no server runs here.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../src/cli/duration.js';
import { UsageError } from '../../src/cli/errors.js';
import { parseMembers, redact } from '../../src/cli/members.js';
import { bundleCli, cli, nodeCommand } from './spawn.js';

describe('parsing', () => {
  it('reads durations in ms, s, m and h (a bare number only as 0), and names the flag when it cannot', () => {
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

  it('exits 74 when its output cannot be written (a full disk: /dev/full), where it would have said 0; another code stands', async () => {
    const full = openSync('/dev/full', 'w');
    try {
      expect((await cli(['--version'], {}, full).done).code).toBe(74);
      // A code other than 0 stands: a usage error says so on stderr.
      expect((await cli(['no-such-command'], {}, full).done).code).toBe(64);
    } finally {
      closeSync(full);
    }
  });

  it('the built CLI (dist/cli/main.js, as scripts/build.mjs bundles it) finds package.json too', async () => {
    // Bundled as the build does, into a package laid out like the published one: <root>/dist/cli/main.js
    // beside <root>/package.json. Inside node_modules, so that the bundle's ioredis import resolves.
    const root = mkdtempSync(join(fileURLToPath(new URL('../../node_modules/', import.meta.url)), '.quorumlock-cli-version-'));
    try {
      await bundleCli(join(root, 'dist/cli/main.js'));
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
      'min(--grace, ttl/3 − 2 × --node-timeout)',
      '-E, --conflict-exit-code',
      '-s, --shared',
      'leader <election>',
      '--force',
      'process group',
      'dies by that same signal',
    ])
      expect(stdout).toContain(text);
  });
});
