/** What every command's flags share: the common flags, parsing with usage errors, required flags. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './errors.js';

/** The flags every command takes. */
export const commonFlags = {
  members: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'max-lock-ttl': { type: 'string' },
  'tls-ca': { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

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
