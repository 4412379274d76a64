/**
 * The locked command: spawned with the lock's environment, and stopped by the lock's deadline.
 *
 * run extends the lock when its remaining validity falls to the extension threshold (2/3 ttl:
 * every third of the ttl), so while all is well the validity stays above about that. The stop
 * window (stopWindowMs) lies below what a successful extension or one retry of a failed one
 * leaves: only when extensions keep failing does the validity fall into it. Then the command gets
 * SIGTERM, and SIGKILL lands just before the deadline, when another owner may take the lock (or
 * --grace after the SIGTERM, if an extension succeeded meanwhile). A lock lost outright (its
 * signal aborts: the validity is over, or a quorum said the keys are gone or taken) guarantees
 * nothing more: SIGTERM and SIGKILL at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';
import type { Lock } from '../index.js';
import { unstartable } from './command-path.js';
import { processGroup } from './process-group.js';
import { startWatchdog } from './watchdog.js';

/** The signals run and elect forward to their command (and that end a wait before it runs). */
export const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Job control. The command runs in a session of its own (watchdog.ts), so a terminal's Ctrl-Z
 * (SIGTSTP; SIGTTIN and SIGTTOU alike) reaches quorumlock alone: stopped, it extends nothing, and
 * the command would run on past the lock's end beside the next holder. So the command's group is
 * stopped first, then quorumlock; SIGCONT (fg, bg) continues the group. A lock that ran out
 * meanwhile is lost at the next extension, as after any stall, and the command is stopped.
 * Returns the function that removes the handlers.
 */
export function followJobControl(running: () => RunningChild | undefined): () => void {
  const stop = () => {
    running()?.signal('SIGSTOP');
    process.kill(process.pid, 'SIGSTOP');
  };
  const resume = () => running()?.signal('SIGCONT');
  for (const signal of JOB_STOPS) process.on(signal, stop);
  process.on('SIGCONT', resume);
  return () => {
    for (const signal of JOB_STOPS) process.off(signal, stop);
    process.off('SIGCONT', resume);
  };
}
const JOB_STOPS = ['SIGTSTP', 'SIGTTIN', 'SIGTTOU'] as const;

export const signalCode = (signal: NodeJS.Signals) => 128 + (constants.signals[signal] ?? 0);

/** SIGKILL goes out this long before the deadline, so that it lands (and the process dies) by then. */
const KILL_MARGIN_MS = 20;

/** The command could not be started: 127 (not found) or 126. */
export class SpawnError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

export interface ChildOptions {
  command: string;
  args: string[];
  resource: string;
  ttl: number;
  grace: number;
  /** The validity at which run extends the lock (extensionThreshold). */
  thresholdMs: number;
  nodeTimeout: number;
  /** More environment for the command (elect: QUORUMLOCK_TERM). */
  env?: Readonly<Record<string, string>>;
}

/** What spawnChild reads of the lock: a Lock, or a view of one (elect passes its leadership's). */
export type ChildLock = Pick<Lock, 'fence' | 'remainingMs' | 'signal'>;

/** Why the command is being stopped: 'failing' (extensions fail, the deadline is near) or 'lost' (the lock's signal aborted). */
export interface Stopping {
  why: 'failing' | 'lost';
  /** The lock's signal reason, for 'lost'. */
  reason?: unknown;
  /** Validity left when the stop began, ms. */
  leftMs: number;
  /** Time from SIGTERM to SIGKILL, ms. */
  killAfterMs: number;
}

/**
 * The stop window: how much validity may be left when a failing lock makes run stop the command.
 * min(--grace, threshold/2 − 2 × nodeTimeout): an extension that fails at the threshold is retried
 * when 3/4 of what was left remains (keep-extended.ts), and that retry's round (≤ nodeTimeout)
 * must end before the window is reached, as must every extension that succeeds (one round from the
 * threshold). 0 when the ttl leaves no such room: then SIGTERM and SIGKILL go together, just
 * before the deadline.
 */
export const stopWindowMs = (thresholdMs: number, grace: number, nodeTimeout: number) =>
  Math.max(0, Math.min(grace, Math.floor(thresholdMs / 2 - 2 * nodeTimeout)));

/**
 * Extend when 2/3 of the ttl is left (every third of it), leaving the stop window room for a few
 * retries; ttl/3, the library's default, when the ttl is too short for that.
 */
export function extensionThreshold(ttl: number, check: (threshold: number | undefined) => number): number {
  try {
    return check(Math.floor((ttl * 2) / 3));
  } catch {
    return check(undefined);
  }
}

export interface RunningChild {
  /**
   * The command's exit code (128+n for signal n), once nothing of its process group runs any
   * more; rejects with a SpawnError.
   */
  exited: Promise<number>;
  /** Set once the command is being stopped for the lock's sake. */
  stopping(): Stopping | undefined;
  /** Sends `signal` to the command and everything in its process group (a signal run or elect received). */
  signal(signal: NodeJS.Signals): void;
}

/**
 * The command starts through this: a shell, already the leader of the new group, that waits on
 * fd 3 for quorumlock's "go", then becomes the command (exec, same pid, argv as given). quorumlock
 * says "go" once the watchdog knows the group: a quorumlock killed before that (it may be
 * descheduled for a while right after the spawn) leaves end-of-file on fd 3, and the command never
 * starts, rather than starting unguarded.
 */
const TRAMPOLINE = 'read -r go <&3 || exit 0; exec "$@" 3<&-';

function spawnHeld(options: ChildOptions, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn('/bin/sh', ['-c', TRAMPOLINE, 'quorumlock', options.command, ...options.args], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env,
    detached: true,
  });
}

/** Process groups and kill(-group) are POSIX; on Windows only the direct child is signalled. */
const GROUPS = process.platform !== 'win32';

/** How often a group whose leader exited is checked for what it left, ms. */
const LEFTOVER_POLL_MS = 25;

/** After the group's SIGKILL, how long a process in uninterruptible sleep may keep the lock held, ms. */
const AFTER_KILL_MS = 1000;

/**
 * Runs the command as the leader of its own process group (process-group.ts), guarded by a
 * watchdog that kills the group should quorumlock die (watchdog.ts). Whatever the command leaves
 * in its group when it exits gets SIGTERM, and SIGKILL by --grace or the lock's deadline, before
 * `exited` resolves: the lock is released only once nothing it protected still runs
 * (`onLeftovers` says when that happens).
 */
export function spawnChild(
  options: ChildOptions,
  lock: ChildLock,
  onStop: (stop: Stopping) => void,
  onLeftovers: (killAfterMs: number) => void = () => {},
): RunningChild {
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env, QUORUMLOCK_RESOURCE: options.resource };
  delete env.QUORUMLOCK_FENCE;
  if (lock.fence !== undefined) env.QUORUMLOCK_FENCE = String(lock.fence);
  // The trampoline would start even a missing command, and say so in its own words: checked first.
  const cannot = GROUPS ? unstartable(options.command, env) : undefined;
  if (cannot) {
    const failed = Promise.reject(new SpawnError(`${options.command}: ${cannot.why}`, cannot.code));
    return { exited: failed, stopping: () => undefined, signal: () => {} };
  }
  const watchdog = GROUPS ? startWatchdog() : undefined;
  const child = GROUPS ? spawnHeld(options, env) : spawn(options.command, options.args, { stdio: 'inherit', env });
  const group = GROUPS && child.pid !== undefined ? processGroup(child.pid) : undefined;
  if (group) {
    watchdog?.guard(group.id);
    // Only now, with the watchdog told its group, may the command start (TRAMPOLINE).
    const go = child.stdio[3] as Writable | null | undefined;
    go?.on('error', () => {});
    go?.end('go\n');
  }
  const leaderRunning = () => child.exitCode === null && child.signalCode === null;
  const signalAll = (signal: NodeJS.Signals) => {
    if (group) group.signal(signal);
    else if (leaderRunning()) child.kill(signal);
  };
  let stopping: Stopping | undefined;
  /** When SIGTERM went to the group (ours, or one forwarded). */
  let termAt: number | undefined;
  /** When the command was first asked to stop (that SIGTERM, or a forwarded SIGINT): its --grace runs from there. */
  let graceFrom: number | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let killAt = Infinity;
  let killedAt: number | undefined;
  let checkTimer: NodeJS.Timeout | undefined;
  let pollTimer: NodeJS.Timeout | undefined;

  /**
   * SIGKILL at min(SIGTERM + grace, the deadline − margin), re-armed as the deadline moves: an
   * extension that succeeds after the SIGTERM gives the command its grace back (the lock still
   * protects it); a loss, or a deadline moved earlier, brings the SIGKILL forward.
   */
  const armKill = () => {
    const now = performance.now();
    const at = Math.min((graceFrom ?? now) + options.grace, now + Math.max(0, lock.remainingMs() - KILL_MARGIN_MS));
    if (at === killAt) return;
    killAt = at;
    clearTimeout(killTimer);
    killTimer = setTimeout(
      () => {
        killedAt ??= performance.now();
        signalAll('SIGKILL');
      },
      Math.max(0, at - now),
    );
  };

  /** SIGTERM once, then the SIGKILL armed. */
  const stop = (why: Stopping['why'], reason?: unknown) => {
    if (stopping === undefined) {
      const leftMs = lock.remainingMs();
      stopping = { why, leftMs, killAfterMs: Math.min(options.grace, Math.max(0, leftMs - KILL_MARGIN_MS)), ...(reason === undefined ? {} : { reason }) };
      onStop(stopping);
      if (termAt === undefined) {
        termAt = performance.now();
        signalAll('SIGTERM');
      }
      graceFrom ??= termAt;
    }
    armKill();
  };

  const windowMs = stopWindowMs(options.thresholdMs, options.grace, options.nodeTimeout);
  // Re-checked at least every ttl/10: a failed extension may also have moved the deadline earlier.
  const checkEveryMs = Math.max(5, Math.floor(options.ttl / 10));
  let settled = false;
  const check = () => {
    if (settled) return;
    const left = lock.remainingMs();
    if (stopping) armKill();
    else if (left - KILL_MARGIN_MS <= windowMs) stop('failing');
    // Asked to stop by a forwarded signal: the SIGKILL follows the deadline as it moves.
    else if (graceFrom !== undefined) armKill();
    // Checked in setImmediate after the timer: after a stall, Node runs expired timers before it
    // reads replies that arrived meanwhile, such as the extension that moved the deadline.
    checkTimer = setTimeout(() => setImmediate(check), stopping ? checkEveryMs : Math.max(5, Math.min(left - KILL_MARGIN_MS - windowMs, checkEveryMs)));
  };
  // A lost lock guarantees nothing more (remainingMs() is 0): SIGTERM, and SIGKILL at once.
  const onAbort = () => stop('lost', lock.signal.reason);
  check();
  if (lock.signal.aborted) onAbort();
  else lock.signal.addEventListener('abort', onAbort, { once: true });

  const settle = () => {
    settled = true;
    lock.signal.removeEventListener('abort', onAbort);
    clearTimeout(checkTimer);
    clearTimeout(killTimer);
    clearTimeout(pollTimer);
    watchdog?.release();
  };
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      settle();
      if (error.code === 'ENOENT') reject(new SpawnError(`${options.command}: command not found`, 127));
      else if (error.code === 'EACCES') reject(new SpawnError(`${options.command}: permission denied`, 126));
      else reject(new SpawnError(`${options.command}: ${error.message}`, 126));
    });
    child.once('exit', (code, killedBy) => {
      const exitCode = code ?? (killedBy ? signalCode(killedBy) : 1);
      const finish = () => {
        settle();
        resolve(exitCode);
      };
      if (!group?.alive()) return finish();
      // The command exited, but left processes in its group (`sh -c 'worker &'`): they are
      // stopped as the command would be, while the lock still protects them.
      if (termAt === undefined) {
        termAt = performance.now();
        onLeftovers(Math.min(options.grace, Math.max(0, lock.remainingMs() - KILL_MARGIN_MS)));
        signalAll('SIGTERM');
      }
      graceFrom ??= termAt;
      armKill();
      const poll = () => {
        if (!group.alive() || (killedAt !== undefined && performance.now() - killedAt > AFTER_KILL_MS)) finish();
        else pollTimer = setTimeout(poll, LEFTOVER_POLL_MS);
      };
      poll();
    });
  });
  /**
   * A signal run or elect received, to the whole group. After SIGTERM or SIGINT (a stop: systemd,
   * Ctrl-C) the command gets --grace, then SIGKILL, as when the lock stops it; not after SIGHUP,
   * which daemons take as "reload".
   */
  const forward = (signal: NodeJS.Signals) => {
    if (settled) return; // the command and its group are gone
    signalAll(signal);
    if (signal !== 'SIGTERM' && signal !== 'SIGINT') return;
    const now = performance.now();
    if (signal === 'SIGTERM') termAt ??= now;
    graceFrom ??= now;
    armKill();
  };
  return { exited, stopping: () => stopping, signal: forward };
}
