/**
 * Whether a command can be started, found as a shell finds it: a name with a `/` as it is, any
 * other as the first executable file along PATH. Told before it is started, because the command
 * starts through a `/bin/sh` trampoline (child.ts), whose own "not found" would not say it in
 * quorumlock's words.
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** Where a shell looks when PATH is unset (dash's and bash's defaults, together). */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** undefined when it can be started; else its exit code (127 not found, 126 not executable) and why. */
export function unstartable(command: string, env: NodeJS.ProcessEnv): { code: 126 | 127; why: string } | undefined {
  const path = env.PATH ?? DEFAULT_PATH;
  const candidates = command.includes('/') ? [command] : path.split(delimiter).map((dir) => join(dir === '' ? '.' : dir, command));
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
    // A script whose `#!` interpreter is missing fails execve(2) as if the script were missing
    // (ENOENT). What then differs by shell: dash goes on along PATH, bash stops at this file.
    // Either way this is the file the user meant: it is refused, in quorumlock's words.
    const interpreter = interpreterOf(candidate);
    if (interpreter === undefined || executable(interpreter)) return undefined;
    const named = interpreter.toString('utf8');
    const crlf = named.endsWith('\r') ? " (the script's lines end in CRLF)" : '';
    return { code: 126, why: `bad interpreter ${JSON.stringify(named)}: not found or not executable${crlf}` };
  }
  return denied ? { code: 126, why: 'permission denied' } : { code: 127, why: 'command not found' };
}

const executable = (path: Buffer): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/**
 * The interpreter path of a `#!` line, as the kernel reads it: the bytes after `#!` and any
 * spaces or tabs, up to the next space, tab, newline or NUL; none without `#!`. Bytes, not text:
 * a path is bytes, and decoding could change them.
 */
function interpreterOf(path: string): Buffer | undefined {
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
  if (length < 2 || bytes[0] !== 0x23 || bytes[1] !== 0x21) return undefined; // '#!'
  const separators = [0x20, 0x09]; // a CRLF line's \r is part of the name the kernel looks for
  let from = 2;
  while (from < length && separators.includes(bytes[from]!)) from++;
  let to = from;
  while (to < length && !separators.includes(bytes[to]!) && bytes[to] !== 0x0a && bytes[to] !== 0) to++;
  // A name cut off by the kernel's 256-byte buffer: execve fails with ENOEXEC and the shell runs
  // the file as a script. Not ours to judge.
  if (to === bytes.length) return undefined;
  return to === from ? undefined : bytes.subarray(from, to);
}
