/**
 * A counting semaphore on the quorum: at most `permits` holders at once.
 *
 * Construction (docs/semaphores.md has the whole argument): permit i of semaphore `name` IS the
 * exclusive lock on its own key, permitResource(name, i) (src/store/keys.ts). A holder holds one
 * permit, won by the exclusive lock's acquire on that one key: a quorum of members, validity on
 * the monotonic clock less the drift allowance, rollback on every member when it fails, the
 * restart quarantine, fencing. So whatever the exclusive lock guarantees for one key holds for
 * each permit, under the same timing model, and since no two holders' guaranteed intervals of
 * one permit overlap, at most `permits` guaranteed intervals overlap at any instant. Nothing is
 * counted: a counter per member is what lets three clients each believe they hold one of two
 * permits on three members (each counter says "2 of 2" to a different majority).
 *
 * What is not safety but cost: which permit to try. One read per member, in one round (probe.ts), says
 * which permits a quorum sees free; the acquire tries those (in an order that starts at a rotating
 * offset, so that concurrent acquires of one process spread out), one attempt each. When none is
 * won it waits in the fair line of the held permit with the shortest line, for a slice that
 * starts at retryDelay ± jitter (+ 2 × nodeTimeout) and doubles up to 2 s — a release there
 * hands the permit over at once — then reads again. There is no fairness across permits: a waiter
 * is first only in its own line, and leaving a line at a slice's end loses the place in it.
 */
import type { Won } from '../quorum/acquire-loop.js';
import { retryDelayMs } from '../quorum/wait.js';
import { argumentError, LockAcquireError, SemaphoreUnavailableError, type AttemptRecord } from '../errors.js';
import type { LockContext } from '../lock/lock.js';
import { keepExtended } from '../lock/keep-extended.js';
import { checkAcquireOptions, checkExtendThreshold, checkMaxExtensions, checkOptionsObject, checkTtl } from '../options/check.js';
import { checkOptionNames, semaphoreAcquireOptionNames, semaphoreUsingOptionNames } from '../options/names.js';
import type { AcquireOptions, AttemptPolicy, UsingOptions } from '../options/settings.js';
import { quorumOf } from '../tally.js';
import { permitResource } from '../store/keys.js';
import { Permit } from './permit.js';
import { readPermits, viewOf, type PermitMember, type PermitView } from './probe.js';

/** @internal What a Semaphore needs from its Redlock: its members (the lock's, and the same with their permit read), settings, and the lock's acquire loop. */
export interface SemaphoreHost {
  readonly context: LockContext;
  /** context.members, as what reads the permits (probe.ts). */
  readonly members: readonly PermitMember[];
  /** The exclusive lock's acquire loop (Redlock's) on already checked resources. */
  acquire(lockId: string, resources: readonly string[], ttl: number, policy: AttemptPolicy): Promise<Won>;
  /** A new lock id, which is also its waiter id in line (the Redlock's: its listener wakes it). */
  newLockId(): string;
}

/** What holders() reports per held permit. */
export interface PermitHolder {
  /** Which permit: 0 .. permits − 1. */
  permit: number;
  /** The quorum-th longest remaining key lifetime: a quorum of members keeps the permit's key at least this long. */
  remainingMs: number;
}

/** Free permits tried per read before waiting in a line: more would mostly meet contenders who read the same. */
const TRIES_PER_READ = 2;
/** The longest slice in one line before reading again (doubling from retryDelay ± jitter + 2 × nodeTimeout). */
const SLICE_MAX_MS = 2_000;

function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/**
 * A semaphore: `permits` leases on the quorum, each its own lock. Made by
 * `redlock.semaphore(name, { permits })`; cheap, holds no connection. Every Redlock (in any
 * process) that names the same semaphore must give it the same `permits`: a client with more
 * permits uses keys the others do not look at (it may then hold more than the others' count).
 *
 * @example
 * const pool = redlock.semaphore('gpu-slots', { permits: 4 });
 * await pool.using(30_000, async (signal, permit) => render({ signal, slot: permit.permit }));
 */
export class Semaphore {
  /** The semaphore's name: every client using this name on these members shares its permits. */
  readonly name: string;
  /** How many holders at once; every client of one semaphore must use the same count. */
  readonly permits: number;
  readonly #host: SemaphoreHost;
  /** The permit keys, index = permit. */
  readonly #resources: readonly (readonly string[])[];
  readonly #keys: readonly string[];
  /** Where this process's next acquire starts looking: random at first, then rotating. */
  #offset: number;
  /**
   * Whether this semaphore's last acquire had to wait in a line: all permits were busy, so the
   * next acquire mostly skips the blind first try (a wasted round under contention).
   */
  #contended = false;

  /** @internal Made by redlock.semaphore(), which checks the name and permits. */
  constructor(host: SemaphoreHost, name: string, permits: number) {
    this.#host = host;
    this.name = name;
    this.permits = permits;
    this.#keys = Object.freeze(Array.from({ length: permits }, (_, index) => permitResource(name, index)));
    // Frozen, one array per permit: the members cache their keys on the array (members/redis-member.ts, serverTopology).
    this.#resources = Object.freeze(this.#keys.map((key) => Object.freeze([key])));
    this.#offset = Math.floor(Math.random() * permits);
  }

  /**
   * Acquires one permit for `ttl` ms: resolves with a {@link Permit} (a Lock; `permit.permit` is
   * its index) whose remainingMs() is positive. Takes acquire()'s options: retryCount counts the
   * waits in a permit's line after the first look, waitTimeout bounds it all, `signal` aborts it.
   * Rejects with LockAcquireError (every attempt's votes) when no permit could be won in time.
   */
  async acquire(ttl: number, options?: AcquireOptions): Promise<Permit> {
    const { settings } = this.#host.context;
    checkTtl(ttl, settings);
    const policy = checkAcquireOptions(options, settings);
    if (options !== undefined) checkOptionNames(options, semaphoreAcquireOptionNames);
    return this.#acquire(ttl, policy);
  }

  /**
   * Acquires a permit, runs `work` while keeping it extended, and releases it when the work
   * settles, as redlock.using() does for a lock: `work` gets the permit's signal, aborted with a
   * LockLostError the moment the permit stops being guaranteed.
   */
  async using<T>(ttl: number, work: (signal: AbortSignal, permit: Permit) => Promise<T>, options?: UsingOptions): Promise<T> {
    if (typeof work !== 'function') throw argumentError(TypeError, 'work', `must be a function, got ${work === null ? 'null' : typeof work}`);
    const { settings } = this.#host.context;
    checkOptionsObject(options);
    if (options !== undefined) checkOptionNames(options, semaphoreUsingOptionNames);
    checkTtl(ttl, settings);
    const threshold = checkExtendThreshold(options?.extendThreshold, ttl, settings);
    const maxExtensions = checkMaxExtensions(options?.maxExtensions);
    const permit = await this.#acquire(ttl, checkAcquireOptions(options, settings));
    const signal = permit.signal;
    const stop = keepExtended(permit, ttl, threshold, settings.clock, maxExtensions);
    try {
      const result = await work(signal, permit);
      if (signal.aborted) throw signal.reason;
      return result;
    } finally {
      stop();
      await permit.release();
    }
  }

  /**
   * The permits a quorum of members holds now, each with how long a quorum keeps it at least, in
   * permit order. A reading, not a lock: it may be stale by the time it resolves. Rejects with
   * SemaphoreUnavailableError when fewer than a quorum answered within nodeTimeout.
   */
  async holders(): Promise<PermitHolder[]> {
    const { members } = this.#host;
    const readings = await readPermits(members, this.#host.context.settings, this.#keys);
    const view = viewOf(readings, this.permits);
    if (!view.answered) throw new SemaphoreUnavailableError(this.name, readings, quorumOf(members.length));
    return view.held;
  }

  async #acquire(ttl: number, policy: AttemptPolicy): Promise<Permit> {
    const { context } = this.#host;
    const { clock, nodeTimeout } = context.settings;
    const begin = clock.now();
    const end = begin + policy.waitTimeout;
    const attempts: AttemptRecord[] = [];
    // Exclusive, always: the safety argument is that each permit is a mutex. A shared permit would
    // admit any number of holders (the option is refused by name too: options/names.ts).
    const exclusive: AttemptPolicy = { ...policy, shared: false };
    const once: AttemptPolicy = { ...exclusive, retryCount: 0 };
    const start = this.#offset;
    this.#offset = (this.#offset + 1) % this.permits;
    let stoppedBecause: LockAcquireError['stoppedBecause'] = 'wait budget exhausted';

    /** One exclusive acquire of permit `index`; null when it was not won (its attempts recorded). */
    const tryPermit = async (index: number, base: AttemptPolicy): Promise<Permit | null> => {
      const leftMs = end - clock.now();
      if (leftMs <= 0) return null;
      const lockId = this.#host.newLockId();
      const resources = this.#resources[index]!;
      try {
        const won = await this.#host.acquire(lockId, resources, ttl, { ...base, waitTimeout: Math.min(base.waitTimeout, leftMs) });
        return new Permit(context, won, this.name, index);
      } catch (error) {
        if (!(error instanceof LockAcquireError)) throw error;
        const offset = attempts.length;
        for (const record of error.attempts)
          attempts.push({ ...record, attempt: offset + record.attempt, startedMs: record.startedMs + (clock.now() - begin - error.elapsedMs) });
        // No other permit can be won either.
        if (error.stoppedBecause === 'clients closed') throw new LockAcquireError(this.#keys, attempts, clock.now() - begin, error.stoppedBecause);
        return null;
      }
    };

    // The first look and a blind try of the next permit in this process's rotation, side by
    // side: when permits are not all taken, the try usually wins in one round. Under contention
    // (the last acquire waited in a line) only one acquire in four tries blind, to notice the end
    // of it; an acquire that may not wait (retryCount 0) always does, so that it has tried one.
    const first = !this.#contended || policy.retryCount === 0 || Math.random() < 0.25 ? start : -1;
    const reading = this.#read(end);
    const blind = first === -1 ? null : await tryPermit(first, once);
    if (blind) {
      this.#contended = false;
      return blind;
    }
    let view: PermitView = await reading;
    for (let waits = 0; ; waits++) {
      policy.signal?.throwIfAborted();
      const rotated = (index: number) => (index - start + this.permits) % this.permits;
      const free = shuffled(view.free.filter((index) => !(waits === 0 && index === first))).sort((a, b) => rotated(a) - rotated(b));
      for (const index of free.slice(0, TRIES_PER_READ)) {
        const permit = await tryPermit(index, once);
        if (permit) {
          this.#contended = false;
          return permit;
        }
      }
      if (end - clock.now() < nodeTimeout) break;
      if (waits >= policy.retryCount) {
        stoppedBecause = 'retries exhausted';
        break;
      }
      // Wait in the shortest line of a permit that is not free (held, or kept for the first in
      // its line; ties at random: contenders spread evenly over the lines, so that every release
      // has someone to hand the permit to), for one slice; a release there hands it to the first
      // in line at once. Each slice is twice the one before
      // (up to SLICE_MAX_MS): leaving a line loses the place in it, so a waiter that has waited
      // long stays long, while a first slice is short in case another permit frees sooner.
      const all = Array.from({ length: this.permits }, (_, index) => index);
      const busy = all.filter((index) => !view.free.includes(index));
      const lines = busy.length > 0 ? busy : all;
      const shortest = Math.min(...lines.map((index) => view.waiting[index] ?? 0));
      const candidates = lines.filter((index) => (view.waiting[index] ?? 0) === shortest);
      const target = candidates[Math.floor(Math.random() * candidates.length)]!;
      const sliceMs = Math.min((retryDelayMs(policy) + 2 * nodeTimeout) * 2 ** waits, Math.max(SLICE_MAX_MS, 4 * nodeTimeout));
      this.#contended = true;
      const permit = await tryPermit(target, { ...exclusive, retryCount: Infinity, waitTimeout: sliceMs });
      if (permit) return permit;
      if (end - clock.now() < nodeTimeout) break;
      view = await this.#read(end);
    }
    policy.signal?.throwIfAborted();
    throw new LockAcquireError(this.#keys, attempts, clock.now() - begin, stoppedBecause);
  }

  /** The members' view of the permits, within the budget; an unreadable view makes every permit worth a try. */
  async #read(end: number): Promise<PermitView> {
    const { settings } = this.#host.context;
    const readings = await readPermits(this.#host.members, settings, this.#keys, end - settings.clock.now());
    const view = viewOf(readings, this.permits);
    if (view.answered) return view;
    return { answered: false, free: Array.from({ length: this.permits }, (_, index) => index), held: [], waiting: [] };
  }
}
