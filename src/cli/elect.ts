/**
 * `elect`: run a command only while this process leads an election (docs/elections.md).
 *
 * Campaign (wait in the election's fair line); once elected, run the command with
 * QUORUMLOCK_TERM (and QUORUMLOCK_FENCE, the same token) in its environment, stopped the way
 * `run` stops its command by the lock's deadline (child.ts): SIGTERM when extensions keep
 * failing and the validity left falls into the stop window, SIGTERM then SIGKILL by the deadline
 * once the leadership ends (the election's stop margin, ttl/5 before the deadline, or a lost
 * lock). After a lost leadership, campaign again. The command exiting on its own while leading
 * ends elect with its exit code (after resigning). SIGINT/SIGTERM/SIGHUP: forwarded to the
 * command, after which elect resigns and exits with the command's code; while campaigning, they
 * end the campaign (128+n).
 */
import type { ParseArgsConfig } from 'node:util';
import { commonFlags, parse, quarantineOf, required } from './args.js';
import { LeadershipLostError, Redlock, type Leadership } from '../index.js';
import { defaults } from '../options/settings.js';
import { EXTEND_SHARE } from '../election/leadership.js';
import { watchCampaign } from './campaign-wait.js';
import { followJobControl, FORWARDED, signalCode, spawnChild, SpawnError, type ChildLock, type RunningChild } from './child.js';
import { formatMs, parseDuration } from './duration.js';
import { EXIT, UsageError } from './errors.js';
import { connect, parseMembers, readTls, type MemberUrl, type Tls } from './members.js';

export interface ElectOptions {
  members: MemberUrl[];
  name: string;
  ttl: number;
  /** The candidate's id (leader().id); default <hostname>:<pid>. */
  id: string | undefined;
  grace: number;
  maxLockTtl: number;
  /** When a member's restart quarantine counts from (RedlockOptions.quarantine). */
  quarantine: true | 'from-restart';
  nodeTimeout: number;
  tls: Tls;
  json: boolean;
  command: string;
  args: string[];
  err: NodeJS.WriteStream;
}

const electOptions = {
  ...commonFlags,
  name: { type: 'string' },
  ttl: { type: 'string' },
  id: { type: 'string' },
  grace: { type: 'string' },
  'node-timeout': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** Parses `elect`'s arguments (usage errors name the flag), then runs it. `help` prints the usage. */
export async function electCommand(args: string[], help: () => number): Promise<number> {
  const split = args.indexOf('--');
  const own = split === -1 ? args : args.slice(0, split);
  const { values, positionals } = parse(own, electOptions, 'elect');
  if (values.help) return help();
  if (positionals.length > 0)
    throw new UsageError(
      `elect: unexpected argument "${positionals[0]}": put the command after --, e.g. quorumlock elect --name scheduler --ttl 10s -- ./scheduler`,
    );
  const name = required(values.name, '--name', 'elect');
  const ttl = parseDuration('--ttl', required(values.ttl, '--ttl', 'elect'));
  const command = split === -1 ? [] : args.slice(split + 1);
  if (command.length === 0) throw new UsageError('elect: no command: put it after --, e.g. quorumlock elect --name scheduler --ttl 10s -- ./scheduler', '--');
  const maxLockTtl = values['max-lock-ttl'] === undefined ? Math.max(defaults.maxLockTtl, ttl) : parseDuration('--max-lock-ttl', values['max-lock-ttl']);
  if (ttl > maxLockTtl) throw new UsageError(`elect: --ttl (${ttl} ms) must not exceed --max-lock-ttl (${maxLockTtl} ms)`, '--ttl');
  const nodeTimeout = values['node-timeout'] === undefined ? 50 : parseDuration('--node-timeout', values['node-timeout']);
  return elect({
    members: parseMembers(values.members),
    name,
    ttl,
    id: values.id,
    grace: values.grace === undefined ? 10_000 : parseDuration('--grace', values.grace, { allowZero: true }),
    maxLockTtl,
    quarantine: quarantineOf(values),
    nodeTimeout,
    tls: readTls(values['tls-ca']),
    json: values.json ?? false,
    command: command[0]!,
    args: command.slice(1),
    err: process.stderr,
  });
}

type Say = (event: string, text: string | undefined, data?: Record<string, unknown>) => void;

function reporter(options: ElectOptions): Say {
  return (event, text, data = {}) => {
    if (options.json) options.err.write(JSON.stringify({ event, election: options.name, ...data }) + '\n');
    else if (text !== undefined) options.err.write(`quorumlock: ${text}\n`);
  };
}

export async function elect(options: ElectOptions): Promise<number> {
  const say = reporter(options);
  const connectTimeoutMs = Math.max(1000, options.nodeTimeout * 4);
  const connected = connect(options.members, { commandTimeoutMs: connectTimeoutMs, connectTimeoutMs }, options.tls);
  const redlock = new Redlock(connected.clients, { maxLockTtl: options.maxLockTtl, quarantine: options.quarantine, nodeTimeout: options.nodeTimeout });
  // Checked before any call is sent: bad --name/--ttl/--id are usage errors (RangeError with parameter).
  let election;
  try {
    election = redlock.election(options.name, { ttl: options.ttl, ...(options.id === undefined ? {} : { id: options.id }) });
  } catch (error) {
    connected.close();
    throw error;
  }
  // Where the election extends: child.ts's stop window (extensions failing) lies below it.
  const thresholdMs = Math.floor(options.ttl * EXTEND_SHARE);

  let running: RunningChild | undefined;
  let interruptedBy: NodeJS.Signals | undefined;
  const campaigning = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    interruptedBy ??= signal;
    if (running) running.signal(signal);
    else campaigning.abort(new Error(`interrupted by ${signal}`));
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);
  const stopFollowing = followJobControl(() => running);
  const waiting = watchCampaign({
    election: options.name,
    names: options.members.map((member) => member.name),
    connections: () => connected.clients.map((client, index) => ({ client, lastError: connected.lastError[index], commandTimeoutMs: connectTimeoutMs })),
    nodeTimeout: options.nodeTimeout,
    report: (text, why, members) => say('waiting', text, { reason: text, ...why, members }),
  });
  try {
    await connected.ready(connectTimeoutMs);
    for (;;) {
      let leadership: Leadership;
      try {
        leadership = await election.campaign({ signal: campaigning.signal });
      } catch (error) {
        if (!interruptedBy) throw error;
        say('exit', `interrupted by ${interruptedBy} while campaigning for "${options.name}"`, { exitCode: signalCode(interruptedBy), source: 'quorumlock' });
        return signalCode(interruptedBy);
      }
      if (interruptedBy) {
        await leadership.resign();
        say('exit', `interrupted by ${interruptedBy}`, { exitCode: signalCode(interruptedBy), source: 'quorumlock' });
        return signalCode(interruptedBy);
      }
      // In words only after a wait was told: otherwise elect is as quiet as the command lets it be.
      const toldWait = waiting.elected();
      say('elected', toldWait ? `elected: leading "${options.name}" (term ${leadership.term})` : undefined, { term: leadership.term, id: leadership.id });
      // The leadership's signal, and the lock's deadline: the command stops by then (child.ts).
      const view: ChildLock = { fence: leadership.term, remainingMs: () => leadership.lock.remainingMs(), signal: leadership.signal };
      const child = spawnChild(
        {
          command: options.command,
          args: options.args,
          resource: options.name,
          ttl: options.ttl,
          grace: options.grace,
          thresholdMs,
          nodeTimeout: options.nodeTimeout,
          env: { QUORUMLOCK_TERM: String(leadership.term) },
        },
        view,
        (stop) =>
          say(
            'lost',
            `the leadership of "${options.name}" (term ${leadership.term}) ${stop.why === 'failing' ? 'could not be kept' : 'ended'}: stopping the command`,
            {
              term: leadership.term,
              why: stop.why,
              ...(stop.reason instanceof LeadershipLostError ? { ended: stop.reason.why } : {}),
              leftMs: Math.round(stop.leftMs),
            },
          ),
        (killAfterMs) =>
          say(
            'warning',
            `the command exited, but left processes in its process group: stopping them before resigning the leadership of "${options.name}": SIGTERM now, SIGKILL in ${formatMs(killAfterMs)} at the latest`,
            { reason: 'leftovers', killAfterMs: Math.round(killAfterMs) },
          ),
      );
      running = child;
      let code: number;
      try {
        code = await child.exited;
      } catch (error) {
        await leadership.resign();
        throw error;
      } finally {
        running = undefined;
      }
      const stopped = child.stopping() !== undefined || !leadership.leading;
      await leadership.resign();
      if (interruptedBy) {
        say('exit', undefined, { exitCode: code, source: 'command', term: leadership.term });
        return code;
      }
      if (!stopped) {
        say('exit', undefined, { exitCode: code, source: 'command', term: leadership.term });
        return code;
      }
      say('campaign', `campaigning again for "${options.name}"`, { afterTerm: leadership.term, commandExitCode: code });
    }
  } catch (error) {
    if (error instanceof SpawnError) {
      say('failed', error.message, { reason: error.message, exitCode: error.code, source: 'quorumlock' });
      return error.code;
    }
    const message = error instanceof Error ? error.message : String(error);
    say('failed', message, { reason: message, exitCode: EXIT.unavailable, source: 'quorumlock' });
    return EXIT.unavailable;
  } finally {
    waiting.stop();
    for (const signal of FORWARDED) process.off(signal, onSignal);
    stopFollowing();
    await redlock.quit();
    connected.close();
  }
}
