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
  let badInterpreter: string | undefined;
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
    // A script whose `#!` interpreter is missing fails execve(2) as if the script were (ENOENT,
    // EACCES): execvp, and the trampoline's shell, go on along PATH.
    const interpreter = interpreterOf(candidate);
    if (interpreter === undefined || executable(interpreter)) return undefined;
    badInterpreter ??= interpreter;
  }
  if (badInterpreter !== undefined) {
    const crlf = badInterpreter.endsWith('\r') ? " (the script's lines end in CRLF)" : '';
    return { code: 126, why: `bad interpreter ${JSON.stringify(badInterpreter)}: not found or not executable${crlf}` };
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

/** The interpreter path of a `#!` line (the first word after `#!` on the first line, as the kernel reads it), if any. */
function interpreterOf(path: string): string | undefined {
  const bytes = Buffer.alloc(256);
  let length: number;
  try {
    const fd = openSync(path, 'r');
    try {
      length = readSync(fd, bytes, 0, bytes.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined; // not readable by us: execve may still run it (execute-only)
  }
  const head = bytes.subarray(0, length).toString('latin1');
  if (!head.startsWith('#!')) return undefined;
  // The kernel skips spaces and tabs only: a CRLF line's \r is part of the name it looks for.
  const word = /^[ \t]*([^ \t\n]*)/.exec(head.slice(2))![1]!;
  return word === '' ? undefined : word;
}
