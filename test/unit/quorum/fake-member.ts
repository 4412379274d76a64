/**
 * A member for the algorithm's unit tests (src/quorum): it implements `Member`
 * (src/members/member.ts) on a ManualClock, and what it answers is what quorumlock's REAL scripts
 * answer: each member is a fake Redis (test/model/fake-redis.ts) running the shipped Lua in
 * fengari, called as RedisMember calls it (the same KEYS and ARGV encoders and reply decoders of
 * src/store/protocol.ts, every write bound to the epoch this member read, as members/epochs.ts
 * binds it). Nothing of a script is re-implemented here; lines of waiters, hand-overs, shared
 * holders and fence counters are the scripts' own.
 *
 * What stays at the Member level, as RedisMember keeps it outside the scripts: `notCounting` (from
 * the server's INFO: not a master, may evict, a duplicate) turns a yes into one that never counts.
 *
 * The starting state is written into the fake's keyspace: the epoch (its id, `epoch`, default
 * `${id}#1`), its age (`quarantineLeftMs` of a quarantine of `quarantineMs`, default settingsOn's
 * maxLockTtl; 0: long past), whether it is complete (a floor, 0 unless `floor`; an epoch without
 * one reads untrusted where it has no counter) and the fence counters.
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
 *
 * A script that fails with anything but the protocol's refusals, or a command the fake does not
 * implement, throws out of the clock's timer (so out of drive() / clock.advance()): a test never
 * passes on an answer Redis would not give.
 */
import type { ManualClock } from '../../../src/clock/index.js';
import type {
  AcquireRequest,
  ExtendCall,
  ExtendReply,
  FenceCall,
  FenceReply,
  LeaveCall,
  AcquireVote,
  Member,
  ReleaseCall,
} from '../../../src/members/member.js';
import { silentLogger } from '../../../src/diagnostics.js';
import { quarantineMsOf, type Settings } from '../../../src/options/settings.js';
import { EPOCH_KEY, readersKeysIn, resourceKeys } from '../../../src/store/keys.js';
import {
  acquireArgs,
  decodeAcquire,
  decodeExtend,
  decodeFence,
  extendArgs,
  fenceArgs,
  isShared,
  leaveArgs,
  NOT_COUNTING,
  releaseArgs,
} from '../../../src/store/protocol.js';
import { scripts } from '../../../src/store/scripts.js';
import { ErrorReply, FakeRedisServer, type Reply } from '../../model/fake-redis.js';
import { decodeReply } from '../../model/fake-client.js';
import { sha1 } from '../../model/lua-vm.js';

export type Failure = 'down' | 'error' | 'mute' | 'slow';

export interface FakeMemberOptions {
  latencyMs?: number;
  failure?: Failure;
  /** Extra latency in 'slow' mode. Default 1 000 ms. */
  slowMs?: number;
  /** Quarantine left, from now, of a quarantine of `quarantineMs` (the member's data is younger). Default 0. */
  quarantineLeftMs?: number;
  /** The quarantine the callers use (settingsOn: maxLockTtl). Default 60 000. */
  quarantineMs?: number;
  /** Why the member must not count (not a master, may evict, a duplicate). */
  notCounting?: string;
  /** The epoch id. Default `${id}#1`. */
  epoch?: string;
  /** Fence counters per resource, in the current epoch. Default none. */
  counters?: Record<string, number>;
  /** The epoch is complete (a floor): every resource reads trusted. Default true. */
  complete?: boolean;
  /** The epoch's floor (makes it complete). Default 0 when complete. */
  floor?: number;
}

/** One call as it was made. */
export type Call =
  | { op: 'acquire'; at: number; resources: string[]; request: AcquireRequest }
  | { op: 'extend'; at: number; resources: string[]; value: string; ttlMs: number }
  | { op: 'release'; at: number; resources: string[]; value: string; leaving?: string | undefined }
  | { op: 'leave'; at: number; resources: string[]; waiterId: string }
  | { op: 'fence'; at: number; resources: string[]; value: string; token: number; mode: 'propose' | 'sync'; epoch: string; floor: number | undefined };

/** A lock key as the test sees it: its value and when it expires, on the ManualClock. */
interface Key {
  value: string;
  expiresAt: number;
}

/** The scripts this member sends, by the name RedisMember sends them under (store/scripts.ts). */
const SCRIPTS = scripts;
type Script = keyof typeof SCRIPTS;
const SHAS = Object.fromEntries(Object.entries(SCRIPTS).map(([name, lua]) => [name, sha1(lua)])) as Record<Script, string>;

/** Error replies a script gives by design (src/lua/_bound.lua). */
const REFUSAL = /^QUORUMLOCK_(EPOCH|ROLE)\b/;

let servers = 0;

export class FakeMember implements Member {
  latencyMs: number;
  failure: Failure | undefined;
  slowMs: number;
  notCounting: string | undefined;
  /** The member: a fake Redis running the real scripts. */
  readonly server: FakeRedisServer;
  /** The values of the acquires this member refused holding nothing of them (their rollback may skip it). */
  readonly refused = new Set<string>();
  /** Every call, in the order made. */
  readonly calls: Call[] = [];
  /** The epoch id every write is bound to: the one this member read (members/epochs.ts). */
  #boundTo: string;
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
    this.server = new FakeRedisServer({ clock, host: id, port: 7000 + (++servers % 1000) });
    // The epoch, begun by the script that reads it, then given the state the test asks for.
    this.#script('quorumlockEpoch', [EPOCH_KEY], []);
    const left = options.quarantineLeftMs ?? 0;
    const since = this.server.nowMs() - (left > 0 ? (options.quarantineMs ?? 60_000) - left : 1e9);
    const fields: (string | number)[] = ['id', options.epoch ?? `${id}#1`, 'since', since];
    const counters = Object.entries(options.counters ?? {});
    for (const [resource, counter] of counters) fields.push(`fence:${resource}`, counter);
    const complete = options.floor !== undefined || (options.complete ?? true);
    if (complete) fields.push('floor', options.floor ?? 0);
    const max = Math.max(complete ? (options.floor ?? 0) : 0, ...counters.map(([, counter]) => counter));
    if (max > 0) fields.push('max', max);
    this.server.execute(['HSET', EPOCH_KEY, ...fields.map(String)]);
    this.#boundTo = this.epoch;
  }

  /** The id of the member's epoch now. */
  get epoch(): string {
    return String(this.server.execute(['HGET', EPOCH_KEY, 'id']));
  }

  #epochField(field: string): string | undefined {
    const value = this.server.execute(['HGET', EPOCH_KEY, field]);
    return typeof value === 'string' ? value : undefined;
  }

  /** The epoch is complete (brand new, or given a floor): every resource reads trusted there. */
  get complete(): boolean {
    return this.#epochField('genesis') === '1' || this.#epochField('floor') !== undefined;
  }

  get floor(): number {
    return Number(this.#epochField('floor') ?? 0);
  }

  /** The highest counter or floor written in this epoch. */
  get max(): number {
    return Number(this.#epochField('max') ?? 0);
  }

  /** The fence counters of the current epoch, by resource. */
  get counters(): Map<string, number> {
    const all = this.server.execute(['HGETALL', EPOCH_KEY]) as string[];
    const counters = new Map<string, number>();
    for (let i = 0; i < all.length; i += 2) if (all[i]!.startsWith('fence:')) counters.set(all[i]!.slice('fence:'.length), Number(all[i + 1]));
    return counters;
  }

  /** The lock keys set on the member (an expired one until a command touches it), expiries on the ManualClock. */
  get keys(): Map<string, Key> {
    const keys = new Map<string, Key>();
    for (const [key, entry] of this.server.snapshot())
      if (entry.type === 'string' && entry.expiresAt !== undefined) keys.set(key, { value: entry.value, expiresAt: entry.expiresAt - this.server.offsetMs });
    return keys;
  }

  /** The value a resource's key holds now, or undefined (never set, expired, deleted). */
  holder(resource: string): string | undefined {
    return this.server.peek(resource);
  }

  /** Sets `resource` for another owner (a holder the test puts there). */
  hold(resource: string, value: string, ttlMs: number): void {
    this.server.execute(['SET', resource, value, 'PX', String(ttlMs)]);
  }

  /** The calls of one kind, in order. */
  callsOf<Op extends Call['op']>(op: Op): Extract<Call, { op: Op }>[] {
    return this.calls.filter((call): call is Extract<Call, { op: Op }> => call.op === op);
  }

  /** The fence reading of `resources` as the epoch hash holds it (_fence.lua, fenceReading), for assertions. */
  reading(resources: readonly string[]): { highest: number; trusted: boolean } {
    const genesis = this.#epochField('genesis') === '1';
    const floor = this.#epochField('floor');
    const base = floor !== undefined ? Math.max(0, Number(floor)) : genesis ? 0 : undefined;
    const counters = this.counters;
    let highest = 0;
    let trusted = true;
    for (const resource of resources) {
      const counter = counters.get(resource);
      if (counter !== undefined) highest = Math.max(highest, counter, base ?? 0);
      else if (base !== undefined) highest = Math.max(highest, base);
      else trusted = false;
    }
    return { highest, trusted };
  }

  acquire(resources: readonly string[], request: AcquireRequest): Promise<AcquireVote> {
    return this.#call({ op: 'acquire', at: this.clock.now(), resources: [...resources], request }, () => {
      const script = isShared(request.value) ? 'quorumlockAcquireShared' : 'quorumlockAcquire';
      const answer = decodeAcquire(this.#write(script, resourceKeys(resources), acquireArgs(request, '')) as number | unknown[], '', request.fencing);
      if (answer.vote === 'taken' || answer.vote === 'queued') {
        if (!answer.holdsOwn) this.refused.add(request.value);
        return answer;
      }
      // As RedisMember says it: a member that must not count answers quarantined for good.
      return this.notCounting === undefined ? answer : { ...answer, vote: 'quarantined', quarantinedForMs: NOT_COUNTING, notCounting: this.notCounting };
    });
  }

  extend(resources: readonly string[], call: ExtendCall): Promise<ExtendReply> {
    return this.#call({ op: 'extend', at: this.clock.now(), resources: [...resources], value: call.value, ttlMs: call.ttlMs }, () => {
      const shared = isShared(call.value);
      return decodeExtend(this.#write(shared ? 'quorumlockExtendShared' : 'quorumlockExtend', shared ? resourceKeys(resources) : resources, extendArgs(call)));
    });
  }

  release(resources: readonly string[], call: ReleaseCall): Promise<number> {
    return this.#call({ op: 'release', at: this.clock.now(), resources: [...resources], value: call.value, leaving: call.leaving }, () =>
      Number(this.#write('quorumlockRelease', resourceKeys(resources), releaseArgs(call))),
    );
  }

  leave(resources: readonly string[], call: LeaveCall): Promise<number> {
    return this.#call({ op: 'leave', at: this.clock.now(), resources: [...resources], waiterId: call.waiterId }, () =>
      Number(this.#write('quorumlockLeave', resourceKeys(resources), leaveArgs(call))),
    );
  }

  fence(resources: readonly string[], call: FenceCall): Promise<FenceReply> {
    const { value, token, mode, epoch, floor } = call;
    return this.#call({ op: 'fence', at: this.clock.now(), resources: [...resources], value, token, mode, epoch, floor }, () => {
      // A shared value holds by its reader entries: fence.lua checks those (as RedisMember sends it).
      const keys = isShared(value) ? [...resources, ...readersKeysIn(resourceKeys(resources), resources.length)] : [...resources];
      return decodeFence(this.#write('quorumlockFence', keys, fenceArgs(call)) as unknown[]);
    });
  }

  /**
   * A write, as RedisMember sends it (members/epochs.ts): the epoch hash after its keys, the id of
   * the epoch this member read before its arguments. A refusal names the epoch found: adopted for
   * the next call, this one fails as RedisMember's would.
   */
  #write(script: Script, keys: readonly string[], args: readonly string[]): unknown {
    try {
      return this.#script(script, [...keys, EPOCH_KEY], [this.#boundTo, ...args]);
    } catch (error) {
      const found = /^QUORUMLOCK_EPOCH (\S+)/.exec((error as Error).message)?.[1];
      if (found !== undefined) this.#boundTo = found;
      throw error;
    }
  }

  /** Runs a script on the member (EVALSHA, EVAL when not cached); a refusal throws, anything unexpected throws loudly. */
  #script(script: Script, keys: readonly string[], args: readonly string[]): unknown {
    let reply: Reply = this.server.execute(['EVALSHA', SHAS[script], String(keys.length), ...keys, ...args]);
    if (reply instanceof ErrorReply && reply.message.startsWith('NOSCRIPT'))
      reply = this.server.execute(['EVAL', SCRIPTS[script], String(keys.length), ...keys, ...args]);
    if (this.server.problems.length > 0) throw new UnexpectedReply(`${this.id}: the fake does not implement ${this.server.problems.join('; ')}`);
    if (reply instanceof ErrorReply) {
      if (REFUSAL.test(reply.message)) throw new Error(reply.message);
      throw new UnexpectedReply(`${this.id}: ${script} failed: ${reply.message}`);
    }
    return decodeReply(reply);
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
        let result: T;
        try {
          result = run();
        } catch (error) {
          // Out of the timer, so out of clock.advance(): the test fails where it drives the clock.
          if (error instanceof UnexpectedReply) throw error;
          if (failure !== 'mute') reject(error as Error);
          return;
        }
        if (failure !== 'mute') resolve(result);
      }, runAt - this.clock.now());
    });
  }
}

/** What a script must never answer in a test (see the header). */
class UnexpectedReply extends Error {
  override name = 'UnexpectedReply';
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
  const settings = {
    driftFactor: 0.01,
    retryCount: 0,
    retryDelay: 200,
    retryJitter: 0,
    nodeTimeout: 50,
    logger: silentLogger,
    debugging: () => false,
    clock,
    maxLockTtl: 60_000,
    quarantine: true,
    maxReentrancy: 0,
    ...overrides,
  };
  return { ...settings, quarantineMs: overrides.quarantineMs ?? quarantineMsOf(settings) };
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
