/**
 * The Redlock timing model, as pure functions.
 *
 * Every member expires our key `ttl` after *it* set the key, by its own clock. We only know the
 * moment we started sending (t0). The earliest any member can drop the key is therefore
 * t0 + ttl, minus whatever its clock runs fast relative to ours: that is the drift allowance.
 * The reference implementation's allowance is ttl × driftFactor plus 2 ms (Redis' 1 ms expiry
 * precision plus 1 ms of minimum drift for short TTLs). We round the product up so the allowance
 * never comes out smaller than the formula.
 */
export function driftMs(ttlMs: number, driftFactor: number): number {
  // The epsilon keeps float noise (700 × 0.07 = 49.00000000000001) from rounding up a whole ms.
  return Math.ceil(ttlMs * driftFactor - 1e-9) + 2;
}

/**
 * Time left in which the lock is guaranteed to be held on a quorum, measured from the start of
 * the round (not from when the last vote arrived): a member that answered late set its key late,
 * so it expires late, but one that answered early may expire as early as t0 + ttl - drift.
 */
export function validityMs(ttlMs: number, elapsedMs: number, drift: number): number {
  return ttlMs - elapsedMs - drift;
}

/** The instant (on the clock that measured `startedAt`) at which the guarantee runs out. */
export function deadlineOf(startedAt: number, ttlMs: number, drift: number): number {
  return startedAt + ttlMs - drift;
}
