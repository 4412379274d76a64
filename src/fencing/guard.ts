/**
 * The protected side of fencing tokens, for data kept in Redis. A lock alone cannot stop a
 * holder that paused past its validity from writing afterwards; the store can, if every write
 * carries the lock's fence and the store refuses tokens lower than the highest it has seen.
 */
import { connectionOf, type MemberClient } from '../clients/index.js';
import { argumentError } from '../errors.js';
import { guardLua } from '../lua/sources.js';

/**
 * The script fencedWrite runs (KEYS: the key, its fenceKeyOf; ARGV: value, token; returns 1
 * written, 0 refused), for your own variants: a hash field, a stream entry, several keys at once.
 * The check and the write must happen in one atomic step on the store, or a stale holder could
 * slip its write in between; a script is how Redis gives that.
 */
export const FENCE_GUARD_LUA: string = guardLua;

/** The key that remembers the highest token seen for `key`, in the same hash slot. */
export function fenceKeyOf(key: string): string {
  return /\{[^}]+\}/.test(key) ? `${key}:fence` : `{${key}}:fence`;
}

/**
 * Writes `value` to `key` on `client` (the store, not a lock member) unless a write with a higher
 * fencing token already happened. Resolves true when written, false when `fence` was stale.
 * `client`: a client of any library a member may use (ioredis, iovalkey, node-redis, GLIDE),
 * through its adapter; the keys are as given (an ioredis keyPrefix applies, as to any EVAL of it).
 */
export async function fencedWrite(client: MemberClient, key: string, value: string, fence: number): Promise<boolean> {
  if (!Number.isSafeInteger(fence) || fence < 1) throw argumentError(RangeError, 'fence', `must be a positive integer (lock.fence), got ${fence}`);
  const written = await connectionOf(client).command(['EVAL', guardLua, '2', key, fenceKeyOf(key), value, String(fence)]);
  return written === 1;
}
