/** What `status` and `members` read of a member, and how a reading is judged (shared by the server and the cluster probe). */
import { createHash } from 'node:crypto';
import type { MemberClient } from './members.js';
import { epochFields, readersKeyOf } from '../store/keys.js';
import type { ServerFacts } from '../store/server.js';

export type State = 'trusted' | 'quarantined' | 'none' | 'stale';

export interface EpochState {
  /**
   * 'trusted': its epoch is older than maxLockTtl (or was declared trusted); 'quarantined':
   * younger; 'none': no epoch yet (never locked on, never trusted); 'stale': the epoch was written
   * by an earlier server process (a restart from disk, or a failover). After 'none' or 'stale'
   * the next acquire starts a quarantine. On a cluster member without a resource: the worst state
   * of its slots (none, then stale, then quarantined), counts in `slots`.
   */
  state: State;
  /** Age of the member's data by its own clock (TIME − since), ms. Cluster: of the youngest slot epoch. */
  ageMs?: number;
  /** Quarantine left, ms (a quarantined epoch). Cluster: until the last quarantined slot is past it. */
  leftMs?: number;
  /** Declared brand new with `quorumlock trust` / trustMembers(). Cluster: every slot read was. */
  genesis: boolean;
  /** Fence tokens were issued from this epoch (its `max` counter is above 0): the member has served locks. */
  fenced?: boolean;
  /** Cluster member, `status <resource>`: the resource's slot, whose epoch this is. */
  slot?: number;
  /**
   * Cluster member, `members`: how many of the 16384 slot epochs are in each state; `unreadable`:
   * slots whose node did not answer (or that no node serves); `shortestLeftMs`: the quarantined
   * slot that is nearest its end.
   */
  slots?: Record<State | 'unreadable', number> & { shortestLeftMs?: number };
}

export interface MemberProbe {
  member: string;
  reachable: boolean;
  error?: string;
  /** PING round trip, ms. */
  latencyMs?: number;
  /** ROLE; for a cluster 'master' when CLUSTER INFO says cluster_state:ok, else e.g. 'cluster_state:fail'. */
  role?: string;
  /** Why this member would not count toward quorum though it answers (whyNotCounting: not a master, may evict lock keys, the same server as another member). */
  notCounting?: string;
  /** What names its server (serverIdentity: its run id), for the duplicate check (inspect.ts). */
  server?: string;
  epoch?: EpochState;
  version?: string;
  /** status only. */
  lock?: { held: boolean; pttlMs?: number; owner?: string; /** Live shared holders (readers), when any. */ readers?: number };
}

export interface ProbeOptions {
  maxLockTtl: number;
  /** The client's quarantine counts from a member's proven restart (--quarantine-from-restart). */
  fromRestart?: boolean;
  resource?: string;
  info?: boolean;
  lastError?: () => Error | undefined;
  /** The clients' per-command (and connect) timeout: bounds a cluster's waits, which its offline queue does not. */
  timeoutMs?: number;
  /**
   * Called once the PING round trips are measured (or failed); the probe waits for what it
   * returns before the heavier reads. probeAll() makes every member wait for all, so that no
   * member's round trip is measured while another's 16384 slot epochs are being parsed.
   */
  pinged?: () => Promise<void>;
}

/** First 8 hex chars of sha256(value): enough to tell owners apart, useless to extend or release. */
export function fingerprint(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

export const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** TIME → ms. */
export const msOf = (time: readonly (string | number)[]) => Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);

/**
 * One epoch hash (HMGET ...EPOCH_FIELDS), judged as the scripts judge it (src/lua/_epoch.lua)
 * against the server holding it: stale when another process or data lineage wrote it. With
 * `fromRestart`, the quarantine counts from the restart the epoch proved, where it proved one
 * (quarantineLeft: what a client with quarantine 'from-restart' sees).
 */
export function epochOf(values: readonly (string | null | undefined)[], server: ServerFacts, now: number, maxLockTtl: number, fromRestart = false): EpochState {
  const fields = epochFields(values);
  const genesis = fields.genesis === '1';
  const fenced = Number(fields.max ?? 0) > 0 ? { fenced: true } : {};
  if (fields.since === undefined || fields.id === undefined) return { state: 'none', genesis, ...fenced };
  if (fields.run_id !== server.runId || fields.replid !== server.replid) return { state: 'stale', genesis, ...fenced };
  const ageMs = now - Number(fields.since);
  const counted = fromRestart && fields.restart !== undefined ? now - Number(fields.restart) : ageMs;
  const leftMs = genesis ? 0 : Math.max(0, maxLockTtl - counted);
  return leftMs > 0 ? { state: 'quarantined', ageMs, leftMs, genesis, ...fenced } : { state: 'trusted', ageMs, genesis, ...fenced };
}

export function unreachable(member: string, error: unknown, options: ProbeOptions): MemberProbe {
  const last = options.lastError?.();
  // The connection error (ECONNREFUSED, ENOTFOUND, auth) says more than "max retries reached".
  return { member, reachable: false, error: last ? last.message : message(error) };
}

/**
 * GET and PTTL of the lock key, the readers ZSET WITHSCORES and the member's TIME: a writer's hold
 * (never its value: a fingerprint), and how many readers hold it shared now (entries whose end,
 * on the member's clock, is still ahead).
 */
export function lockOf([value, pttl, readers, time]: [string | null, number, string[], (string | number)[]]): NonNullable<MemberProbe['lock']> {
  const now = msOf(time);
  let live = 0;
  for (let i = 1; i < readers.length; i += 2) if (Number(readers[i]) > now) live++;
  const lock: NonNullable<MemberProbe['lock']> = value === null ? { held: false } : { held: true, pttlMs: pttl, owner: fingerprint(value) };
  if (live > 0) lock.readers = live;
  return lock;
}

/** The reads lockOf() takes, on a server or through a Cluster client (all in the resource's slot, but TIME). */
// Plain reads, not a member's round: `status` holds no lock to keep in order, and a RedisMember would load bound scripts on every server per run (binding.ts).
export function readLock(client: MemberClient, resource: string): Promise<[string | null, number, string[], (string | number)[]]> {
  return Promise.all([client.get(resource), client.pttl(resource), client.zrangebyscore(readersKeyOf(resource), '-inf', '+inf', 'WITHSCORES'), client.time()]);
}
