/**
 * Redlock: the members and the settings, and the entry points. The algorithm lives in
 * src/quorum (one round; one attempt and its rollback; the acquire loop: retries, waiting, budget).
 */
import { acquireWithRetries, type Won } from './quorum/acquire-loop.js';
import { traced, tracing } from './diagnostics.js';
import { argumentError, LockAcquireError } from './errors.js';
import { Lock, type LockContext, type ReleaseResult } from './lock/lock.js';
import { releaseOn } from './quorum/release.js';
import { describeVotes } from './quorum/votes.js';
import type { MemberClient } from './clients/index.js';
import { RedisMember } from './members/redis-member.js';
import { watchDuplicates } from './members/duplicates.js';
import {
  checkAcquireOptions,
  checkBoolean,
  checkExtendThreshold,
  checkFenceFloor,
  checkLockValue,
  checkMaxExtensions,
  checkMembers,
  checkOperatorOptions,
  checkOptionsObject,
  checkResources,
  checkSameSlot,
  checkSettings,
  checkTtl,
} from './options/check.js';
import { acquireOptionNames, checkOptionNames, tryAcquireOptionNames, usingOptionNames } from './options/names.js';
import type { AcquireOptions, AttemptPolicy, OperatorOptions, RedlockOptions, Settings, UsingOptions } from './options/settings.js';
import { Notifications } from './waiting/notifications.js';
import { keepExtended } from './lock/keep-extended.js';
import { Reentrancy, reentrancyError } from './lock/reentrancy.js';
import { quorumOf } from './tally.js';
import { onEveryMember } from './quorum/operator.js';
import { Election, type ElectionOptions } from './election/index.js';
import { checkSemaphoreName, checkSemaphoreOptions, type SemaphoreOptions } from './semaphore/check.js';
import { Semaphore } from './semaphore/semaphore.js';
import { newWaiterId } from './store/keys.js';

/** What a member looks like from outside: its name, and what it said about itself at its last reading. */
export interface MemberStatus {
  /** host:port/db, socket/db, sentinel:name@sentinels/db, or cluster:nodes. */
  readonly id: string;
  /** The role at the last (re)connect or refresh: 'master', 'slave', ...; undefined before the first reading. */
  readonly role: string | undefined;
  /** Why its yes does not count now (not a master, may evict lock keys, the same server as another member), or undefined. */
  readonly notCounting: string | undefined;
}

/** What trustMembers() says of one member. */
export interface TrustResult {
  /** The member, as host:port/db. */
  member: string;
  /** Its current epoch is now trusted: it counts at once, and its absent fence counters read 0. */
  trusted: boolean;
  /** What was left of its quarantine (of this Redlock's maxLockTtl) when it was trusted, ms. */
  quarantineLeftMs?: number;
  /** Why it was not trusted: no answer in time, not a master, an epoch newer than the call (EpochTooNewError). */
  error?: Error;
}

/** What restoreFencing() says of one member. */
export interface RestoreResult {
  /** The member, as host:port/db. */
  member: string;
  /** Its fence counters are at the floor or above, and trusted. */
  restored: boolean;
  /** Its counter after the call. */
  counter?: number;
  /** Why it was not restored: no answer in time, not a master, an epoch newer than the call. */
  error?: Error;
}

/**
 * using()'s error for a `work` that is no function. node-redlock v5's order,
 * using(resources, duration, settings, routine), puts an object where quorumlock expects the
 * work and the function after it: say so, rather than only "must be a function".
 */
function usingWorkError(work: unknown, options: unknown): Error {
  const got = work === null ? 'null' : typeof work;
  if (typeof options === 'function' && typeof work === 'object')
    return argumentError(
      TypeError,
      'work',
      `must be a function, got an object and then a function: quorumlock's order is using(resources, ttl, work, options) (node-redlock v5 passes settings before the routine)`,
    );
  return argumentError(TypeError, 'work', `must be a function, got ${got}`);
}

/** @internal What a Redlock's locks and tests reach that its users do not. */
const internals = new WeakMap<Redlock, LockContext>();

/** @internal The members and settings of `redlock`, for its Lock handles (and tests that forge one). */
export function contextOf(redlock: Redlock): LockContext {
  return internals.get(redlock)!;
}

/**
 * A Redlock client: quorum locks across N independent Redis masters (3 or 5). Made once per
 * process from your ioredis clients; `acquire()`, `tryAcquire()` and `using()` take locks, each a
 * {@link Lock}. Every call to a member is bounded by `nodeTimeout`, validity is counted on a
 * monotonic clock with a drift allowance, and a failed attempt is rolled back on every member.
 *
 * @example
 * const redlock = new Redlock([new Redis(6379), new Redis(6380), new Redis(6381)]);
 * await redlock.using('report:daily', 10_000, async (signal) => buildReport({ signal }));
 */
export class Redlock {
  /** The options it was made with, checked and with the defaults filled in; frozen. */
  readonly settings: Settings;
  readonly #members: readonly RedisMember[];
  readonly #context: LockContext;
  readonly #notifications: Notifications;
  /** The locks each async context holds, for `{ reentrant: true }`; none with maxReentrancy 0. */
  readonly #reentrancy: Reentrancy | undefined;

  /**
   * @param clients one per independent member: ioredis clients to single masters or to
   * Sentinel-managed groups, or ioredis Clusters (clients you own: Redlock never quits them).
   * Use an odd number, 3 or 5: an even count adds a member without adding fault tolerance.
   */
  constructor(clients: readonly MemberClient[], options: RedlockOptions = {}) {
    this.settings = Object.freeze(checkSettings(options));
    this.#members = Object.freeze(checkMembers(clients).map((client) => new RedisMember(client, this.settings.logger, this.settings.clock)));
    const context = Object.freeze({ members: this.#members, quorum: quorumOf(this.#members.length), settings: this.settings });
    this.#context = context;
    internals.set(this, context);
    this.#notifications = new Notifications(this.#members, this.settings.logger);
    this.#reentrancy = this.settings.maxReentrancy > 0 ? new Reentrancy(this.settings.maxReentrancy) : undefined;
    watchDuplicates(context);
  }

  /** Each member as it is now: its id, its role and whether it counts. A fresh snapshot per read. */
  get members(): readonly MemberStatus[] {
    return this.#members.map(({ id, role, notCounting }) => Object.freeze({ id, role, notCounting }));
  }

  /**
   * Closes what this Redlock opened: the subscriber connections waiters listen on (one per
   * member, opened on first wait). Never the clients you passed in. Locks keep working after it;
   * waiting falls back to timed retries. Quitting your clients closes them too.
   */
  quit(): Promise<void> {
    return this.#notifications.quit();
  }

  /**
   * Declares the members brand new and trusted: ends their restart quarantine and lets their
   * absent fence counters read as 0. An explicit operator action for a new deployment, whose
   * members would otherwise count only once maxLockTtl has passed. Never call it for members that
   * may have lost data (restarted without persistence, flushed) while locks were held: that is
   * the hazard the quarantine exists for. It applies to each member's current epoch, whatever
   * maxLockTtl other Redlocks use; a later restart or failover starts a new, untrusted epoch.
   * Resolves with what each member said (quarantineLeftMs: of this Redlock's maxLockTtl).
   *
   * Each member's epoch is read in this call and the trust is bound to it (src/lua/_bound.lua): a
   * member that restarts while the call is under way (a trust ioredis re-sends to its new process)
   * is refused, not trusted, and so is a member whose connection was not ready when the call began
   * or was re-established during it (its reading may be another process's). A member that does
   * not answer within `timeoutMs` (default 10 s) is reported with a timeout error.
   */
  async trustMembers(options: OperatorOptions = {}): Promise<TrustResult[]> {
    const { maxLockTtl, clock } = this.settings;
    const timeoutMs = checkOperatorOptions(options);
    const results = await onEveryMember({
      operation: 'trust',
      members: this.#members,
      call: (member, call) => member.trust(maxLockTtl, call),
      timeoutMs,
      clock,
    });
    const report = results.map(({ member, ok, value, error }) =>
      ok ? { member, trusted: true, quarantineLeftMs: value! } : { member, trusted: false, error: error! },
    );
    this.settings.logger.info({ members: report.map(({ member, trusted }) => ({ member, trusted })) }, 'members declared trusted');
    return report;
  }

  /**
   * The operator's way back for fencing after a majority of members lost their data at once
   * (then no quorum of trusted counters is left, and fenced acquires fail as 'unfenced'). Raises
   * every member's fence counter to at least `floor` and marks it trusted. `floor` must be at or
   * above every token ever issued for these members' resources, e.g. the highest token your
   * protected resources accepted (fencedWrite keeps it in its guard key); the next token is then
   * above it. The quarantine is not touched. Resolves with each member's counter after. Like
   * trustMembers, each write is bound to the epoch read in this call, and has a deadline.
   */
  async restoreFencing(floor: number, options: OperatorOptions = {}): Promise<RestoreResult[]> {
    checkFenceFloor(floor);
    const timeoutMs = checkOperatorOptions(options);
    const results = await onEveryMember({
      operation: 'restore',
      members: this.#members,
      call: (member, call) => member.restoreFencing(floor, call),
      timeoutMs,
      clock: this.settings.clock,
    });
    const report = results.map(({ member, ok, value, error }) =>
      ok ? { member, restored: true, counter: value! } : { member, restored: false, error: error! },
    );
    this.settings.logger.warn(
      { floor, members: report.map((result) => ({ member: result.member, restored: result.restored, counter: result.counter })) },
      'fence counters restored by an operator',
    );
    return report;
  }

  /**
   * Releases the lock that `value` holds on `resources` without its Lock handle: for a lock
   * acquired by another process or object that passed on only its resources and `lock.value`
   * (go-redsync's split lock/unlock, node-redlock's `redlock.release(lock)` on a rebuilt Lock).
   * Owner-only, like `lock.release()`: each member deletes only keys that still hold `value`
   * (a shared lock's value: only its reader entry), so a wrong or stale value releases nothing and
   * its votes read 'absent'. Resolves like `lock.release()`: `freed` when a quorum confirmed no key
   * holds `value` there any more (true of a wrong value too: a 'released' vote shows a deletion);
   * never throws for members that are down. Pass all of `lock.resources`: members do not know
   * which resources one lock spans, so a release of some frees only those. Unlike `lock.release()`
   * it knows no lockId (so publishes no `release` event; the Lock, where it lives, never learns),
   * and waits in line places or hand-overs the acquirer kept are left to expire by their leases.
   * Checks `resources` and `value` (it must look like a `lock.value`) before any network call.
   * There is no extend by value: an extension is sound only against the deadline its holder knows
   * (quorum/extend.ts), which a value alone does not carry.
   */
  async release(resources: string | readonly string[], value: string): Promise<ReleaseResult> {
    if (typeof resources === 'object' && resources !== null && !Array.isArray(resources))
      throw argumentError(
        TypeError,
        'resources',
        'must be a string or an array of strings: to release a Lock you hold, call lock.release(); by value, pass (lock.resources, lock.value)',
      );
    const names = this.#resources(resources);
    const checked = checkLockValue(value);
    const { members, quorum, settings } = this.#context;
    const round = await releaseOn({ members, quorum, settings, resources: names, value: checked, settle: 'quorum' });
    if (!round.won)
      settings.logger.warn(
        { resources: names, votes: describeVotes(round.votes, 'released') },
        'release by value not confirmed by a quorum; the keys expire by their TTL',
      );
    return { freed: round.won, votes: round.votes, elapsedMs: round.elapsedMs };
  }

  /** Votes needed: floor(N/2) + 1. */
  get quorum(): number {
    return this.#context.quorum;
  }

  /**
   * A leader election named `name` on these members (docs/elections.md): campaign() waits to be
   * elected, leader() and observe() say who leads. Leadership is the fenced lock of a reserved
   * resource; its fencing token is the term. Checks its inputs now, before any network call.
   */
  election(name: string, options: ElectionOptions): Election {
    return new Election({ members: this.#members, settings: this.settings, acquire: (names, ttl, policy) => this.#acquire(names, ttl, policy) }, name, options);
  }

  /**
   * Locks `resources` (one name or several; all or none) for `ttl` ms, retrying as configured.
   * Resolves with a Lock whose remainingMs() is positive; rejects with LockAcquireError (every
   * attempt's per-member votes inside) once retries or the wait budget run out, or with
   * `signal.reason` when aborted. Nothing it set is left behind on any member when it rejects.
   */
  async acquire(resources: string | readonly string[], ttl: number, options?: AcquireOptions): Promise<Lock> {
    const names = this.#resources(resources);
    checkTtl(ttl, this.settings);
    const policy = checkAcquireOptions(options, this.settings);
    // After checkAcquireOptions: a non-object is refused there first, as before.
    if (options !== undefined) checkOptionNames(options, acquireOptionNames);
    if (options?.reentrant !== undefined && checkBoolean('reentrant', options.reentrant)) {
      const nested = this.#nested(names, policy);
      if (nested) return nested.lock;
    }
    // Not through #acquire: a returned promise would cost the hot path two more ticks.
    const lockId = newWaiterId(this.#notifications.listener);
    return this.#lock(await this.#traced(lockId, names, ttl, () => this.#loop(lockId, names, ttl, policy)));
  }

  /** acquire() for using(), whose options (acquire's and its own) are checked already. */
  async #acquire(names: readonly string[], ttl: number, policy: AttemptPolicy): Promise<Lock> {
    const lockId = newWaiterId(this.#notifications.listener);
    return this.#lock(await this.#traced(lockId, names, ttl, () => this.#loop(lockId, names, ttl, policy)));
  }

  /**
   * One attempt, no retries. Resolves with null when another owner holds the resource; rejects
   * with LockAcquireError when too few members answered, so an outage is never mistaken for
   * "someone else has it".
   */
  async tryAcquire(resources: string | readonly string[], ttl: number, options: Pick<AcquireOptions, 'signal' | 'shared'> = {}): Promise<Lock | null> {
    const names = this.#resources(resources);
    checkTtl(ttl, this.settings);
    // Checked as given: a non-object spread below would pass as an object.
    checkOptionsObject(options);
    checkOptionNames(options, tryAcquireOptionNames);
    // Named, not spread (a spread costs ~2 µs): what one attempt can use, as before.
    const { signal, fencing, waitTimeout, shared } = options as AcquireOptions;
    const policy = checkAcquireOptions({ signal, fencing, waitTimeout, shared, retryCount: 0 }, this.settings);
    const lockId = newWaiterId(this.#notifications.listener);
    // 'taken' is an answer here, not a failure: so it is for tracers too.
    const won = await this.#traced(lockId, names, ttl, () =>
      this.#loop(lockId, names, ttl, policy).catch((error: unknown) => {
        if (error instanceof LockAcquireError && error.outcome === 'taken') return null;
        throw error;
      }),
    );
    return won === null ? null : this.#lock(won);
  }

  /**
   * Acquires, runs `work` while keeping the lock extended, and releases when the work settles,
   * also when it throws. `work` gets the lock's signal: it aborts with a LockLostError the moment
   * the lock's validity runs out or an extension finds the lock lost (an extension that only lacked
   * answers is retried within the validity); stop working when it does. Resolves with
   * what `work` resolved with; rejects with its rejection, or with the LockLostError when the work
   * finished after the lock was lost (it ran partly unprotected, and the caller should know).
   */
  async using<T>(
    resources: string | readonly string[],
    ttl: number,
    work: (signal: AbortSignal, lock: Lock) => Promise<T>,
    options?: UsingOptions,
  ): Promise<T> {
    if (typeof work !== 'function') throw usingWorkError(work, options);
    checkOptionsObject(options);
    if (options !== undefined) checkOptionNames(options, usingOptionNames);
    const names = this.#resources(resources);
    checkTtl(ttl, this.settings);
    const threshold = checkExtendThreshold(options?.extendThreshold, ttl, this.settings);
    const maxExtensions = checkMaxExtensions(options?.maxExtensions);
    const policy = checkAcquireOptions(options, this.settings);
    const nested = options?.reentrant !== undefined && checkBoolean('reentrant', options.reentrant) ? this.#nested(names, policy) : undefined;
    if (nested) {
      // The outer using() keeps the lock extended and releases it; this one only runs the work.
      const { lock, depth } = nested;
      try {
        const result = await this.#reentrancy!.run(lock, depth, () => work(lock.signal, lock));
        if (lock.signal.aborted) throw lock.signal.reason;
        return result;
      } finally {
        await lock.release();
      }
    }
    const lock = await this.#acquire(names, ttl, policy);
    const signal = lock.signal;
    const stop = keepExtended(lock, ttl, threshold, this.settings.clock, maxExtensions);
    try {
      // With reentrancy on, the work runs in a frame naming this lock (lock/reentrancy.ts).
      const result = await (this.#reentrancy ? this.#reentrancy.run(lock, 0, () => work(signal, lock)) : work(signal, lock));
      if (signal.aborted) throw signal.reason;
      return result;
    } finally {
      stop();
      await lock.release();
    }
  }

  /** `{ reentrant: true }`: a nested handle when this context holds `names` already (reentrancy.ts). */
  #nested(names: readonly string[], policy: AttemptPolicy) {
    if (!this.#reentrancy)
      throw reentrancyError(
        names,
        1,
        'reentrant: true needs a Redlock made with maxReentrancy > 0 (e.g. new Redlock(clients, { maxReentrancy: 4 })): reentrancy is off by default',
      );
    // Refused there too: an upgrade of a shared lock, or a fenced acquire inside an unfenced one.
    return this.#reentrancy.nest(this.#context, names, policy);
  }

  /**
   * A counting semaphore named `name`: at most `permits` holders at once, each permit its own lock
   * on the quorum (docs/semaphores.md). Checks its arguments now; no network call until acquire.
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    const checked = checkSemaphoreName(name);
    const permits = checkSemaphoreOptions(options);
    const host = {
      context: this.#context,
      members: this.#members,
      acquire: (lockId: string, resources: readonly string[], ttl: number, policy: AttemptPolicy) => this.#loop(lockId, resources, ttl, policy),
      newLockId: () => newWaiterId(this.#notifications.listener),
    };
    return new Semaphore(host, checked, permits);
  }

  /**
   * The checked names, frozen: the same array reaches every round, member, event and log line of
   * the acquire (members key caches on it: serverTopology in members/redis-member.ts), so nobody may change it midway.
   */
  #resources(resources: string | readonly string[]): readonly string[] {
    const names = checkResources(resources);
    checkSameSlot(names, this.#members);
    return Object.freeze(names);
  }

  #loop(lockId: string, resources: readonly string[], ttl: number, policy: AttemptPolicy): Promise<Won> {
    const { members, quorum, settings } = this.#context;
    return acquireWithRetries({ members, quorum, settings, resources, ttl, policy, notifications: this.#notifications, lockId });
  }

  /**
   * An acquire, traced ('quorumlock:acquire') when anyone listens: its result is { fence,
   * remainingMs }, or { taken: true } for tryAcquire's null. Otherwise just the acquire, adding
   * no promise of its own (the hot path).
   */
  #traced<T extends Won | null>(lockId: string, resources: readonly string[], ttl: number, acquire: () => Promise<T>): Promise<T> {
    if (!tracing.acquire.hasSubscribers) return acquire();
    const { clock } = this.settings;
    return traced(tracing.acquire, { lockId, resources, ttl }, acquire, (won) =>
      won === null ? { taken: true } : { fence: won.fence, remainingMs: won.deadline - clock.now() },
    );
  }

  /** The handle of a won acquire (named by the lockId it was acquired as, in events and logs). */
  #lock(won: Won): Lock {
    return new Lock(this.#context, won);
  }
}
