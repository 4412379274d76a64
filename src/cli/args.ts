/** What every command's flags share: the common flags, parsing with usage errors, required flags. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { USAGE_CODES, UsageError } from './errors.js';

/** The flags every command takes. */
export const commonFlags = {
  members: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'max-lock-ttl': { type: 'string' },
  'quarantine-from-restart': { type: 'boolean' },
  'tls-ca': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** RedlockOptions.quarantine from --quarantine-from-restart (docs/cli.md: when to use it). */
export const quarantineOf = (values: { 'quarantine-from-restart'?: boolean }): true | 'from-restart' =>
  values['quarantine-from-restart'] ? 'from-restart' : true;

/** parseArgs, strict, with positionals; a mistake becomes a UsageError naming `command` and the flag. */
export function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
  command: string,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; allowPositionals: true; strict: true }>> {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    // node's messages name the flag: "Unknown option '--foo'", "Option '--ttl <value>' argument missing".
    throw new UsageError(`${command}: ${(error as Error).message.replace(/\. To specify a positional argument.*$/s, '')}`);
  }
}

export function required(value: string | undefined, flag: string, command: string): string {
  if (value === undefined || value === '') throw new UsageError(`${command}: ${flag} is required`, flag);
  return value;
}

/** An exit code given on the command line: an integer from 0 to 255, as a process can exit with. */
export function exitCodeOption(text: string, flag: string, command: string): number {
  if (!/^\d{1,3}$/.test(text.trim()) || Number(text) > 255)
    throw new UsageError(`${command}: ${flag} must be an exit code, an integer from 0 to 255, got "${text}"`, flag, USAGE_CODES.outOfRange);
  return Number(text);
}
