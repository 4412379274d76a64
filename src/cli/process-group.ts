/**
 * The command's process group: run and elect start the command as the leader of a group of its
 * own (a new session, Node's `detached`), so that a signal reaches everything it started, not
 * only the direct child: `sh -c 'worker & wait'` leaves no worker behind. What escapes: a process
 * that calls setsid() or setpgid() itself (a daemon), which leaves the group on purpose.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessGroup {
  readonly id: number;
  /** Sends `signal` to every process of the group; false when none is left. */
  signal(signal: NodeJS.Signals): boolean;
  /** Whether any process of the group still runs (zombies, dead but not yet reaped, do not count). */
  alive(): boolean;
}

export function processGroup(id: number): ProcessGroup {
  return {
    id,
    signal(signal) {
      try {
        process.kill(-id, signal);
        return true;
      } catch {
        return false;
      }
    },
    alive: () => groupAlive(id),
  };
}

function groupAlive(id: number): boolean {
  try {
    process.kill(-id, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // kill(-id, 0) also succeeds for zombies: a killed grandchild stays one until init reaps it
  // (seconds on some hosts, never under a PID 1 that does not reap). On Linux, /proc tells.
  return process.platform === 'linux' ? liveInProc(id) : true;
}

/** Any process whose /proc/<pid>/stat names group `id` and whose state is not Z (zombie) or X (dead). */
function liveInProc(id: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so read after the last ")".
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === id && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}
