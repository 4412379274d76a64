/**
 * The locked command: spawned with the lock's environment, and stopped by the lock's deadline.
 *
 * run extends the lock when its remaining validity falls to the extension threshold (2/3 ttl:
 * every third of the ttl), so while all is well the validity stays above about that. The stop
 * window is min(--grace, 3/4 of the threshold), i.e. min(--grace, ttl/2): only when extensions
 * keep failing does the validity fall into it. Then the command gets SIGTERM, and SIGKILL lands just before
 * the deadline, when another owner may take the lock. A lock lost outright (its signal aborts)
 * gets SIGTERM at once and SIGKILL after --grace capped by whatever validity is left (at once
 * when none is).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Lock } from '../index.js';

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
}

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

/** min(grace, 3/4 threshold), ttl/2 for the usual threshold: never reached while extensions succeed. */
export const stopWindowMs = (thresholdMs: number, grace: number) => Math.min(grace, Math.floor((thresholdMs * 3) / 4));

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
  child: ChildProcess;
  /** The exit code (128+n for signal n); rejects with a SpawnError. */
  exited: Promise<number>;
  /** Set once the command is being stopped for the lock's sake. */
  stopping(): Stopping | undefined;
}

export function spawnChild(options: ChildOptions, lock: Lock, onStop: (stop: Stopping) => void): RunningChild {
  const env: NodeJS.ProcessEnv = { ...process.env, QUORUMLOCK_RESOURCE: options.resource };
  delete env.QUORUMLOCK_FENCE;
  if (lock.fence !== undefined) env.QUORUMLOCK_FENCE = String(lock.fence);
  const child = spawn(options.command, options.args, { stdio: 'inherit', env });
  const running = () => child.exitCode === null && child.signalCode === null;
  let stopping: Stopping | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let killAt = Infinity;
  let checkTimer: NodeJS.Timeout | undefined;

  /** SIGTERM once; SIGKILL after `killAfterMs`, or sooner if already due sooner. */
  const stop = (why: Stopping['why'], killAfterMs: number, reason?: unknown) => {
    const first = stopping === undefined;
    if (first) {
      stopping = { why, leftMs: lock.remainingMs(), killAfterMs, ...(reason === undefined ? {} : { reason }) };
      onStop(stopping);
      if (running()) child.kill('SIGTERM');
    }
    const at = performance.now() + killAfterMs;
    if (at >= killAt) return;
    killAt = at;
    clearTimeout(killTimer);
    killTimer = setTimeout(() => running() && child.kill('SIGKILL'), killAfterMs);
  };

  const windowMs = stopWindowMs(options.thresholdMs, options.grace);
  // Re-checked at least every ttl/10: a failed extension may also have moved the deadline earlier.
  const checkEveryMs = Math.max(5, Math.floor(options.ttl / 10));
  const check = () => {
    if (lock.signal.aborted) return;
    const left = lock.remainingMs();
    if (left <= windowMs) return stop('failing', Math.max(0, left - KILL_MARGIN_MS));
    checkTimer = setTimeout(check, Math.max(5, Math.min(left - windowMs, checkEveryMs)));
  };
  const onAbort = () => {
    clearTimeout(checkTimer);
    stop('lost', Math.min(options.grace, Math.max(0, lock.remainingMs() - KILL_MARGIN_MS)), lock.signal.reason);
  };
  if (windowMs > 0) check();
  if (lock.signal.aborted) onAbort();
  else lock.signal.addEventListener('abort', onAbort, { once: true });

  const settle = () => {
    lock.signal.removeEventListener('abort', onAbort);
    clearTimeout(checkTimer);
    clearTimeout(killTimer);
  };
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      settle();
      if (error.code === 'ENOENT') reject(new SpawnError(`${options.command}: command not found`, 127));
      else if (error.code === 'EACCES') reject(new SpawnError(`${options.command}: permission denied`, 126));
      else reject(new SpawnError(`${options.command}: ${error.message}`, 126));
    });
    child.once('exit', (code, killedBy) => {
      settle();
      resolve(code ?? (killedBy ? signalCode(killedBy) : 1));
    });
  });
  return { child, exited, stopping: () => stopping };
}
