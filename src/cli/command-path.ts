/**
 * Whether a command can be started, found as execvp(3) finds it: a name with a `/` as it is, any
 * other along PATH. Told before it is started, because the command starts through a `/bin/sh`
 * trampoline (child.ts), whose own "not found" would not say it in quorumlock's words.
 */
import { accessSync, constants, statSync } from 'node:fs';
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
      return undefined;
    } catch {
      denied = true;
    }
  }
  return denied ? { code: 126, why: 'permission denied' } : { code: 127, why: 'command not found' };
}
