/**
 * Whether a command can be started, found as execvp(3) finds it: a name with a `/` as it is, any
 * other along PATH. Told before it is started, because the command starts through a `/bin/sh`
 * trampoline (child.ts), whose own "not found" would not say it in quorumlock's words.
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** undefined when it can be started; else its exit code (127 not found, 126 not executable) and why. */
export function unstartable(command: string, env: NodeJS.ProcessEnv): { code: 126 | 127; why: string } | undefined {
  const candidates = command.includes('/') ? [command] : (env.PATH ?? '').split(delimiter).map((dir) => join(dir === '' ? '.' : dir, command));
  let denied = false;
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
    } catch {
      continue;
    }
    try {
      accessSync(candidate, constants.X_OK);
    } catch {
      denied = true;
      continue;
    }
    // A script whose `#!` interpreter is missing fails execve(2) as if the script were (ENOENT).
    const interpreter = interpreterOf(candidate);
    if (interpreter !== undefined && !executable(interpreter)) return { code: 126, why: `bad interpreter ${interpreter}: not found or not executable` };
    return undefined;
  }
  return denied ? { code: 126, why: 'permission denied' } : { code: 127, why: 'command not found' };
}

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/** The interpreter path of a `#!` line (the kernel reads the first line's first word after `#!`), if any. */
function interpreterOf(path: string): string | undefined {
  const head = Buffer.alloc(256);
  let length: number;
  try {
    const fd = openSync(path, 'r');
    try {
      length = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined; // not readable by us: execve may still run it (execute-only)
  }
  const line = head.subarray(0, length).toString('latin1');
  if (!line.startsWith('#!')) return undefined;
  const end = line.indexOf('\n');
  const word = (end === -1 ? line.slice(2) : line.slice(2, end)).trim().split(/[ \t]/)[0];
  return word === undefined || word === '' ? undefined : word;
}
