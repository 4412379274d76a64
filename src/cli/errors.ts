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
