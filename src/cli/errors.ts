/** Exit codes of the quorumlock CLI (sysexits.h where one fits). */
export const EXIT = {
  ok: 0,
  /** EX_USAGE: bad flags, URLs, durations. */
  usage: 64,
  /** EX_UNAVAILABLE: members unreachable, too few healthy masters, quarantine, other errors. */
  unavailable: 69,
  /** EX_CANTCREAT: the lock is held by another owner and was not had within --wait. */
  notAcquired: 73,
  /** EX_TEMPFAIL: the lock was lost while the command ran; the command was terminated. */
  lost: 75,
} as const;

/** The CLI's own codes that a command's exit code can collide with: `run` notes such a collision (usage.ts). */
export const RESERVED_EXIT_CODES: readonly number[] = [EXIT.usage, EXIT.unavailable, EXIT.notAcquired, EXIT.lost];

/** A usage mistake: the message names the flag. Exits 64. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly flag?: string,
  ) {
    super(message);
  }
}
