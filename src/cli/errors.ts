/** Exit codes of the quorumlock CLI (sysexits.h where one fits). */
export const EXIT = {
  ok: 0,
  /** EX_USAGE: bad flags, URLs, durations. */
  usage: 64,
  /** EX_UNAVAILABLE: members unreachable, too few healthy masters, quarantine, other errors. */
  unavailable: 69,
  /** EX_CANTCREAT: the lock is held by another owner and was not had within --wait. */
  notAcquired: 73,
  /** EX_IOERR: a command other than run and elect that would have exited 0 could not write its stdout (ENOSPC, EIO). */
  output: 74,
  /** EX_TEMPFAIL: the lock was lost while the command ran; the command was terminated. */
  lost: 75,
} as const;

/** The CLI's own codes that a command's exit code can collide with: `run` notes such a collision (usage.ts). */
export const RESERVED_EXIT_CODES: readonly number[] = [EXIT.usage, EXIT.unavailable, EXIT.notAcquired, EXIT.lost];

/** The stable `code` of each kind of usage mistake (a --json caller reads it in the `failed` event). */
export const USAGE_CODES = {
  /** A flag, URL, duration or argument the command does not take as given. */
  usage: 'QUORUMLOCK_ERR_CLI_USAGE',
  /** A number outside the range its flag allows (e.g. --conflict-exit-code 256). */
  outOfRange: 'QUORUMLOCK_ERR_CLI_OUT_OF_RANGE',
  /** Two flags that cannot go together (e.g. --skip-if-locked with --conflict-exit-code). */
  conflict: 'QUORUMLOCK_ERR_CLI_CONFLICTING_FLAGS',
} as const;

/** A usage mistake: the message names the flag. Exits 64, before any connection. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly flag?: string,
    readonly code: (typeof USAGE_CODES)[keyof typeof USAGE_CODES] = USAGE_CODES.usage,
  ) {
    super(message);
  }
}
