/**
 * The checks that run before any network call (types and defaults: options/settings.ts). Pure functions:
 * bad input fails here with a TypeError or RangeError naming the parameter and its range, so
 * nothing is ever sent, let alone half-locked.
 */
import { type Clock, driftMs, systemClock } from '../clock/index.js';
import { describeClient, SUPPORTED, type MemberClient } from '../clients/index.js';
import { clusterPrefixWorks, isReservedName, RESERVED_NAMES, slotOf } from '../store/keys.js';
import { SHARED_MARK } from '../store/protocol.js';
import { argumentError } from '../errors.js';
import { silentLogger, type Logger } from '../diagnostics.js';
import { checkOptionNames, operatorOptionNames, redlockOptionNames } from './names.js';
import {
  defaults,
  MAX_TTL_MS,
  quarantineMsOf,
  type AcquireOptions,
  type AttemptPolicy,
  type OperatorOptions,
  type RedlockOptions,
  type Settings,
} from './settings.js';

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  if (Array.isArray(value)) return value.length === 0 ? 'an empty array' : 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** A finite (or, where allowed, infinite) number >= `min`. */
function checkNumber(parameter: string, value: unknown, range: { min: number; integer?: boolean; infinity?: boolean; minExclusive?: boolean }): number {
  const { min, integer = false, infinity = false, minExclusive = false } = range;
  const rangeText = `${integer ? 'an integer' : 'a number'} ${minExclusive ? '>' : '>='} ${min}${infinity ? ' (or Infinity)' : ''}`;
  if (typeof value !== 'number' || Number.isNaN(value)) throw argumentError(TypeError, parameter, `must be ${rangeText}, got ${show(value)}`);
  const finiteOk = Number.isFinite(value) && (!integer || Number.isInteger(value));
  const aboveMin = minExclusive ? value > min : value >= min;
  if (!(finiteOk || (infinity && value === Infinity)) || !aboveMin) throw argumentError(RangeError, parameter, `must be ${rangeText}, got ${show(value)}`);
  return value;
}

function checkDriftFactor(value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw argumentError(TypeError, 'driftFactor', `must be a number in [0, 0.5), got ${show(value)}`);
  if (!(value >= 0 && value < 0.5)) throw argumentError(RangeError, 'driftFactor', `must be in [0, 0.5), got ${show(value)}`);
  return value;
}

function checkNodeTimeout(value: unknown): number {
  return checkNumber('nodeTimeout', value, { min: 0, minExclusive: true });
}

function checkRetries(
  source: { retryCount?: unknown; retryDelay?: unknown; retryJitter?: unknown },
  base: Pick<Settings, 'retryCount' | 'retryDelay' | 'retryJitter'>,
) {
  return {
    retryCount: source.retryCount === undefined ? base.retryCount : checkNumber('retryCount', source.retryCount, { min: 0, integer: true, infinity: true }),
    retryDelay: source.retryDelay === undefined ? base.retryDelay : checkNumber('retryDelay', source.retryDelay, { min: 0 }),
    retryJitter: source.retryJitter === undefined ? base.retryJitter : checkNumber('retryJitter', source.retryJitter, { min: 0 }),
  };
}

function checkLogger(value: unknown): Logger {
  const methods = ['debug', 'info', 'warn', 'error'] as const;
  if (typeof value !== 'object' || value === null || methods.some((name) => typeof (value as Record<string, unknown>)[name] !== 'function')) {
    throw argumentError(TypeError, 'logger', `must have debug, info, warn and error methods (a pino logger), got ${show(value)}`);
  }
  return value as Logger;
}

/** Marks a logger guarded() made, so that one passed on (`redlock.settings.logger`) is not wrapped twice. */
const GUARDED = Symbol.for('quorumlock.guardedLogger');

/** A logger that says whether it wants lines of a level (pino's isLevelEnabled); guarded() makes one. */
type LeveledLogger = Logger & { isLevelEnabled(level: string): boolean };

/**
 * The user's logger with every call guarded: a log line is never worth a lock. The library logs
 * in the middle of its bookkeeping (a duplicate member is logged as it is marked, a lost lock as
 * its state changes), and a logger that throws there (a closed destination, a serializer's bug)
 * would stop that work part-way, or end the process from a listener. What it throws, or what a
 * promise it returns rejects with, is dropped. isLevelEnabled answers as the logger's does (true
 * for a logger without one, false for one that throws).
 */
function guarded(logger: Logger): LeveledLogger {
  if ((logger as { [GUARDED]?: true })[GUARDED]) return logger as LeveledLogger;
  const dropped = (): undefined => undefined;
  const line =
    (level: keyof Logger) =>
    (object: object, message: string): void => {
      try {
        const returned: unknown = logger[level](object, message);
        if (typeof (returned as PromiseLike<unknown> | undefined)?.then === 'function') (returned as PromiseLike<unknown>).then(undefined, dropped);
      } catch {
        // Dropped: see above.
      }
    };
  const leveled = logger as { isLevelEnabled?(level: string): boolean };
  const isLevelEnabled = (level: string): boolean => {
    try {
      return leveled.isLevelEnabled?.(level) ?? true;
    } catch {
      return false;
    }
  };
  return Object.freeze({ debug: line('debug'), info: line('info'), warn: line('warn'), error: line('error'), isLevelEnabled, [GUARDED]: true as const });
}

function checkClock(value: unknown): Clock {
  const methods = ['now', 'sleep', 'epochMs', 'setTimer', 'clearTimer'] as const;
  if (typeof value !== 'object' || value === null || methods.some((name) => typeof (value as Record<string, unknown>)[name] !== 'function')) {
    throw argumentError(
      TypeError,
      'clock',
      `must have now(), sleep(ms, signal), epochMs(), setTimer(callback, ms) and clearTimer(handle) methods, got ${show(value)}`,
    );
  }
  return value as Clock;
}

export function checkSettings(options: RedlockOptions = {}): Settings {
  if (typeof options !== 'object' || options === null) throw argumentError(TypeError, 'options', `must be an object, got ${show(options)}`);
  checkOptionNames(options, redlockOptionNames);
  const maxLockTtl = options.maxLockTtl === undefined ? defaults.maxLockTtl : checkMaxLockTtl(options.maxLockTtl);
  const quarantine = options.quarantine === undefined ? defaults.quarantine : checkQuarantine(options.quarantine);
  const logger = options.logger === undefined || options.logger === silentLogger ? undefined : guarded(checkLogger(options.logger));
  return {
    driftFactor: options.driftFactor === undefined ? defaults.driftFactor : checkDriftFactor(options.driftFactor),
    ...checkRetries(options, defaults),
    nodeTimeout: options.nodeTimeout === undefined ? defaults.nodeTimeout : checkNodeTimeout(options.nodeTimeout),
    logger: logger ?? silentLogger,
    debugging: debuggingOf(logger),
    clock: options.clock === undefined ? systemClock : checkClock(options.clock),
    maxLockTtl,
    quarantine,
    quarantineMs: quarantineMsOf({ quarantine, maxLockTtl }),
    maxReentrancy: options.maxReentrancy === undefined ? defaults.maxReentrancy : checkMaxReentrancy(options.maxReentrancy),
  };
}

/**
 * Settings.debugging for `logger`: never for the silent default; else asked per line, since a
 * pino logger's level may change at run time.
 */
function debuggingOf(logger: LeveledLogger | undefined): () => boolean {
  if (logger === undefined) return () => false;
  return () => logger.isLevelEnabled('debug');
}

function checkQuarantine(value: unknown): boolean | 'from-restart' {
  if (value === 'from-restart') return value;
  if (typeof value !== 'boolean') throw argumentError(TypeError, 'quarantine', `must be true, false or 'from-restart', got ${show(value)}`);
  return value;
}

export function checkBoolean(parameter: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw argumentError(TypeError, parameter, `must be true or false, got ${show(value)}`);
  return value;
}

function checkMaxLockTtl(value: unknown): number {
  return checkNumber('maxLockTtl', value, { min: 1, integer: true });
}

function checkMaxReentrancy(value: unknown): number {
  const depth = checkNumber('maxReentrancy', value, { min: 0, integer: true });
  if (depth > 1000) throw argumentError(RangeError, 'maxReentrancy', `must be an integer from 0 to 1000, got ${show(value)}`);
  return depth;
}

export function checkMembers(members: unknown): MemberClient[] {
  if (!Array.isArray(members)) throw argumentError(TypeError, 'members', `must be a non-empty array of clients (${SUPPORTED}), got ${show(members)}`);
  if (members.length === 0) throw argumentError(RangeError, 'members', `must be a non-empty array of clients (${SUPPORTED}), got an empty array`);
  const seen = new Map<string, number>();
  members.forEach((client: unknown, index) => {
    const described = describeClient(client);
    if (described === undefined) throw argumentError(TypeError, `members[${index}]`, `must be ${SUPPORTED}, got ${show(client)}`);
    const { id, isCluster, keyPrefix: prefix, refused } = described;
    if (refused !== undefined) throw argumentError(TypeError, `members[${index}]`, `${refused} (docs/clients.md)`);
    if (isCluster && !clusterPrefixWorks(prefix)) {
      throw argumentError(
        RangeError,
        `members[${index}]`,
        `is a Redis Cluster with keyPrefix ${JSON.stringify(prefix)}: a cluster keyPrefix may contain "{" only as a complete hash tag ("{app}:"), or the lock's keys would land in different slots`,
      );
    }
    const first = seen.get(id);
    if (first !== undefined) {
      throw argumentError(RangeError, `members[${index}]`, `is the same server as members[${first}] (${id}): a duplicate member would vote twice`);
    }
    seen.set(id, index);
  });
  return members as MemberClient[];
}

export function checkResources(resources: unknown): string[] {
  if (resources === '') throw argumentError(TypeError, 'resources', 'must be a non-empty string or a non-empty array of strings, got ""');
  const list = typeof resources === 'string' ? [resources] : resources;
  if (!Array.isArray(list)) throw argumentError(TypeError, 'resources', `must be a non-empty string or a non-empty array of strings, got ${show(list)}`);
  if (list.length === 0) throw argumentError(RangeError, 'resources', 'must be a non-empty string or a non-empty array of strings, got an empty array');
  // Runs on every acquire: a plain loop, and a set of the names seen only for several.
  const seen = list.length > 1 ? new Set<string>() : undefined;
  const names: string[] = [];
  for (let index = 0; index < list.length; index++) {
    const name: unknown = list[index];
    if (typeof name !== 'string' || name.length === 0) {
      throw argumentError(TypeError, `resources[${index}]`, `must be a non-empty string, got ${show(name)}`);
    }
    if (isReservedName(name)) {
      throw argumentError(
        RangeError,
        `resources[${index}]`,
        `must be a name outside quorumlock's own (${RESERVED_NAMES}): those are the member's epoch and the lines of waiters, got ${show(name)}`,
      );
    }
    if (seen?.has(name)) throw argumentError(RangeError, `resources[${index}]`, `repeats ${JSON.stringify(name)}: each resource may appear once`);
    seen?.add(name);
    names.push(name);
  }
  return names;
}

/**
 * A script runs on one node of a Redis Cluster and may only touch keys of one slot: on a cluster
 * member, every resource of one lock must hash to the same slot (a shared hash tag does that).
 */
/**
 * A lock's value as quorumlock makes them (quorum/attempt.ts, newLockValue: 16 random bytes in
 * base64url; a shared lock's with SHARED_MARK first). Only such a value can hold a key of ours, so
 * anything else (lock.id, a node-redlock value, a truncated copy) is a caller's mistake, refused
 * rather than answered "nothing to release".
 */
const LOCK_VALUE = new RegExp(`^${SHARED_MARK}?[A-Za-z0-9_-]{22}$`); // SHARED_MARK ('~') is no regex meta-character

/** `value` for a release by value: a lock's value (`lock.value`), as made by quorumlock. */
export function checkLockValue(value: unknown): string {
  if (typeof value !== 'string') throw argumentError(TypeError, 'value', `must be a lock's value (a string: lock.value), got ${show(value)}`);
  if (!LOCK_VALUE.test(value))
    throw argumentError(
      RangeError,
      'value',
      `must be a lock's value as quorumlock makes them (lock.value: 22 base64url characters, '${SHARED_MARK}' first for a shared lock; not lock.id), got a string of ${value.length} characters`,
    );
  return value;
}

export function checkSameSlot(resources: readonly string[], members: readonly { id: string; isCluster: boolean; keyPrefix: string }[]): void {
  if (resources.length < 2) return;
  for (const member of members) {
    if (!member.isCluster) continue;
    const slots = resources.map((name) => slotOf(member.keyPrefix + name));
    const other = slots.findIndex((slot) => slot !== slots[0]);
    if (other === -1) continue;
    const [first, second] = [resources[0]!, resources[other]!];
    throw argumentError(
      RangeError,
      'resources',
      `must all hash to one slot, as member ${member.id} is a Redis Cluster: ${JSON.stringify(first)} is in slot ${slots[0]}, ${JSON.stringify(second)} in slot ${slots[other]}. ` +
        `Give them a shared hash tag, e.g. ${JSON.stringify(`{job-7}:${first}`)} and ${JSON.stringify(`{job-7}:${second}`)}`,
    );
  }
}

/** The smallest integer ttl with ttl > nodeTimeout + driftMs(ttl). */
export function minTtl({ driftFactor, nodeTimeout }: Pick<Settings, 'driftFactor' | 'nodeTimeout'>): number {
  let ttl = Math.max(1, Math.floor((nodeTimeout + 2) / (1 - driftFactor)) - 2);
  while (ttl <= nodeTimeout + driftMs(ttl, driftFactor)) ttl++;
  return ttl;
}

/**
 * A ttl must leave room for at least one member timeout plus the drift allowance, or a lock could
 * never come out with positive validity.
 */
export function checkTtl(
  ttl: unknown,
  settings: Pick<Settings, 'driftFactor' | 'nodeTimeout'> & Partial<Pick<Settings, 'maxLockTtl'>>,
  parameter = 'ttl',
): number {
  const { driftFactor, nodeTimeout } = settings;
  const floor = minTtl(settings);
  const ceiling = Math.min(MAX_TTL_MS, settings.maxLockTtl ?? MAX_TTL_MS);
  const range = `an integer from ${floor} to ${ceiling} ms`;
  if (typeof ttl !== 'number' || Number.isNaN(ttl)) throw argumentError(TypeError, parameter, `must be ${range}, got ${show(ttl)}`);
  if (!Number.isInteger(ttl) || ttl > MAX_TTL_MS || ttl <= 0) throw argumentError(RangeError, parameter, `must be ${range}, got ${show(ttl)}`);
  if (ttl > ceiling) throw argumentError(RangeError, parameter, `must be ${range} (raise maxLockTtl to use longer locks), got ${ttl}`);
  const drift = driftMs(ttl, driftFactor);
  if (ttl <= drift + nodeTimeout) {
    throw argumentError(RangeError, parameter, `must be larger than nodeTimeout + drift (${nodeTimeout} + ${drift} ms), got ${ttl}: ${range}`);
  }
  return ttl;
}

export function checkOptionsObject(options: unknown): void {
  if (options !== undefined && (typeof options !== 'object' || options === null))
    throw argumentError(TypeError, 'options', `must be an object, got ${show(options)}`);
}

/** The policy of an acquire without options: the same for every call of a Redlock, so made once. */
const defaultPolicies = new WeakMap<Settings, AttemptPolicy>();

export function checkAcquireOptions(options: AcquireOptions | undefined, settings: Settings): AttemptPolicy {
  if (options === undefined) {
    let policy = defaultPolicies.get(settings);
    if (!policy) defaultPolicies.set(settings, (policy = Object.freeze(checkAcquireOptions({}, settings))));
    return policy;
  }
  checkOptionsObject(options);
  const retries = checkRetries(options ?? {}, settings);
  // Each attempt is one round (≤ nodeTimeout), then its rollback (≤ nodeTimeout) alongside the
  // retry delay: without a waitTimeout, the retry count is what ends the acquire.
  const cycle = settings.nodeTimeout + Math.max(settings.nodeTimeout, retries.retryDelay + retries.retryJitter);
  const budget = (retries.retryCount + 1) * cycle;
  const waitTimeout =
    options?.waitTimeout === undefined ? budget : checkNumber('waitTimeout', options.waitTimeout, { min: 0, minExclusive: true, infinity: true });
  const signal = options?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw argumentError(TypeError, 'signal', `must be an AbortSignal, got ${show(signal)}`);
  const fencing = options?.fencing === undefined ? false : checkBoolean('fencing', options.fencing);
  // Named, not spread: an object spread costs ~2 µs here (V8 in Node 20), on every acquire.
  const shared = options?.shared === undefined ? false : checkBoolean('shared', options.shared);
  return { retryCount: retries.retryCount, retryDelay: retries.retryDelay, retryJitter: retries.retryJitter, waitTimeout, signal, fencing, shared };
}

export function checkMaxExtensions(value: unknown): number {
  return value === undefined ? Infinity : checkNumber('maxExtensions', value, { min: 0, integer: true, infinity: true });
}

export function checkExtendThreshold(value: unknown, ttl: number, settings: Pick<Settings, 'driftFactor' | 'nodeTimeout'>): number {
  const { nodeTimeout } = settings;
  const upper = ttl - driftMs(ttl, settings.driftFactor) - nodeTimeout;
  const range = `more than nodeTimeout (${nodeTimeout} ms) and less than ttl − drift − nodeTimeout (${upper} ms)`;
  if (value === undefined) {
    const threshold = ttl / 3;
    if (threshold <= nodeTimeout || threshold >= upper) {
      throw argumentError(
        RangeError,
        'ttl',
        `is too short for auto-extension with the default extendThreshold (ttl / 3 = ${threshold} ms must be ${range}): use a ttl above ${3 * nodeTimeout} ms or set extendThreshold, got ${ttl}`,
      );
    }
    return threshold;
  }
  const threshold = checkNumber('extendThreshold', value, { min: 0, minExclusive: true });
  if (threshold <= nodeTimeout || threshold >= upper) throw argumentError(RangeError, 'extendThreshold', `must be ${range}, got ${show(value)}`);
  return threshold;
}

/** restoreFencing(floor): a whole number of tokens, at least 1, that a Lua number keeps exactly. */
export function checkFenceFloor(value: unknown): number {
  const floor = checkNumber('floor', value, { min: 1, integer: true });
  if (floor > Number.MAX_SAFE_INTEGER) throw argumentError(RangeError, 'floor', `must be an integer in [1, ${Number.MAX_SAFE_INTEGER}], got ${show(value)}`);
  return floor;
}

/** An operator call's options (trustMembers, restoreFencing): its per-member deadline, ms. */
export function checkOperatorOptions(options: OperatorOptions | undefined): number {
  checkOptionsObject(options);
  if (options !== undefined) checkOptionNames(options, operatorOptionNames);
  const timeoutMs = options?.timeoutMs === undefined ? 10_000 : checkNumber('timeoutMs', options.timeoutMs, { min: 1 });
  if (timeoutMs > 600_000) throw argumentError(RangeError, 'timeoutMs', `must be in [1, 600000] ms, got ${show(options?.timeoutMs)}`);
  return timeoutMs;
}
