#!/usr/bin/env node
/**
 * The quorumlock CLI: `run`, `status`, `members`, `trust`, `restore-fencing`. Exit codes in usage.ts (--help).
 * Parses process.argv, runs one command, closes every connection and exits with its code.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from './duration.js';
import { EXIT, UsageError } from './errors.js';
import { members as membersCommand, status as statusCommand, trust as trustCommand, type InspectOptions } from './inspect.js';
import { parseMembers } from './members.js';
import { run } from './run.js';
import { USAGE } from './usage.js';
import { defaults } from '../options/settings.js';

const common = {
  members: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'max-lock-ttl': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

const inspectOptions = { ...common, timeout: { type: 'string' }, floor: { type: 'string' } } as const satisfies ParseArgsConfig['options'];

const runOptions = {
  ...common,
  resource: { type: 'string' },
  ttl: { type: 'string' },
  wait: { type: 'string' },
  grace: { type: 'string' },
  fencing: { type: 'boolean' },
  'node-timeout': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O, command: string) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    // node's messages name the flag: "Unknown option '--foo'", "Option '--ttl <value>' argument missing".
    throw new UsageError(`${command}: ${(error as Error).message.replace(/\. To specify a positional argument.*$/s, '')}`);
  }
}

function required(value: string | undefined, flag: string, command: string): string {
  if (value === undefined || value === '') throw new UsageError(`${command}: ${flag} is required`, flag);
  return value;
}

async function inspectCommand(command: 'status' | 'members' | 'trust' | 'restore-fencing', args: string[], out: (text: string) => void): Promise<number> {
  const { values, positionals } = parse(args, inspectOptions, command);
  if (values.help) return (out(USAGE), EXIT.ok);
  const options: InspectOptions = {
    members: parseMembers(values.members),
    json: values.json ?? false,
    timeoutMs: values.timeout === undefined ? 1000 : parseDuration('--timeout', values.timeout),
    maxLockTtl: values['max-lock-ttl'] === undefined ? defaults.maxLockTtl : parseDuration('--max-lock-ttl', values['max-lock-ttl']),
    out,
  };
  if (command === 'status') {
    if (positionals.length !== 1) throw new UsageError(`status: expected exactly one <resource>, got ${positionals.length}`, '<resource>');
    return statusCommand(positionals[0]!, options);
  }
  if (positionals.length > 0) throw new UsageError(`${command}: unexpected argument "${positionals[0]}"`);
  if (command === 'restore-fencing') {
    const floor = Number(required(values.floor, '--floor', command));
    if (!Number.isSafeInteger(floor) || floor < 1)
      throw new UsageError(`restore-fencing: --floor must be an integer from 1 to ${Number.MAX_SAFE_INTEGER}, got ${values.floor}`, '--floor');
    return trustCommand(options, floor);
  }
  if (values.floor !== undefined) throw new UsageError(`${command}: --floor is for restore-fencing only`, '--floor');
  return command === 'members' ? membersCommand(options) : trustCommand(options);
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
  const maxLockTtl = values['max-lock-ttl'] === undefined ? Math.max(defaults.maxLockTtl, ttl) : parseDuration('--max-lock-ttl', values['max-lock-ttl']);
  if (ttl > maxLockTtl) throw new UsageError(`run: --ttl (${ttl} ms) must not exceed --max-lock-ttl (${maxLockTtl} ms)`, '--ttl');
  const nodeTimeout = values['node-timeout'] === undefined ? 50 : parseDuration('--node-timeout', values['node-timeout']);
  // The lock must outlive a round and the drift allowance with room to extend: see README, ttl.
  if (ttl < nodeTimeout * 3) throw new UsageError(`run: --ttl (${ttl} ms) must be at least 3 × --node-timeout (${nodeTimeout} ms)`, '--ttl');
  return run({
    members: parseMembers(values.members),
    resource,
    ttl,
    wait: values.wait === undefined ? 0 : parseDuration('--wait', values.wait, { allowZero: true }),
    grace: values.grace === undefined ? 10_000 : parseDuration('--grace', values.grace, { allowZero: true }),
    fencing: values.fencing ?? false,
    maxLockTtl,
    nodeTimeout,
    json: values.json ?? false,
    command: command[0]!,
    args: command.slice(1),
    err: process.stderr,
  });
}

export async function main(argv: string[]): Promise<number> {
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
      case 'run':
        return await runCommand(rest);
      case 'status':
      case 'members':
      case 'trust':
      case 'restore-fencing':
        return await inspectCommand(command, rest, out);
      default:
        throw new UsageError(`unknown command "${command}": expected run, status, members, trust or restore-fencing (quorumlock --help)`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`quorumlock: ${error.message}\n(quorumlock --help for usage)\n`);
      return EXIT.usage;
    }
    // Invalid settings caught by Redlock itself (RangeError with `parameter`) are usage errors too.
    if ((error instanceof RangeError || error instanceof TypeError) && 'parameter' in error) {
      process.stderr.write(`quorumlock: ${error.message}\n`);
      return EXIT.usage;
    }
    process.stderr.write(`quorumlock: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.unavailable;
  }
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
  const code = await main(process.argv.slice(2));
  process.exitCode = code;
  // Every connection is closed by now, so the process exits by itself (the tests hold it to
  // that). Should anything still hold it open, exit anyway rather than hang a cron job.
  setTimeout(() => process.exit(code), 5000).unref();
}
