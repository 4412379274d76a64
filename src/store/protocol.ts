/**
 * The replies of the acquire and fence scripts (src/lua/acquire.lua, fence.lua), decoded in one
 * place: members, the simulator and tests read these types, never the raw tuples.
 */

/** quarantinedForMs of a member that must not count at all while its condition lasts. */
export const NOT_COUNTING = Number.MAX_SAFE_INTEGER;

/** What the acquire script says when it does not lock: why, for how long, and our place in line. */
export interface Refusal {
  /** 'taken': held by another owner; 'queued': free, but kept for an earlier waiter. */
  why: 'taken' | 'queued';
  /**
   * The longest remaining PTTL among the held keys; undefined when none is held, or when a key
   * is held without an expiry (a user's key of the same name: it will not free itself).
   */
  heldForMs: number | undefined;
  /** 0-based place in line; undefined when not in line. */
  place: number | undefined;
  /** The member's epoch id (undefined with quarantine and fencing off): a fence sync can be bound to it. */
  epoch?: string;
  /** That epoch's quarantine left (undefined with the quarantine off): a sync needs it past. */
  quarantinedForMs?: number;
}

/** The keys were set on this member (or, for a non-master, nothing was set and it does not count). */
export interface Locked {
  /** > 0: the member's data is younger than the quarantine (or it must not count): its yes does not count. */
  quarantinedForMs: number;
  /**
   * The id of the member's epoch this answer came from (undefined with quarantine and fencing
   * off). Calls that depend on this answer (the fence sync) are bound to it.
   */
  epoch?: string;
  /** With fencing: the member's fence counter, and whether that reading is trusted. */
  fence?: { highest: number; trusted: boolean };
  /** Why the member does not count at all (not a master, may evict, duplicate). */
  notCounting?: string;
}

/**
 * acquire.lua's reply. `settled` is the epoch id the call passed as already past its quarantine:
 * a bare 1 then means "locked, in that epoch". `fencing`: the call asked for the fence counter.
 */
export function decodeAcquire(reply: number | unknown[], settled: string, fencing: boolean): Locked | Refusal {
  if (reply === 1) return settled === '' ? { quarantinedForMs: 0 } : { quarantinedForMs: 0, epoch: settled };
  const [status, a, b, c, epoch] = reply as [number, number, number, number | string, string | undefined];
  if (status === 4) return { quarantinedForMs: NOT_COUNTING, notCounting: 'not a master' };
  if (status === 1 || status === 3) {
    const locked: Locked = { quarantinedForMs: a };
    if (epoch !== undefined) locked.epoch = String(epoch);
    if (fencing) locked.fence = { highest: b, trusted: c === 1 };
    return locked;
  }
  const refusal: Refusal = { why: status === 0 ? 'taken' : 'queued', heldForMs: a >= 0 ? a : undefined, place: b >= 0 ? b : undefined };
  if (typeof c === 'string' && c !== '') refusal.epoch = c;
  const left = (reply as unknown[])[4];
  if (typeof left === 'number' && left >= 0) refusal.quarantinedForMs = left;
  return refusal;
}

export interface FenceReply {
  raised: boolean;
  /** The counter before. */
  highest: number;
  trusted: boolean;
  /** The highest of the member's counters and floor, after the call. */
  max: number;
  /** The epoch is complete (brand new or given a floor): every resource reads trusted there. */
  complete: boolean;
}

export function decodeFence(reply: unknown[]): FenceReply {
  // The fourth element, the epoch the call ran in, is for redis-cli readers: the client binds
  // calls to epochs it learned from acquire replies (src/quorum/fence.ts).
  const [raised, highest, trusted, , max, complete] = reply as [number, number, number, unknown, number | undefined, number | undefined];
  return { raised: raised === 1, highest, trusted: trusted === 1, max: max ?? 0, complete: complete === 1 };
}
