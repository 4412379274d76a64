/** Reads one member's state for `status` and `members`: never writes, never prints a lock value. */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';

/** The epoch hash the acquire script keeps on every member (README, "Restart quarantine"). */
export const EPOCH_KEY = 'quorumlock:epoch';

export interface EpochState {
  /**
   * 'trusted': its epoch is older than maxLockTtl (or was declared trusted); 'quarantined':
   * younger; 'none': no epoch yet (never locked on, never trusted); 'stale': the epoch was written
   * by an earlier server process (a restart from disk, or a failover). After 'none' or 'stale'
   * the next acquire starts a quarantine.
   */
  state: 'trusted' | 'quarantined' | 'none' | 'stale';
  /** Age of the member's data by its own clock (TIME − since), ms. */
  ageMs?: number;
  /** Quarantine left, ms (state 'quarantined'). */
  leftMs?: number;
  /** Declared brand new with `quorumlock trust` / trustMembers(). */
  genesis: boolean;
}

export interface MemberProbe {
  member: string;
  reachable: boolean;
  error?: string;
  /** PING round trip, ms. */
  latencyMs?: number;
  role?: string;
  epoch?: EpochState;
  version?: string;
  /** status only. */
  lock?: { held: boolean; pttlMs?: number; owner?: string };
}

/** First 8 hex chars of sha256(value): enough to tell owners apart, useless to extend or release. */
export function fingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

export async function probe(client: Redis, member: string, options: { maxLockTtl: number; resource?: string; info?: boolean; lastError?: () => Error | undefined }): Promise<MemberProbe> {
  let started = performance.now();
  try {
    // The first PING waits for the connection; the second is the round trip.
    await client.ping();
    started = performance.now();
    await client.ping();
  } catch (error) {
    const last = options.lastError?.();
    const why = message(error);
    // The connection error (ECONNREFUSED, ENOTFOUND, auth) says more than "max retries reached".
    return { member, reachable: false, error: last ? last.message : why };
  }
  const result: MemberProbe = { member, reachable: true, latencyMs: Math.round((performance.now() - started) * 100) / 100 };
  try {
    const [role, time, epoch, info, lock] = await Promise.all([
      client.role(),
      client.time(),
      client.hmget(EPOCH_KEY, 'since', 'genesis', 'run_id'),
      client.info('server'),
      options.resource === undefined ? Promise.resolve(undefined) : Promise.all([client.get(options.resource), client.pttl(options.resource)]),
    ]);
    result.role = String((role as unknown[])[0]);
    const now = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
    const [since, genesis, owner] = epoch;
    const runId = /^run_id:(\w+)/m.exec(info)?.[1];
    if (since === null || since === undefined) {
      result.epoch = { state: 'none', genesis: genesis === '1' };
    } else if (owner !== runId) {
      result.epoch = { state: 'stale', genesis: genesis === '1' };
    } else {
      const ageMs = now - Number(since);
      const leftMs = Math.max(0, options.maxLockTtl - ageMs);
      result.epoch = leftMs > 0 ? { state: 'quarantined', ageMs, leftMs, genesis: genesis === '1' } : { state: 'trusted', ageMs, genesis: genesis === '1' };
    }
    if (options.info) result.version = /^redis_version:(.+)$/m.exec(info)?.[1]?.trim();
    if (lock !== undefined) {
      const [value, pttl] = lock;
      result.lock = value === null ? { held: false } : { held: true, pttlMs: pttl, owner: fingerprint(value) };
    }
  } catch (error) {
    result.error = message(error);
  }
  return result;
}

/** A reachable master that answered everything: counts toward the quorum. */
export function healthy(probe: MemberProbe): boolean {
  return probe.reachable && probe.error === undefined && probe.role === 'master';
}
