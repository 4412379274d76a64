/** `run`: hold a lock across the members while a command runs, like flock(1). */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import { LockAcquireError, LockExtendError, LockLostError, Redlock, type Lock } from '../index.js';
import { isSameServer } from '../errors.js';
import { keepExtended } from '../lock/keep-extended.js';
import { checkExtendThreshold, minTtl } from '../options/check.js';
import { defaults } from '../options/settings.js';
import { describeVotes, type MemberVote } from '../quorum/votes.js';
import { extensionThreshold, followJobControl, FORWARDED, signalCode, spawnChild, SpawnError, type RunningChild, type Stopping } from './child.js';
import { formatMs } from './duration.js';
import { EXIT, RESERVED_EXIT_CODES } from './errors.js';
import { memberStates, statesText, waitReason, type MemberState } from './member-state.js';
import { connect, type Connected, type MemberUrl, type Tls } from './members.js';
import { probe } from './probe.js';
import { quarantineAdvice } from './trust-check.js';

export interface RunOptions {
  members: MemberUrl[];
  resource: string;
  ttl: number;
  wait: number;
  grace: number;
  fencing: boolean;
  maxLockTtl: number;
  /** When a member's restart quarantine counts from (RedlockOptions.quarantine). */
  quarantine: true | 'from-restart';
  nodeTimeout: number;
  /** Exit 0 without a word when another owner holds the lock (cron on several hosts). */
  skipIfLocked: boolean;
  /** The exit code when another owner holds the lock past --wait (flock -E; default 73). */
  conflictExitCode: number;
  /** A shared lock (flock -s): many shared holders at once, or one exclusive holder. */
  shared: boolean;
  /** Hold the lock at least this long from acquisition, ms (0: release when the command exits). */
  atLeast: number;
  tls: Tls;
  json: boolean;
  command: string;
  args: string[];
  /** Where the CLI's own messages go (stderr). */
  err: NodeJS.WriteStream;
}

type Say = (event: string, text: string | undefined, data?: Record<string, unknown>) => void;

/**
 * Problems always show; routine events (acquired, exit, skipped) only as --json lines. Events that
 * end the run carry `exitCode` and `source`: 'command' for the command's own code, 'quorumlock'
 * for the CLI's (usage.ts lists those).
 */
function reporter(options: RunOptions): Say {
  return (event, text, data = {}) => {
    if (options.json) options.err.write(JSON.stringify({ event, resource: options.resource, ...data }) + '\n');
    else if (text !== undefined) options.err.write(`quorumlock: ${text}\n`);
  };
}

/** The last vote of each member, per operation, from the library's 'quorumlock:vote' diagnostics channel. */
function watchVotes() {
  const last = { acquire: new Map<string, MemberVote<string>>(), extend: new Map<string, MemberVote<string>>() };
  const listener = (message: unknown) => {
    const vote = message as MemberVote<string> & { operation: string };
    if (vote.operation === 'acquire' || vote.operation === 'extend') last[vote.operation].set(vote.member, vote);
  };
  subscribe('quorumlock:vote', listener);
  return {
    acquire: () => [...last.acquire.values()],
    extend: () => [...last.extend.values()],
    stop: () => unsubscribe('quorumlock:vote', listener),
  };
}

/** On a terminal, a live "waiting… (why)" line on stderr; nothing otherwise. */
function liveLine(options: RunOptions, why: () => string | undefined) {
  const { err } = options;
  const started = performance.now();
  let ticker: NodeJS.Timeout | undefined;
  const draw = () => {
    const reason = why();
    err.write(`\r\x1b[2Kwaiting for ${options.resource}… ${((performance.now() - started) / 1000).toFixed(1)} s${reason ? ` (${reason})` : ''}`);
  };
  if (err.isTTY && options.wait > 0 && !options.json) {
    ticker = setInterval(draw, 100);
    draw();
  }
  return () => {
    if (ticker === undefined) return;
    clearInterval(ticker);
    ticker = undefined;
    err.write('\r\x1b[2K');
  };
}

/**
 * The clients' connect and command timeout. Commands time out on their own too (Redlock already
 * stops waiting after nodeTimeout), so nothing queued for a dead member outlives the CLI by long.
 */
const connectTimeoutMsOf = (options: RunOptions) => Math.max(1000, options.nodeTimeout * 4);

export async function run(options: RunOptions): Promise<number> {
  const say = reporter(options);
  // Before any connection: a ttl too short to extend is a usage error (RangeError with parameter).
  const timing = { driftFactor: defaults.driftFactor, nodeTimeout: options.nodeTimeout };
  const threshold = extensionThreshold(options.ttl, (value) => checkExtendThreshold(value, options.ttl, timing));
  const connectTimeoutMs = connectTimeoutMsOf(options);
  const connected = connect(options.members, { commandTimeoutMs: connectTimeoutMs, connectTimeoutMs }, options.tls);
  const redlock = new Redlock(connected.clients, { maxLockTtl: options.maxLockTtl, quarantine: options.quarantine, nodeTimeout: options.nodeTimeout });
  const votes = watchVotes();

  // Before the command runs, a signal abandons the wait; afterwards, it is forwarded to the command.
  let running: RunningChild | undefined;
  let interruptedBy: NodeJS.Signals | undefined;
  const waiting = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (running) {
      running.signal(signal);
    } else if (!interruptedBy) {
      interruptedBy = signal;
      waiting.abort(new Error(`interrupted by ${signal}`));
    }
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);
  const stopFollowing = followJobControl(() => running);

  const started = performance.now();
  const clearLine = liveLine(options, () => waitReason(votes.acquire()));
  try {
    // Connected first (or failed, or out of time): the first round's calls wait only --node-timeout.
    await connected.ready(connectTimeoutMs);
    let lock: Lock;
    try {
      lock = await redlock.acquire(options.resource, options.ttl, {
        fencing: options.fencing,
        shared: options.shared,
        signal: waiting.signal,
        ...(options.wait > 0 ? { retryCount: Infinity, waitTimeout: options.wait } : { retryCount: 0 }),
      });
    } catch (error) {
      clearLine();
      if (interruptedBy) {
        say('failed', `interrupted by ${interruptedBy} while waiting for ${options.resource}`, {
          outcome: 'interrupted',
          reason: `interrupted by ${interruptedBy}`,
          exitCode: signalCode(interruptedBy),
          source: 'quorumlock',
        });
        return signalCode(interruptedBy);
      }
      if (error instanceof LockAcquireError) return await notAcquired(error, options, connected, say);
      throw error;
    }
    clearLine();
    say('acquired', undefined, {
      elapsedMs: Math.round(performance.now() - started),
      ...(lock.fence === undefined ? {} : { fence: lock.fence }),
      ...(options.shared ? { shared: true } : {}),
    });
    const stopExtending = keepExtended(lock, options.ttl, threshold, redlock.settings.clock);
    try {
      return await holding({ ...options, thresholdMs: threshold }, lock, redlock, say, votes.extend, (child) => (running = child), stopExtending);
    } finally {
      stopExtending();
    }
  } catch (error) {
    clearLine();
    if (error instanceof SpawnError) {
      say('failed', error.message, { outcome: 'spawn', reason: error.message, exitCode: error.code, source: 'quorumlock' });
      return error.code;
    }
    const message = error instanceof Error ? error.message : String(error);
    say('failed', message, { outcome: 'error', reason: message, exitCode: EXIT.unavailable, source: 'quorumlock' });
    return EXIT.unavailable;
  } finally {
    clearLine();
    votes.stop();
    for (const signal of FORWARDED) process.off(signal, onSignal);
    stopFollowing();
    await redlock.quit();
    connected.close();
  }
}

/** Runs the command under `lock`, then releases it (or, with --at-least, keeps it until its window ends). */
async function holding(
  options: RunOptions & { thresholdMs: number },
  lock: Lock,
  redlock: Redlock,
  say: Say,
  extendVotes: () => MemberVote<string>[],
  onSpawn: (child: RunningChild) => void,
  stopExtending: () => void,
): Promise<number> {
  const acquiredAt = performance.now();
  const onStop = (stop: Stopping) => say('lost', stopText(options, stop, extendVotes()), stopData(stop));
  const onLeftovers = (killAfterMs: number) =>
    say(
      'warning',
      `the command exited, but left processes in its process group: stopping them before the lock on "${options.resource}" is released: SIGTERM now, SIGKILL in ${formatMs(killAfterMs)} at the latest`,
      { reason: 'leftovers', killAfterMs: Math.round(killAfterMs) },
    );
  const child = spawnChild(options, lock, onStop, onLeftovers);
  onSpawn(child);
  let code: number;
  try {
    code = await child.exited;
  } catch (error) {
    await lock.release();
    throw error;
  } finally {
    // Before --at-least's own extension: a watchdog extension queued after it would set the
    // keys' expiry back to the ttl (extensions run in call order).
    stopExtending();
  }
  const stopped = child.stopping();
  if (stopped || lock.signal.aborted) {
    await lock.release();
    say('exit', stopped?.why === 'failing' ? 'the lock could not be kept while the command ran' : 'the lock was lost while the command ran', {
      exitCode: EXIT.lost,
      source: 'quorumlock',
      commandExitCode: code,
    });
    return EXIT.lost;
  }
  const keptMs = await keepUntilAtLeast(options, lock, redlock, acquiredAt, say);
  if (keptMs === undefined) await lock.release();
  const collides = RESERVED_EXIT_CODES.includes(code);
  say('exit', collides ? `note: the command itself exited ${code}, which is also one of quorumlock's own exit codes (quorumlock --help)` : undefined, {
    exitCode: code,
    source: 'command',
    ...(keptMs === undefined ? {} : { keptLockMs: Math.round(keptMs) }),
  });
  return code;
}

/**
 * --at-least: a command that finished early does not release; the lock is extended once more so
 * that it expires `atLeast` after it was acquired (ShedLock's lockAtLeastFor), and the CLI exits.
 * Returns how long the lock stays, or undefined when it should be released now.
 */
async function keepUntilAtLeast(options: RunOptions, lock: Lock, redlock: Redlock, acquiredAt: number, say: Say): Promise<number | undefined> {
  const leftMs = options.atLeast - (performance.now() - acquiredAt);
  if (options.atLeast === 0 || leftMs <= 0) return undefined;
  // Never shorter than the shortest ttl a lock may have: a few ms longer is still "at least".
  const ttl = Math.max(Math.ceil(leftMs), minTtl(redlock.settings));
  try {
    await lock.extend(ttl);
    return ttl;
  } catch (error) {
    // Not released either: the keys stay until the ttl of the last extension runs out.
    const why = error instanceof LockExtendError ? error.message : String(error);
    say('warning', `could not keep the lock on "${options.resource}" for --at-least (${why}); it expires by its ttl instead`, { reason: why });
    return lock.remainingMs();
  }
}

const lossWords: Record<LockLostError['lostBecause'], string> = {
  expired: 'its validity ran out before an extension succeeded',
  gone: 'its keys are gone on too many members (expired, evicted, deleted or forgotten)',
  taken: 'another owner holds it',
  lapsed: 'an extension came only after the validity had run out',
  late: 'an extension came too late to leave any validity',
};

function stopText(options: RunOptions, stop: Stopping, extendVotes: MemberVote<string>[]): string {
  const kill = stop.killAfterMs === 0 ? 'SIGKILL now' : `SIGKILL in ${formatMs(stop.killAfterMs)}`;
  if (stop.why === 'failing') {
    const votes = extendVotes.length > 0 ? ` (last try: ${describeVotes(extendVotes)})` : '';
    return `the lock on "${options.resource}" could not be extended${votes} and is guaranteed for only ${formatMs(stop.leftMs)} more: stopping the command: SIGTERM now, ${kill}, by the lock's deadline`;
  }
  const reason = stop.reason;
  const why = reason instanceof LockLostError ? lossWords[reason.lostBecause] : reason instanceof Error ? reason.message : 'unknown';
  const detail =
    reason instanceof LockLostError && reason.cause instanceof LockExtendError && reason.cause.votes.length > 0
      ? ` (${describeVotes(reason.cause.votes)})`
      : '';
  return `lost the lock on "${options.resource}": ${why}${detail}; stopping the command: SIGTERM now, ${kill}`;
}

function stopData(stop: Stopping): Record<string, unknown> {
  const reason = stop.reason;
  return {
    why: stop.why,
    ...(reason instanceof LockLostError ? { lostBecause: reason.lostBecause, reason: reason.message } : {}),
    leftMs: Math.round(stop.leftMs),
    killAfterMs: Math.round(stop.killAfterMs),
  };
}

/** The lock was not had: 73 when another owner holds it (0 with --skip-if-locked), 69 otherwise; each member named with its state. */
async function notAcquired(error: LockAcquireError, options: RunOptions, connected: Connected, say: Say): Promise<number> {
  const last = error.attempts[error.attempts.length - 1];
  const states = memberStates(
    options.members.map((member) => member.name),
    connected.clients.map((client, index) => ({ client, lastError: connected.lastError[index], commandTimeoutMs: connectTimeoutMsOf(options) })),
    last?.votes,
    options.nodeTimeout,
  );
  const held = error.outcome === 'taken';
  if (held && options.skipIfLocked) {
    say('skipped', undefined, { outcome: error.outcome, reason: 'held by another owner', exitCode: EXIT.ok, source: 'quorumlock' });
    return EXIT.ok;
  }
  const code = held ? options.conflictExitCode : EXIT.unavailable;
  // Quarantined: whether trust may be named at all depends on what the members' epochs show.
  const advice =
    error.outcome === 'quarantined'
      ? quarantineAdvice(
          await Promise.all(
            connected.clients.map((client, index) =>
              probe(client, options.members[index]!.name, { maxLockTtl: options.maxLockTtl, timeoutMs: connectTimeoutMsOf(options) }),
            ),
          ),
          options.maxLockTtl,
        )
      : undefined;
  const reason = acquireReason(error, options, advice?.text);
  const members: MemberState[] = states;
  say('failed', `${reason}\n${statesText(states)}`, { outcome: error.outcome, reason, members, exitCode: code, source: 'quorumlock' });
  return code;
}

function acquireReason(error: LockAcquireError, options: RunOptions, quarantineAdvice: string | undefined): string {
  const name = `could not lock "${options.resource}"`;
  const count = options.members.length;
  const quorum = Math.floor(count / 2) + 1;
  const tries = `${error.attempts.length} attempt${error.attempts.length === 1 ? '' : 's'} in ${formatMs(error.elapsedMs)}`;
  switch (error.outcome) {
    case 'taken':
      return options.wait > 0
        ? `${name}: it is held by another owner, and was not freed within --wait ${formatMs(options.wait)} (${tries})`
        : `${name}: it is held by another owner. To wait in line for it instead, add --wait <duration>, e.g. --wait 5m`;
    case 'unavailable':
      // A won round: its fence round failed, where a member whose copy of the lock is gone counts no more than a silent one (fence.ts).
      if ((error.attempts.at(-1)?.votes.filter((vote) => vote.vote === 'locked').length ?? 0) >= quorum)
        return `${name}: locked, but too few members answered the fence round or still held the lock then (a key evicted or deleted meanwhile) to issue a token (${quorum} of ${count} needed; ${tries})`;
      return `${name}: too few members answered for a quorum (${quorum} of ${count} needed; ${tries})`;
    case 'quarantined': {
      // One server under two names is one failure domain: no wait and no trust makes it count twice.
      const duplicates = (error.attempts.at(-1)?.votes ?? []).filter((vote) => isSameServer(vote.notCounting));
      if (duplicates.length > 0)
        return `${name}: too few members count toward a quorum (${quorum} of ${count} needed): ${duplicates.map((vote) => `${vote.member} is ${vote.notCounting}`).join('; ')}. List each server once (QUORUMLOCK_MEMBERS, --members)`;
      return `${name}: too few members count toward a quorum (${quorum} of ${count} needed): members whose data is younger than --max-lock-ttl (restarted, flushed or new) count only once it has passed; ${quarantineAdvice ?? 'see quorumlock members'}`;
    }
    case 'unfenced':
      return `${name}: locked, but too few members have trusted fence counters to issue a token (--fencing). A member restarted empty counts again once a fenced lock is taken while a quorum of the others is trusted; if a majority lost its data at once, run quorumlock restore-fencing --floor N, with N at or above every token ever issued (not quorumlock trust: docs/operations.md)`;
    default:
      return error.message;
  }
}
