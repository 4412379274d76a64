/**
 * How run and elect end after a signal: the way supervisors expect. A process that forwards
 * SIGTERM and then exits 143 is a failed unit to systemd (and 130 after Ctrl-C tells a shell
 * nothing); one killed by SIGTERM is a clean stop. So once the command has ended by the signal
 * quorumlock received, and the lock is released (or the leadership resigned), quorumlock raises
 * that same signal on itself, its handlers gone.
 */
import { FORWARDED, signalCode } from './child.js';

export interface Ending {
  code: number;
  /** Raise this signal on the process, after cleanup, instead of exiting with `code`. */
  signal?: NodeJS.Signals;
}

/**
 * Runs `command`, noting the first forwarded signal (FORWARDED) that arrives meanwhile. Ends by
 * that signal when the command's code says it ended by it (128+n: the command died of it, or the
 * wait was interrupted); a command that caught the signal and chose its own code keeps it.
 */
export async function endingOf(command: () => Promise<number>): Promise<Ending> {
  let received: NodeJS.Signals | undefined;
  const note = (signal: NodeJS.Signals) => (received ??= signal);
  for (const signal of FORWARDED) process.on(signal, note);
  try {
    const code = await command();
    return received !== undefined && code === signalCode(received) ? { code, signal: received } : { code };
  } finally {
    for (const signal of FORWARDED) process.off(signal, note);
  }
}

/** Ends the process as `ending` says: exit code, or its signal raised with the default action. */
export function endWith(ending: Ending): void {
  process.exitCode = ending.code;
  if (ending.signal === undefined) return;
  process.removeAllListeners(ending.signal);
  process.kill(process.pid, ending.signal);
  // Still here (the signal was ignored when quorumlock started): the exit code says the same.
  setImmediate(() => process.exit(ending.code));
}
