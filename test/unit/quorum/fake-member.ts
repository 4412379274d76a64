/**
 * A member in memory, for the algorithm's unit tests (src/quorum): it implements `Member`
 * (src/members/member.ts) on a ManualClock, so keys really expire and answers really take time.
 * A test double for the algorithm, not a Redis simulator (test/model/ runs the real Lua for that).
 *
 * What it keeps: per resource, the lock key (value and expiry) and the fence counter, and for the
 * member its epoch (an id, whether it is complete, its floor and max: src/lua/_fence.lua) and the
 * quarantine left. Lines of waiters are not kept: a refusal never names a place.
 *
 * Timing: a call runs, and is answered, `latencyMs` (plus `slowMs` when 'slow') after it was
 * made, and never before an earlier call to the same member (calls run in the order made, as on
 * one connection: a release never overtakes the acquire it undoes). Every call is logged when it
 * is made, whether or not the member ever runs it, so a test can see what was sent to it.
 *
 * Failure modes:
 * - 'down': runs nothing, never answers (a dead host, a partition);
 * - 'error': runs nothing, rejects with an Error (a refused connection, a script error);
 * - 'mute': runs the call, but its answer never arrives (a reply lost on the way back: why a
 *   failed attempt releases on every member);
 * - 'slow': runs and answers `slowMs` later than `latencyMs`.
 */
import type { ManualClock } from '../../../src/clock/index.js';
import type { AcquireRequest, ExtendReply, FenceReply, Locked, Member, Refusal } from '../../../src/members/member.js';
import { silentLogger, type Settings } from '../../../src/options/settings.js';
import { NOT_COUNTING } from '../../../src/store/protocol.js';

export type Failure = 'down' | 'error' | 'mute' | 'slow';

export interface FakeMemberOptions {
  latencyMs?: number;
  failure?: Failure;
  /** Extra latency in 'slow' mode. Default 1 000 ms. */
  slowMs?: number;
  /** Quarantine left, from now (the member's data is younger than the quarantine). Default 0. */
  quarantineLeftMs?: number;
  /** Why the member must not count (not a master, may evict, a duplicate). */
  notCounting?: string;
  /** The epoch id. Default `${id}#1`. */
  epoch?: string;
  /** Fence counters per resource, in the current epoch. Default none. */
  counters?: Record<string, number>;
  /** The epoch is complete (brand new, or given a floor): every resource reads trusted. Default true. */
  complete?: boolean;
  /** The epoch's floor (makes it complete). */
  floor?: number;
}

/** One call as it was made. */
export type Call =
  | { op: 'acquire'; at: number; resources: string[]; request: AcquireRequest }
  | { op: 'extend'; at: number; resources: string[]; value: string; ttlMs: number }
  | { op: 'release'; at: number; resources: string[]; value: string; leaving?: string | undefined }
  | { op: 'leave'; at: number; resources: string[]; waiterId: string }
  | { op: 'fence'; at: number; resources: string[]; value: string; token: number; mode: 'propose' | 'sync'; epoch: string; floor: number | undefined };

interface Key {
  value: string;
  expiresAt: number;
}

export class FakeMember implements Member {
  latencyMs: number;
  failure: Failure | undefined;
  slowMs: number;
  notCounting: string | undefined;
  epoch: string;
  /** Complete epochs read trusted for every resource, at least at `floor` (0 when brand new). */
  complete: boolean;
  floor: number;
  /** The highest counter or floor written in this epoch. */
  max: number;
  readonly counters = new Map<string, number>();
  readonly keys = new Map<string, Key>();
  /** The values of the acquires this member refused holding nothing of them (their rollback may skip it). */
  readonly refused = new Set<string>();
  /** Every call, in the order made. */
  readonly calls: Call[] = [];
  #quarantineUntil: number;
  /** When the last call made to this member runs: later calls never run before it. */
  #lastRunAt = -Infinity;

  constructor(
    readonly clock: ManualClock,
    readonly id: string,
    options: FakeMemberOptions = {},
  ) {
    this.latencyMs = options.latencyMs ?? 0;
    this.failure = options.failure;
    this.slowMs = options.slowMs ?? 1_000;
    this.notCounting = options.notCounting;
    this.epoch = options.epoch ?? `${id}#1`;
    this.#quarantineUntil = clock.now() + (options.quarantineLeftMs ?? 0);
    for (const [resource, counter] of Object.entries(options.counters ?? {})) this.counters.set(resource, counter);
    this.floor = options.floor ?? 0;
    this.complete = options.complete ?? true;
    if (options.floor !== undefined) this.complete = true;
    this.max = Math.max(this.floor, 0, ...this.counters.values());
  }

  /** The value a resource's key holds now, or undefined (never set, expired, deleted). */
  holder(resource: string): string | undefined {
    const key = this.keys.get(resource);
    return key && key.expiresAt > this.clock.now() ? key.value : undefined;
  }

  /** Sets `resource` for another owner (a holder the test puts there). */
  hold(resource: string, value: string, ttlMs: number): void {
    this.keys.set(resource, { value, expiresAt: this.clock.now() + ttlMs });
  }

  /** The calls of one kind, in order. */
  callsOf<Op extends Call['op']>(op: Op): Extract<Call, { op: Op }>[] {
    return this.calls.filter((call): call is Extract<Call, { op: Op }> => call.op === op);
  }

  /** The fence reading of `resources` as _fence.lua reads it: the highest counter, and whether trusted. */
  reading(resources: readonly string[]): { highest: number; trusted: boolean } {
    const base = this.complete ? this.floor : undefined;
    let highest = 0;
    let trusted = true;
    for (const resource of resources) {
      const counter = this.counters.get(resource);
      if (counter !== undefined) highest = Math.max(highest, counter, base ?? 0);
      else if (base !== undefined) highest = Math.max(highest, base);
      else trusted = false;
    }
    return { highest, trusted };
  }

  acquire(resources: readonly string[], request: AcquireRequest): Promise<Locked | Refusal> {
    return this.#call({ op: 'acquire', at: this.clock.now(), resources: [...resources], request }, () => {
      const now = this.clock.now();
      const quarantineLeft = request.quarantineMs > 0 ? Math.max(0, this.#quarantineUntil - now) : 0;
      const epoch = request.quarantineMs > 0 || request.fencing ? this.epoch : undefined;
      const held = resources.filter((resource) => this.holder(resource) !== undefined);
      const own = held.filter((resource) => this.holder(resource) === request.value).length;
      // As acquire.lua: a second run of the same call that finds its whole hold is granted again,
      // untouched; held otherwise, it is refused, saying whether part of its hold is here.
      if (held.length > 0 && own < resources.length) {
        const holdsOwn = own > 0;
        if (!holdsOwn) this.refused.add(request.value);
        const refusal: Refusal = { why: 'taken', heldForMs: Math.max(...held.map((resource) => this.keys.get(resource)!.expiresAt - now)), place: undefined };
        if (epoch !== undefined) refusal.epoch = epoch;
        if (request.fencing && request.quarantineMs > 0) refusal.quarantinedForMs = quarantineLeft;
        if (holdsOwn) refusal.holdsOwn = true;
        return refusal;
      }
      if (own < resources.length) for (const resource of resources) this.keys.set(resource, { value: request.value, expiresAt: now + request.ttlMs });
      const locked: Locked = { quarantinedForMs: quarantineLeft };
      if (epoch !== undefined) locked.epoch = epoch;
      if (request.fencing) locked.fence = this.reading(resources);
      // As RedisMember says it: a member that must not count answers quarantined for good.
      return this.notCounting === undefined ? locked : { ...locked, quarantinedForMs: NOT_COUNTING, notCounting: this.notCounting };
    });
  }

  extend(resources: readonly string[], value: string, ttlMs: number): Promise<ExtendReply> {
    return this.#call({ op: 'extend', at: this.clock.now(), resources: [...resources], value, ttlMs }, () => {
      const holders = resources.map((resource) => this.holder(resource));
      if (holders.some((holder) => holder !== undefined && holder !== value)) return 'taken';
      if (holders.some((holder) => holder === undefined)) return 'gone';
      for (const resource of resources) this.keys.set(resource, { value, expiresAt: this.clock.now() + ttlMs });
      return 'extended';
    });
  }

  release(resources: readonly string[], value: string, leaving?: string): Promise<number> {
    return this.#call({ op: 'release', at: this.clock.now(), resources: [...resources], value, leaving }, () => {
      const ours = resources.filter((resource) => this.holder(resource) === value);
      for (const resource of ours) this.keys.delete(resource);
      return ours.length;
    });
  }

  leave(resources: readonly string[], waiterId: string): Promise<number> {
    return this.#call({ op: 'leave', at: this.clock.now(), resources: [...resources], waiterId }, () => 1);
  }

  /** fence.lua, on this member's state. */
  fence(resources: readonly string[], value: string, token: number, mode: 'propose' | 'sync', epoch: string, floor?: number): Promise<FenceReply> {
    return this.#call({ op: 'fence', at: this.clock.now(), resources: [...resources], value, token, mode, epoch, floor }, () => {
      const refused: FenceReply = { raised: false, highest: 0, trusted: false, max: 0, complete: false };
      const sync = mode === 'sync';
      if ((epoch !== '' && epoch !== this.epoch) || (sync && epoch === '')) return refused;
      // A candidate is written only while we hold the lock here.
      if (!sync && resources.some((resource) => this.holder(resource) !== value)) return refused;
      const { highest, trusted } = this.reading(resources);
      if (sync && floor !== undefined && !this.complete) {
        this.floor = floor;
        this.complete = true;
        this.max = Math.max(this.max, floor);
      }
      // Never raised from an untrusted reading unless the token is established (a sync).
      if (highest >= token || (!trusted && !sync)) return { raised: false, highest, trusted, max: this.max, complete: this.complete };
      for (const resource of resources) this.counters.set(resource, Math.max(this.counters.get(resource) ?? 0, token));
      this.max = Math.max(this.max, token);
      return { raised: true, highest, trusted, max: this.max, complete: this.complete };
    });
  }

  /** Runs `run` when the call's turn comes, and answers as the failure mode says. */
  #call<T>(call: Call, run: () => T): Promise<T> {
    this.calls.push(call);
    const failure = this.failure;
    if (failure === 'down') return new Promise<T>(() => {});
    const delay = this.latencyMs + (failure === 'slow' ? this.slowMs : 0);
    const runAt = Math.max(this.clock.now() + delay, this.#lastRunAt);
    this.#lastRunAt = runAt;
    return new Promise<T>((resolve, reject) => {
      this.clock.setTimer(() => {
        if (failure === 'error') return reject(new Error(`${this.id}: connection refused`));
        const result = run();
        if (failure !== 'mute') resolve(result);
      }, runAt - this.clock.now());
    });
  }
}

/** A full turn of the event loop: promise jobs, nextTicks and immediates (a round's checks). */
export const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs the clock until `promise` settles: each step lets the loop turn, then fires the next due
 * timer (members' answers, round deadlines, sleeps) at its own time. With `stepMs`, time moves
 * `stepMs` per turn of the loop instead of jumping to the next timer (a loop that takes time, so
 * that what a test sends in one turn goes out before a later answer comes in). Returns how it settled.
 */
export async function drive<T>(
  clock: ManualClock,
  promise: Promise<T>,
  options: { stepMs?: number; maxSteps?: number } = {},
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  const { stepMs, maxSteps = 100_000 } = options;
  let outcome: { ok: true; value: T } | { ok: false; error: unknown } | undefined;
  promise.then(
    (value) => (outcome = { ok: true, value }),
    (error: unknown) => (outcome = { ok: false, error }),
  );
  for (let step = 0, idle = 0; step < maxSteps; step++) {
    await turn();
    if (outcome) return outcome;
    const next = clock.nextTimerAt();
    if (next === undefined) {
      // Nothing is due: the code under test may still be between turns (an awaited immediate).
      if (++idle > 20) throw new Error('drive: nothing is due and the promise has not settled');
      continue;
    }
    idle = 0;
    clock.advance(stepMs ?? Math.max(0, next - clock.now()));
  }
  throw new Error(`drive: not settled after ${maxSteps} steps`);
}

/** drive(), for a promise that must resolve. */
export async function settle<T>(clock: ManualClock, promise: Promise<T>, options: { stepMs?: number } = {}): Promise<T> {
  const outcome = await drive(clock, promise, options);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

/** Runs every timer that is due, up to `untilMs` from now (stragglers, releases, expiries). */
export async function runFor(clock: ManualClock, untilMs: number): Promise<void> {
  const end = clock.now() + untilMs;
  for (;;) {
    await turn();
    const next = clock.nextTimerAt();
    if (next === undefined || next > end) break;
    clock.advance(Math.max(0, next - clock.now()));
  }
  clock.advance(Math.max(0, end - clock.now()));
  await turn();
}

/** Settings on `clock`: nodeTimeout 50, driftFactor 0.01, the quarantine on (maxLockTtl 60 s). */
export function settingsOn(clock: ManualClock, overrides: Partial<Settings> = {}): Settings {
  return {
    driftFactor: 0.01,
    retryCount: 0,
    retryDelay: 200,
    retryJitter: 0,
    nodeTimeout: 50,
    logger: silentLogger,
    clock,
    maxLockTtl: 60_000,
    quarantine: true,
    maxReentrancy: 0,
    ...overrides,
  };
}

/** `count` members named m0, m1, ..., each with the options `optionsOf(i)` gives. */
export function fakeMembers(clock: ManualClock, count: number, optionsOf: (index: number) => FakeMemberOptions = () => ({})): FakeMember[] {
  return Array.from({ length: count }, (_, index) => new FakeMember(clock, `m${index}`, optionsOf(index)));
}

/**
 * Whether nothing of the attempt with `value` can be left on `member`: it was sent a release after
 * the acquire, or it refused that acquire holding nothing of it (Refusal.holdsOwn unset), so the
 * rollback may skip it.
 */
export function rolledBack(member: FakeMember, value: string): boolean {
  return releasedAfterAcquire(member, value) || member.refused.has(value);
}

/** Whether `member` was sent a release of `value` after an acquire of it (calls run in the order made). */
export function releasedAfterAcquire(member: FakeMember, value: string): boolean {
  const acquired = member.calls.findIndex((call) => call.op === 'acquire' && call.request.value === value);
  const released = member.calls.findIndex((call) => call.op === 'release' && call.value === value);
  return acquired >= 0 && released > acquired;
}
