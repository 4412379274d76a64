/**
 * The CLI against TLS members (rediss://) whose certificates a private CA signed: --tls-ca (or
 * QUORUMLOCK_TLS_CA) names the CA; without it the CLI says the certificate is not trusted.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { processBackend } from '../harness/process.js';
import type { MasterSet } from '../harness/types.js';
import { cli, events, killRunning, nodeCommand, runCli } from './spawn.js';

let dir: string;
let set: MasterSet;
let members: string;
let ca: string;

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  // A CA and a server certificate for 127.0.0.1, made now: nothing secret is committed.
  dir = mkdtempSync(join(tmpdir(), 'quorumlock-cli-tls-'));
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=quorumlock-cli-test-ca');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '1',
    '-extfile',
    'ext.cnf',
  );
  ca = join(dir, 'ca.crt');
  set = await processBackend.start(3, {
    args: (port) => [
      '--port',
      '0',
      '--tls-port',
      String(port),
      '--tls-cert-file',
      join(dir, 'server.crt'),
      '--tls-key-file',
      join(dir, 'server.key'),
      '--tls-ca-cert-file',
      ca,
      '--tls-auth-clients',
      'no',
    ],
  });
  members = set.masters.map((master) => `rediss://${master.host}:${master.port}`).join(',');
});

afterEach(() => killRunning());

afterAll(async () => {
  await set?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('TLS members with a private CA', () => {
  it('trust, members and run succeed with --tls-ca (or QUORUMLOCK_TLS_CA)', async () => {
    // Brand-new masters: the one-time trust step, over TLS.
    const trusted = await cli(['trust', '--yes', '--members', members, '--tls-ca', ca]).done;
    expect(trusted.stderr).toBe('');
    expect(trusted.code).toBe(0);
    const health = await cli(['members', '--members', members], { QUORUMLOCK_TLS_CA: ca }).done;
    expect(health.code).toBe(0);
    expect(health.stdout).toMatch(/3 of 3 healthy masters, quorum 2: OK/);
    const ran = await cli(['run', '--members', members, '--tls-ca', ca, '--resource', 'tls-job', '--ttl', '2s', ...nodeCommand('console.log("ran")')]).done;
    expect(ran.code).toBe(0);
    expect(ran.stdout).toContain('ran');
  });

  it('without the CA, fails naming each member and the untrusted certificate, pointing at --tls-ca', async () => {
    const { code, stdout, stderr } = await runCli(members, 'tls-job', '2s', 'console.log("ran")', ['--json']).done;
    expect(code).toBe(69);
    expect(stdout).toBe('');
    const [failed] = events(stderr);
    expect(failed).toMatchObject({ event: 'failed', outcome: 'unavailable', exitCode: 69, source: 'quorumlock' });
    const states = failed!.members as { member: string; state: string; code: string }[];
    expect(states.map((state) => state.member)).toEqual(set.masters.map((master) => `${master.host}:${master.port}/0`));
    for (const state of states) {
      expect(state.state).toMatch(/^TLS: certificate not trusted \(.+\): give the CA that signed it with --tls-ca$/);
      expect(state.code).toMatch(/CERT|SELF_SIGNED|UNABLE_TO_VERIFY/);
    }
  });

  it('a CA file that cannot be read, or holds no certificate, is a usage error before any connection', async () => {
    const missing = await cli(['members', '--members', members, '--tls-ca', join(dir, 'no-such.crt')]).done;
    expect(missing.code).toBe(64);
    expect(missing.stderr).toMatch(/--tls-ca: cannot read the CA file ".*no-such\.crt" \(ENOENT\)/);
    const notPem = await cli(['members', '--members', members], { QUORUMLOCK_TLS_CA: join(dir, 'ext.cnf') }).done;
    expect(notPem.code).toBe(64);
    expect(notPem.stderr).toMatch(/QUORUMLOCK_TLS_CA: ".*ext\.cnf" holds no PEM certificate/);
  });
});
