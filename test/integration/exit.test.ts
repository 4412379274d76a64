/** Redlock keeps no handle of its own: once the user quits the clients, the process exits. */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestMasters, type TestMasters } from './masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

/** Runs `fixture` with `args` as a child process; resolves with its exit code (or 'hung') and output. */
async function runChild(fixture: string, args: string[]): Promise<{ result: number | null | 'hung'; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: this only catches a process that never exits, not a slow one.
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
  const result = await Promise.race([exited, hung]);
  if (result === 'hung') child.kill('SIGKILL');
  return { result, output };
}

it.each(['quit', 'no-quit'])('a process that used Redlock exits by itself after quitting its clients (redlock.quit(): %s)', async (mode) => {
  const { result, output } = await runChild('test/fixtures/exit-child.ts', [mode, ...servers.masters.map((m) => String(m.port))]);
  expect(result, output).toBe(0);
  expect(output).toContain('done');
});

it('exits by itself after a failed wait on members that are all down, once the user disconnects clients that never connected', async () => {
  // Ports nothing listens on: a stopped master's, freed.
  const set = await startTestMasters(3);
  const ports = set.masters.map((m) => String(m.port));
  await set.close();
  const { result, output } = await runChild('test/fixtures/exit-down-child.ts', ports);
  expect(result, output).toBe(0);
  expect(output).toContain('done');
});

it('exits by itself when the user quits one client, the Redlock waits again, and then the rest are quit (no copy of the quit client is made)', async () => {
  const { result, output } = await runChild(
    'test/fixtures/exit-quit-one-child.ts',
    servers.masters.map((m) => String(m.port)),
  );
  expect(result, output).toBe(0);
  expect(output).toContain('done');
});
