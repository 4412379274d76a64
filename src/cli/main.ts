#!/usr/bin/env node
/**
 * The quorumlock CLI: `run`, `elect`, `leader`, `status`, `members`, `trust`, `restore-fencing`. Exit codes in usage.ts (--help).
 * Parses process.argv, runs one command, closes every connection and exits with its code.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ParseArgsConfig } from 'node:util';
import { commonFlags, exitCodeOption, parse, quarantineOf, required } from './args.js';
import { parseDuration } from './duration.js';
import { EXIT, USAGE_CODES, UsageError } from './errors.js';
import { members as membersCommand, status as statusCommand, trust as trustCommand, type InspectOptions } from './inspect.js';
import { parseMembers, readTls } from './members.js';
import { run } from './run.js';
import { electCommand } from './elect.js';
import { endingOf, endWith, type Ending } from './ending.js';
import { leader as leaderCommand } from './leader.js';
import { USAGE } from './usage.js';
import { defaults } from '../options/settings.js';
import { afterPoll } from '../clock/index.js';

const inspectOptions = {
  ...commonFlags,
  timeout: { type: 'string' },
  floor: { type: 'string' },
  yes: { type: 'boolean' },
  force: { type: 'boolean' },
} as const satisfies ParseArgsConfig['options'];

const runOptions = {
  ...commonFlags,
  resource: { type: 'string' },
  ttl: { type: 'string' },
  wait: { type: 'string' },
  grace: { type: 'string' },
  fencing: { type: 'boolean' },
  'node-timeout': { type: 'string' },
  'skip-if-locked': { type: 'boolean' },
  'at-least': { type: 'string' },
  // flock(1)'s -E and -s.
  'conflict-exit-code': { type: 'string', short: 'E' },
  shared: { type: 'boolean', short: 's' },
} as const satisfies ParseArgsConfig['options'];

/** Why `trust` wants --yes: it is the one step that can break mutual exclusion when misused. */
const TRUST_CONFIRM = `trust: refusing without --yes. trust declares every member brand new and ends its restart quarantine at once. It is a one-time step for a brand-new deployment whose masters never held a lock. Never run it for members that restarted empty or were flushed while locks may have been held: the quarantine is what keeps a lock they forgot from being granted twice. Check \`quorumlock members\` first, then run \`quorumlock trust --yes\``;

async function inspectCommand(
  command: 'status' | 'members' | 'trust' | 'restore-fencing' | 'leader',
  args: string[],
  out: (text: string) => void,
): Promise<number> {
  const { values, positionals } = parse(args, inspectOptions, command);
  if (values.help) return (out(USAGE), EXIT.ok);
  const options: InspectOptions = {
    members: parseMembers(values.members),
    json: values.json ?? false,
    timeoutMs: values.timeout === undefined ? 1000 : parseDuration('--timeout', values.timeout),
    maxLockTtl: values['max-lock-ttl'] === undefined ? defaults.maxLockTtl : parseDuration('--max-lock-ttl', values['max-lock-ttl']),
    quarantine: quarantineOf(values),
    tls: readTls(values['tls-ca']),
    out,
    err: (text) => void process.stderr.write(text),
  };
  if (values.yes !== undefined && command !== 'trust') throw new UsageError(`${command}: --yes is for trust only`, '--yes');
  if (values.force !== undefined && command !== 'trust') throw new UsageError(`${command}: --force is for trust only`, '--force');
  if (command === 'status') {
    if (positionals.length !== 1) throw new UsageError(`status: expected exactly one <resource>, got ${positionals.length}`, '<resource>');
    return statusCommand(positionals[0]!, options);
  }
  if (command === 'leader') {
    if (positionals.length !== 1) throw new UsageError(`leader: expected exactly one <election>, got ${positionals.length}`, '<election>');
    if (values.floor !== undefined) throw new UsageError('leader: --floor is for restore-fencing only', '--floor');
    return leaderCommand(positionals[0]!, options);
  }
  if (positionals.length > 0) throw new UsageError(`${command}: unexpected argument "${positionals[0]}"`);
  if (command === 'restore-fencing') {
    const floor = Number(required(values.floor, '--floor', command));
    if (!Number.isSafeInteger(floor) || floor < 1)
      throw new UsageError(`restore-fencing: --floor must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}, got ${values.floor}`, '--floor');
    return trustCommand(options, floor);
  }
  if (values.floor !== undefined) throw new UsageError(`${command}: --floor is for restore-fencing only`, '--floor');
  if (command === 'members') return membersCommand(options);
  if (!values.yes) throw new UsageError(TRUST_CONFIRM, '--yes');
  return trustCommand(options, undefined, values.force ?? false);
}

async function runCommand(args: string[]): Promise<number> {
  const split = args.indexOf('--');
  const own = split === -1 ? args : args.slice(0, split);
  const { values, positionals } = parse(own, runOptions, 'run');
  if (values.help) return (process.stdout.write(USAGE), EXIT.ok);
  if (positionals.length > 0)
    throw new UsageError(`run: unexpected argument "${positionals[0]}": put the command after --, e.g. quorumlock run --resource job --ttl 30s -- ./job.sh`);
  const resource = required(values.resource, '--resource', 'run');
  const ttl = parseDuration('--ttl', required(values.ttl, '--ttl', 'run'));
  const command = split === -1 ? [] : args.slice(split + 1);
  if (command.length === 0) throw new UsageError('run: no command: put it after --, e.g. quorumlock run --resource job --ttl 30s -- ./job.sh', '--');
  const atLeast = values['at-least'] === undefined ? 0 : parseDuration('--at-least', values['at-least']);
  // --at-least sets the keys' ttl too: the restart quarantine must cover it.
  const maxLockTtl =
    values['max-lock-ttl'] === undefined ? Math.max(defaults.maxLockTtl, ttl, atLeast) : parseDuration('--max-lock-ttl', values['max-lock-ttl']);
  if (ttl > maxLockTtl) throw new UsageError(`run: --ttl (${ttl} ms) must not exceed --max-lock-ttl (${maxLockTtl} ms)`, '--ttl');
  if (atLeast > maxLockTtl) throw new UsageError(`run: --at-least (${atLeast} ms) must not exceed --max-lock-ttl (${maxLockTtl} ms)`, '--at-least');
  const nodeTimeout = values['node-timeout'] === undefined ? 50 : parseDuration('--node-timeout', values['node-timeout']);
  const conflictExitCode =
    values['conflict-exit-code'] === undefined ? EXIT.notAcquired : exitCodeOption(values['conflict-exit-code'], '--conflict-exit-code', 'run');
  if (values['conflict-exit-code'] !== undefined && values['skip-if-locked'])
    throw new UsageError(
      'run: --skip-if-locked and --conflict-exit-code both say how a held lock ends: use one (--skip-if-locked: 0 without a word)',
      '--conflict-exit-code',
      USAGE_CODES.conflict,
    );
  // The lock must outlive a round and the drift allowance with room to extend: see README, ttl.
  if (ttl <= nodeTimeout * 3) throw new UsageError(`run: --ttl (${ttl} ms) must be more than 3 × --node-timeout (${nodeTimeout} ms)`, '--ttl');
  return run({
    members: parseMembers(values.members),
    resource,
    ttl,
    wait: values.wait === undefined ? 0 : parseDuration('--wait', values.wait, { allowZero: true }),
    grace: values.grace === undefined ? 10_000 : parseDuration('--grace', values.grace, { allowZero: true }),
    fencing: values.fencing ?? false,
    maxLockTtl,
    quarantine: quarantineOf(values),
    nodeTimeout,
    skipIfLocked: values['skip-if-locked'] ?? false,
    conflictExitCode,
    shared: values.shared ?? false,
    atLeast,
    tls: readTls(values['tls-ca']),
    json: values.json ?? false,
    command: command[0]!,
    args: command.slice(1),
    err: process.stderr,
  });
}

/** Runs one command; `signal` set when run or elect should end by the signal they received (ending.ts). */
export async function main(argv: string[]): Promise<Ending> {
  // run and elect forward signals to their command and end by the same signal; the others die of it as any program does.
  if (argv[0] === 'run' || argv[0] === 'elect') return endingOf(() => commandCode(argv));
  return { code: await commandCode(argv) };
}

async function commandCode(argv: string[]): Promise<number> {
  const out = (text: string) => void process.stdout.write(text);
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        out(USAGE);
        return command === undefined ? EXIT.usage : EXIT.ok;
      case 'version':
      case '--version':
      case '-V':
        out(`quorumlock ${version()}\n`);
        return EXIT.ok;
      case 'run':
        return await runCommand(rest);
      case 'elect':
        return await electCommand(rest, () => (out(USAGE), EXIT.ok));
      case 'status':
      case 'members':
      case 'trust':
      case 'restore-fencing':
      case 'leader':
        return await inspectCommand(command, rest, out);
      default:
        throw new UsageError(
          `unknown command "${command}": expected run, elect, leader, status, members, trust, restore-fencing or version (quorumlock --help)`,
        );
    }
  } catch (error) {
    // With --json, stderr carries only JSON lines: the mistake as a `failed` event with its code.
    const usage = (fields: { code?: unknown; flag?: string; parameter?: unknown }, reason: string, text: string) => {
      if (argv.includes('--json'))
        process.stderr.write(JSON.stringify({ event: 'failed', outcome: 'usage', ...fields, reason, exitCode: EXIT.usage, source: 'quorumlock' }) + '\n');
      else process.stderr.write(text);
      return EXIT.usage;
    };
    if (error instanceof UsageError)
      return usage(
        { code: error.code, ...(error.flag === undefined ? {} : { flag: error.flag }) },
        error.message,
        `quorumlock: ${error.message}\n(quorumlock --help for usage)\n`,
      );
    // Invalid settings caught by Redlock itself (RangeError with `parameter`) are usage errors too.
    if ((error instanceof RangeError || error instanceof TypeError) && 'parameter' in error) {
      // The library's messages start with "quorumlock: " already.
      const reason = error.message.replace(/^quorumlock: /, '');
      return usage({ code: (error as { code?: unknown }).code, parameter: error.parameter }, reason, `quorumlock: ${reason}\n`);
    }
    process.stderr.write(`quorumlock: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.unavailable;
  }
}

/**
 * The package's version, from its package.json: two levels up both from src/cli/main.ts (run
 * with tsx) and from dist/cli/main.js (the built bin, scripts/build.mjs).
 */
export function version(): string {
  try {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
    if (manifest.name === 'quorumlock' && typeof manifest.version === 'string') return manifest.version;
  } catch {
    // Fall through: a copy without its package.json.
  }
  return 'unknown';
}

function isEntry(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntry()) {
  // A failed write to stdout or stderr is an 'error' event, which would end the process at once:
  // `run` and `elect` would leave their command running on a lock no longer extended. A reader
  // that went away (EPIPE: `… 2>&1 | logger`, the logger gone) wants nothing more: dropped.
  // Otherwise (ENOSPC, EIO) a command whose result is its stdout and which would say 0 (success,
  // the result written) exits EXIT.output instead; other codes stand, as does run's and elect's
  // (their command's), and a failed message on stderr changes nothing.
  let unwritten = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') unwritten = true;
  });
  process.stderr.on('error', () => undefined);
  const args = process.argv.slice(2);
  const ending = await main(args);
  await afterPoll(); // a failed write's 'error' comes a tick later
  const runsCommand = args[0] === 'run' || args[0] === 'elect';
  const ended = unwritten && !runsCommand && ending.code === EXIT.ok && ending.signal === undefined ? { code: EXIT.output } : ending;
  endWith(ended);
  // Every connection is closed by now, so the process exits by itself (the tests hold it to
  // that). Should anything still hold it open, exit anyway rather than hang a cron job.
  setTimeout(() => process.exit(ended.code), 5000).unref();
}
