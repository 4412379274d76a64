/**
 * holders()'s error: too few members answered to say what a quorum holds. It carries what each
 * member answered, like the lock's errors carry their votes.
 */
export const SEMAPHORE_UNAVAILABLE = 'QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE';

/** What one member said when asked which permits it holds: its answer or why there was none. */
export interface PermitReading {
  member: string;
  /** Per permit, the key's PTTL there (-2 absent); undefined when the member did not answer or does not count. */
  pttls: readonly number[] | undefined;
  /** Per permit, how many wait in its line there (ZCARD of the line); with pttls. */
  waiting?: readonly number[];
  /** Why there is no reading: the member's error, 'timeout', or why it does not count. */
  error?: string;
}

export class SemaphoreUnavailableError extends Error {
  override readonly name = 'SemaphoreUnavailableError';
  readonly code = SEMAPHORE_UNAVAILABLE;

  constructor(
    readonly semaphore: string,
    readonly readings: readonly PermitReading[],
    readonly quorum: number,
  ) {
    const answered = readings.filter((reading) => reading.pttls !== undefined).length;
    const why = readings
      .filter((reading) => reading.pttls === undefined)
      .map((reading) => `${reading.member}: ${reading.error ?? 'no answer'}`)
      .join('; ');
    super(
      `could not read the holders of semaphore ${JSON.stringify(semaphore)}: ${answered} of ${readings.length} members answered, ${quorum} needed (${why})`,
    );
  }
}
