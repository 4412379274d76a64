/** Redlock keeps no handle of its own: once the user quits the clients, the process exits. */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestMasters, type TestMasters } from './masters.js';

let servers: TestMasters;
beforeAll(async () => {
  servers = await startTestMasters(3);
});
afterAll(() => servers?.close());

it.each(['quit', 'no-quit'])('a process that used Redlock exits by itself after quitting its clients (redlock.quit(): %s)', async (mode) => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/exit-child.ts', mode, ...servers.masters.map((m) => String(m.port))], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // Generous: this only catches a process that never exits, not a slow one.
  const hung = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 20_000).unref());
  const result = await Promise.race([exited, hung]);
  if (result === 'hung') child.kill('SIGKILL');
  expect(result, output).toBe(0);
  expect(output).toContain('done');
});
