/**
 * The public options, their defaults, and the settings a Redlock runs with once they are checked
 * (options/check.ts). Types and data only.
 */
import type { Clock } from '../clock/index.js';
import type { Logger } from '../diagnostics.js';

/** The options of `new Redlock(clients, options)`. Any other name is refused (QUORUMLOCK_ERR_UNKNOWN_OPTION). */
export interface RedlockOptions {
  /** Clock drift allowance per ms of TTL: drift = ttl × driftFactor + 2 ms. In [0, 0.5). Default 0.01. */
  driftFactor?: number;
  /** Attempts after the first; 0 = one attempt; Infinity = until waitTimeout or the signal. Default 10. */
  retryCount?: number;
  /** Milliseconds between attempts. Default 200. */
  retryDelay?: number;
  /** Up to this many ms are added to or taken from each delay at random, so competing clients drift apart. Default 100. */
  retryJitter?: number;
  /**
   * Milliseconds each member gets to answer each call (acquire, extend, release). A member slower
   * than this is counted as not voting. Default 50: the Redis docs suggest 5–50 ms for a 10 s TTL;
   * raise it for members across slow links. Must be smaller than every ttl.
   */
  nodeTimeout?: number;
  /** A pino logger (or anything with debug/info/warn/error(object, message)). Default: silent. */
  logger?: Logger;
  /** Where time comes from. Default: the monotonic system clock. Tests and simulators inject a ManualClock. */
  clock?: Clock;
  /**
   * The longest ttl this Redlock may use (acquire and extend), and the length of the restart
   * quarantine: a member whose data is younger than this (it restarted without persistence, was
   * flushed, or is new) does not count toward quorum. Every client of the same resources must use
   * a maxLockTtl at least as long as the longest ttl any of them uses. Default 60 000 ms.
   */
  maxLockTtl?: number;
  /**
   * When a member's restart quarantine counts from. true (the default): from the first call of any
   * client that finds the new epoch, never before the data was lost. 'from-restart': from the
   * member's process start, where the server proves that no lock was granted since (it ran no
   * script since it started; otherwise from the first call), so a member restarted and left idle
   * is ready maxLockTtl after its restart, whoever connects first. Choose it only when no other
   * server can take over a member's address (a standby started early, then given its address or
   * VIP) and members start after their clock is synced (systemd After=time-sync.target): the
   * server can prove neither (docs/safety.md#restart-quarantine). false turns the quarantine off.
   * Unsafe: a member that restarts empty can then let a second client in while the first still
   * holds the lock. For demonstrating that hazard.
   */
  quarantine?: boolean | 'from-restart';
  /**
   * How deep `{ reentrant: true }` acquires may nest inside a using() that holds the same
   * resources (docs/reentrancy.md). 0, the default, turns reentrancy off: tracking which locks the
   * current async context holds needs an AsyncLocalStorage, and on Node 20 an active one makes
   * every promise in the process slower (about 2× on a promise-only loop), so quorumlock pays
   * that only for a Redlock that asks. An integer from 0 to 1000.
   */
  maxReentrancy?: number;
}

/** Options of an operator's call on every member (trustMembers, restoreFencing). Any other name is refused. */
export interface OperatorOptions {
  /** How long to wait for each member before reporting it 'timeout' (ms, default 10 000, at most 600 000). */
  timeoutMs?: number;
}

/** The options of one `acquire()` (tryAcquire() takes signal, fencing and waitTimeout). Any other name is refused. */
export interface AcquireOptions {
  /** Attempts after the first, for this call: the Redlock's `retryCount` by default. */
  retryCount?: number;
  /** Milliseconds between attempts, for this call: the Redlock's `retryDelay` by default. */
  retryDelay?: number;
  /** The random spread of each delay, ms, for this call: the Redlock's `retryJitter` by default. */
  retryJitter?: number;
  /**
   * Overall budget in ms for this acquire, all attempts and delays included. Default:
   * (retryCount + 1) × (nodeTimeout + max(nodeTimeout, retryDelay + retryJitter)), enough for
   * every attempt and its rollback.
   */
  waitTimeout?: number;
  /** Cancels the acquire: it rolls back whatever it set and rejects with `signal.reason`. */
  signal?: AbortSignal;
  /**
   * Issue `lock.fence`, a token that strictly increases for each resource across all clients, for
   * the protected resource to reject stale writers. Costs one more round to the members.
   */
  fencing?: boolean;
  /**
   * Inside the work of a using() that holds these same resources, return a nested handle at once
   * (no network round trip) instead of acquiring again: it shares the outer lock, cannot release
   * or outlive it, and nests at most the Redlock's `maxReentrancy` deep. Outside such a context
   * it is an ordinary acquire. Needs a Redlock made with `maxReentrancy` > 0.
   */
  reentrant?: boolean;
  /**
   * A shared (read) lock: any number of shared holders at once, or one exclusive holder. A
   * waiting exclusive caller is not overtaken by shared ones that arrived after it (the line
   * decides, by arrival). `lock.shared` tells which one you hold. docs/shared-locks.md.
   */
  shared?: boolean;
}

/** The settings a Redlock runs with (`redlock.settings`): its options, checked, with the defaults filled in. */
export interface Settings {
  /** RedlockOptions.driftFactor: the drift allowance per ms of ttl. */
  driftFactor: number;
  /** RedlockOptions.retryCount: attempts after the first, unless an acquire says otherwise. */
  retryCount: number;
  /** RedlockOptions.retryDelay: ms between attempts. */
  retryDelay: number;
  /** RedlockOptions.retryJitter: the random spread of each delay, ms. */
  retryJitter: number;
  /** RedlockOptions.nodeTimeout: ms each member gets to answer each call. */
  nodeTimeout: number;
  /**
   * RedlockOptions.logger, each call guarded (what it throws is dropped: src/options/check.ts),
   * or the silent logger if none was given.
   */
  logger: Logger;
  /**
   * Whether `logger` wants debug lines now: asked before each one, so that the hot path builds
   * no log object, and no vote description, that nobody reads.
   */
  debugging(): boolean;
  /** RedlockOptions.clock: systemClock unless one was given. */
  clock: Clock;
  /** RedlockOptions.maxLockTtl: the longest ttl, and the restart quarantine's length. */
  maxLockTtl: number;
  /** RedlockOptions.quarantine: when a restart quarantine counts from (quarantineMsOf); false only to demonstrate the hazard. */
  quarantine: boolean | 'from-restart';
  /** The scripts' quarantine argument for these settings (quarantineMsOf), made once. */
  quarantineMs: number;
  /** RedlockOptions.maxReentrancy: 0 = reentrancy off. */
  maxReentrancy: number;
}

/** The default of each RedlockOptions setting. */
export const defaults = {
  /** 1 % of the ttl (plus 2 ms): the Redlock paper's allowance for clock drift between client and members. */
  driftFactor: 0.01,
  /** node-redlock's: code migrating from it keeps its retry behaviour. */
  retryCount: 10,
  /** node-redlock's, ms. */
  retryDelay: 200,
  /** node-redlock's, ms. */
  retryJitter: 100,
  /** ms: the top of the 5–50 ms the Redis docs suggest for a 10 s ttl on one network. */
  nodeTimeout: 50,
  /** ms: a minute bounds most locks, and keeps a restarted member out for no longer. */
  maxLockTtl: 60_000,
  /** On: off is unsafe (a member that restarted empty could let a second owner in). */
  quarantine: true,
  /** Off: reentrancy needs an AsyncLocalStorage, which slows every promise on Node 20. */
  maxReentrancy: 0,
} as const;

/** Redis accepts larger PX values, but Node timers (auto-extension) do not go beyond this. */
export const MAX_TTL_MS = 2_147_483_647;

export interface AttemptPolicy {
  fencing: boolean;
  /** A shared (read) lock (AcquireOptions.shared). */
  shared: boolean;
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  waitTimeout: number;
  signal: AbortSignal | undefined;
}

/** The options of `using()`: acquire()'s, and how to keep the lock extended. Any other name is refused. */
export interface UsingOptions extends AcquireOptions {
  /**
   * Extend when the remaining validity drops to this many ms. Default: a third of the ttl. Must
   * leave room for one extension round: more than nodeTimeout, less than ttl − drift − nodeTimeout.
   */
  extendThreshold?: number;
  /**
   * The most times the lock is extended; after that it runs out and the signal aborts with
   * reason 'expired'. The Redis docs ask for a bound on reacquisitions, so that a stuck holder
   * cannot keep a resource forever. Default Infinity.
   */
  maxExtensions?: number;
}

/**
 * The quarantine argument of the scripts (one home, src/lua/_quarantine.lua quarantineLeft): 0 = off,
 * maxLockTtl counted from the epoch's first call, or its negative: counted from the restart.
 */
export function quarantineMsOf(settings: Pick<Settings, 'quarantine' | 'maxLockTtl'>): number {
  if (settings.quarantine === false) return 0;
  return settings.quarantine === 'from-restart' ? -settings.maxLockTtl : settings.maxLockTtl;
}
