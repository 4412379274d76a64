/**
 * The command's process group must not outlive quorumlock: a SIGKILLed `run` or `elect` can stop
 * nothing itself, and its lock (or leadership) then ends by its ttl while the command would go
 * on beside the next holder. A tiny `sh` beside quorumlock, in a session of its own (signals to
 * quorumlock's group or terminal do not reach it), reads a pipe from quorumlock: the group's id,
 * then, on a clean end, "done". quorumlock's death closes the pipe's write end at once, so the
 * watchdog reads end-of-file instead and SIGKILLs the group within milliseconds, polling nothing:
 * well within what the lock still guarantees. Nothing is left to tell how long that is, so there
 * is no SIGTERM first.
 *
 * The command starts only once its group id is written here (child.ts, TRAMPOLINE). What
 * remains: the watchdog itself being killed (quorumlock goes on; its own stopping still works).
 */
import { spawn, type ChildProcess } from 'node:child_process';

// INT, HUP and TERM ignored: it lives exactly as long as quorumlock's end of the pipe.
const SCRIPT = `trap '' INT HUP TERM
read -r group || exit 0
read -r word
[ "$word" = done ] || kill -s KILL -- "-$group" 2>/dev/null
exit 0`;

export interface Watchdog {
  /** The group to kill should quorumlock die. */
  guard(groupId: number): void;
  /** The group is gone (or never started): the watchdog exits without killing. */
  release(): void;
}

export function startWatchdog(): Watchdog {
  let watchdog: ChildProcess | undefined;
  try {
    watchdog = spawn('/bin/sh', ['-c', SCRIPT], { detached: true, stdio: ['pipe', 'ignore', 'ignore'] });
  } catch {
    watchdog = undefined;
  }
  // Neither the process nor its pipe keeps quorumlock's event loop alive.
  watchdog?.on('error', () => {});
  watchdog?.stdin?.on('error', () => {});
  watchdog?.unref();
  (watchdog?.stdin as { unref?: () => void } | null | undefined)?.unref?.();
  const send = (line: string) => {
    if (watchdog?.stdin?.writable) watchdog.stdin.write(line);
  };
  let guarding = false;
  return {
    guard(groupId) {
      guarding = true;
      send(`${groupId}\n`);
    },
    release() {
      // Without a group, end-of-file alone ends the watchdog (its first read fails).
      if (guarding) send('done\n');
      watchdog?.stdin?.end();
    },
  };
}
