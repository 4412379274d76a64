/** `run`: hold a lock across the members while a command runs, like flock(1). */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { performance } from 'node:perf_hooks';
import { LockAcquireError, LockLostError, Redlock, type Lock } from '../index.js';
import { formatMs } from './duration.js';
import { EXIT } from './errors.js';
import { connect, type MemberUrl } from './members.js';

export interface RunOptions {
  members: MemberUrl[];
  resource: string;
  ttl: number;
  wait: number;
  grace: number;
  fencing: boolean;
  maxLockTtl: number;
  nodeTimeout: number;
  json: boolean;
  command: string;
  args: string[];
  /** Where the CLI's own messages go (stderr). */
  err: NodeJS.WriteStream;
}

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const signalCode = (signal: NodeJS.Signals) => 128 + (constants.signals[signal] ?? 0);

export async function run(options: RunOptions): Promise<number> {
  const { err } = options;
  // Problems always show; routine events (acquired, exit) only as --json lines.
  const say = (event: string, text: string, data: Record<string, unknown> = {}) => {
    if (options.json) err.write(JSON.stringify({ event, resource: options.resource, ...data }) + '\n');
    else if (event !== 'acquired' && event !== 'exit') err.write(`quorumlock: ${text}\n`);
  };

  // Commands time out on their own too (Redlock already stops waiting after nodeTimeout), so
  // nothing queued for a dead member outlives the CLI by long.
  const connectTimeoutMs = Math.max(1000, options.nodeTimeout * 4);
  const connected = connect(options.members, { commandTimeoutMs: connectTimeoutMs, connectTimeoutMs });
  const redlock = new Redlock(connected.clients, { maxLockTtl: options.maxLockTtl, nodeTimeout: options.nodeTimeout });

  // Before the command runs, a signal abandons the wait; afterwards, it is forwarded to the command.
  let child: ChildProcess | undefined;
  let interruptedBy: NodeJS.Signals | undefined;
  const waiting = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (child) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    } else if (!interruptedBy) {
      interruptedBy = signal;
      waiting.abort(new Error(`interrupted by ${signal}`));
    }
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);

  // On a terminal, a live "waiting…" line; nothing otherwise.
  const started = performance.now();
  let ticker: NodeJS.Timeout | undefined;
  const live = err.isTTY && options.wait > 0 && !options.json;
  const clearLine = () => {
    if (ticker === undefined) return;
    clearInterval(ticker);
    ticker = undefined;
    err.write('\r\x1b[2K');
  };
  if (live) {
    const draw = () => err.write(`\r\x1b[2Kwaiting for ${options.resource}… ${(Math.max(0, performance.now() - started) / 1000).toFixed(1)} s`);
    ticker = setInterval(draw, 100);
    draw();
  }

  let lost: LockLostError | undefined;
  try {
    // Connected first (or failed, or out of time): the first round's calls wait only --node-timeout.
    await connected.ready(connectTimeoutMs);
    const code = await redlock.using(
      options.resource,
      options.ttl,
      (signal, lock) => {
        clearLine();
        say('acquired', `locked ${options.resource} in ${formatMs(performance.now() - started)}${lock.fence === undefined ? '' : `, fence ${lock.fence}`}`, {
          elapsedMs: Math.round(performance.now() - started),
          ...(lock.fence === undefined ? {} : { fence: lock.fence }),
        });
        return runChild(
          options,
          lock,
          signal,
          (spawned) => (child = spawned),
          (reason) => {
            lost = reason;
            say('lost', `lock on ${options.resource} lost (${reason.message}); sending SIGTERM to the command, SIGKILL after ${formatMs(options.grace)}`, {
              reason: reason.message,
            });
          },
        );
      },
      {
        fencing: options.fencing,
        signal: waiting.signal,
        ...(options.wait > 0 ? { retryCount: Infinity, waitTimeout: options.wait } : { retryCount: 0 }),
      },
    );
    if (lost) {
      say('exit', 'the lock was lost while the command ran', { exitCode: EXIT.lost });
      return EXIT.lost;
    }
    say('exit', `command exited with ${code}`, { exitCode: code });
    return code;
  } catch (error) {
    clearLine();
    if (error instanceof LockLostError || lost) {
      say('exit', 'the lock was lost while the command ran', { exitCode: EXIT.lost });
      return EXIT.lost;
    }
    if (interruptedBy && !child) {
      say('failed', `interrupted by ${interruptedBy} while waiting for ${options.resource}`, { exitCode: signalCode(interruptedBy) });
      return signalCode(interruptedBy);
    }
    if (error instanceof LockAcquireError) {
      const held = error.outcome === 'taken';
      const code = held ? EXIT.notAcquired : EXIT.unavailable;
      const hint = error.outcome === 'quarantined' ? ' (brand-new masters: run `quorumlock trust` once; see --help)' : '';
      say('failed', `${error.message}${hint}`, { outcome: error.outcome, exitCode: code });
      return code;
    }
    if (error instanceof SpawnError) {
      say('failed', error.message, { exitCode: error.code });
      return error.code;
    }
    const message = error instanceof Error ? error.message : String(error);
    say('failed', message, { exitCode: EXIT.unavailable });
    return EXIT.unavailable;
  } finally {
    clearLine();
    for (const signal of FORWARDED) process.off(signal, onSignal);
    await redlock.quit();
    connected.close();
  }
}

class SpawnError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Spawns the command; resolves with its exit code (128+n for signal n). Terminates it when `signal` aborts. */
function runChild(
  options: RunOptions,
  lock: Lock,
  signal: AbortSignal,
  onSpawn: (child: ChildProcess) => void,
  onLost: (reason: LockLostError) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, QUORUMLOCK_RESOURCE: options.resource };
    delete env.QUORUMLOCK_FENCE;
    if (lock.fence !== undefined) env.QUORUMLOCK_FENCE = String(lock.fence);
    const child = spawn(options.command, options.args, { stdio: 'inherit', env });
    onSpawn(child);
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      onLost(signal.reason instanceof LockLostError ? signal.reason : new LockLostError(lock.resources, 'extension failed', { cause: signal.reason }));
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), options.grace);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    child.once('error', (error: NodeJS.ErrnoException) => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(killTimer);
      if (error.code === 'ENOENT') reject(new SpawnError(`${options.command}: command not found`, 127));
      else if (error.code === 'EACCES') reject(new SpawnError(`${options.command}: permission denied`, 126));
      else reject(new SpawnError(`${options.command}: ${error.message}`, 126));
    });
    child.once('exit', (code, killedBy) => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(killTimer);
      resolve(code ?? (killedBy ? signalCode(killedBy) : 1));
    });
  });
}
