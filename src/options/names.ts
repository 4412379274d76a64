/**
 * Which option names each call takes, and what to say about any other name. An unknown option is
 * refused rather than ignored: a setting carried over from node-redlock (or another client) that
 * quietly does nothing is a migration bug nobody sees until production.
 *
 * Checked per call with a for-in over the names given against a Set: no allocation, and nothing
 * at all for a call without options (see the figure in docs/migration.md).
 */
import { unknownOptionError, type ArgumentError } from '../errors.js';

/** The option names one call accepts, and how the call is named in messages. */
export interface OptionNames {
  readonly call: string;
  readonly names: ReadonlySet<string>;
  /** Hints for names that mean something elsewhere; each call may override the common ones. */
  readonly hints: Readonly<Record<string, string>>;
}

const retryNames = ['retryCount', 'retryDelay', 'retryJitter'] as const;
const acquireNames = [...retryNames, 'waitTimeout', 'signal', 'fencing', 'reentrant', 'shared'] as const;

/** Names other Redis lock clients use, and what quorumlock has instead. */
const foreignHints: Record<string, string> = {
  automaticExtensionThreshold:
    "is node-redlock v5's: quorumlock extends automatically inside using(), when the remaining validity drops to using()'s extendThreshold option (default ttl / 3); see docs/migration.md",
  db: "is node-redlock v5's: select the database on each ioredis client instead (new Redis({ db })); a member's id names its db",
  duration: "is node-redlock's name for the ttl, which quorumlock takes as the second argument, in ms",
  ttl: 'is the second argument, in ms, not an option',
  lockTimeout: "is redis-semaphore's: the ttl is the second argument, in ms",
  acquireTimeout: "is redis-semaphore's: quorumlock's is waitTimeout, an acquire option",
  acquireAttemptsLimit: "is redis-semaphore's: quorumlock's is retryCount (attempts after the first)",
  retryInterval: "is redis-semaphore's: quorumlock's is retryDelay (plus retryJitter)",
  refreshInterval: "is redis-semaphore's: using() extends by itself when the remaining validity drops to its extendThreshold option",
  onLockLost:
    "is redis-semaphore's: quorumlock aborts lock.signal (and using()'s signal) with a LockLostError, and publishes 'quorumlock:lost' (docs/operations.md)",
  retryAttempts: "is redlock-universal's: quorumlock's is retryCount (attempts after the first)",
  clockDriftFactor: "is redlock-universal's: quorumlock's is driftFactor, a new Redlock() option",
  timeout: 'is ambiguous: quorumlock has nodeTimeout (per member and call, a new Redlock() option) and waitTimeout (the whole acquire, an acquire option)',
  retries: 'is not the name: quorumlock counts retries with retryCount (attempts after the first)',
};

function names(call: string, list: readonly string[], hints: Record<string, string> = {}): OptionNames {
  return Object.freeze({ call, names: Object.freeze(new Set(list)), hints: Object.freeze({ ...foreignHints, ...hints }) });
}

const constructorOnly = 'is a new Redlock() option, for every call of that Redlock; it cannot be set per call';
const perCallHints = {
  driftFactor: constructorOnly,
  nodeTimeout: constructorOnly,
  maxLockTtl: constructorOnly,
  logger: constructorOnly,
  clock: constructorOnly,
  quarantine: constructorOnly,
  maxReentrancy: constructorOnly,
};

export const redlockOptionNames = names(
  'new Redlock()',
  ['driftFactor', ...retryNames, 'nodeTimeout', 'logger', 'clock', 'maxLockTtl', 'quarantine', 'maxReentrancy'],
  {
    waitTimeout: 'is an acquire() option, per call',
    signal: 'is an acquire() option, per call',
    fencing: 'is an acquire() option, per call',
    reentrant: 'is an acquire() and using() option, per call (the Redlock option is maxReentrancy)',
    extendThreshold: 'is a using() option, per call',
    maxExtensions: 'is a using() option, per call',
  },
);

export const acquireOptionNames = names('acquire()', acquireNames, {
  ...perCallHints,
  extendThreshold: 'is a using() option: acquire() does not extend by itself (call lock.extend(ttl), or use using())',
  maxExtensions: 'is a using() option: acquire() does not extend by itself (call lock.extend(ttl), or use using())',
  automaticExtensionThreshold:
    "is node-redlock v5's: acquire() does not extend by itself; using() does, when the remaining validity drops to its extendThreshold option",
});

export const tryAcquireOptionNames = names('tryAcquire()', ['signal', 'fencing', 'waitTimeout', 'shared'], {
  ...perCallHints,
  retryCount: 'does not apply: tryAcquire() makes one attempt; use acquire() to retry',
  retryDelay: 'does not apply: tryAcquire() makes one attempt; use acquire() to retry',
  retryJitter: 'does not apply: tryAcquire() makes one attempt; use acquire() to retry',
  reentrant: 'is an acquire() and using() option: a nested acquire never waits, so use acquire() with it',
});

export const operatorOptionNames = names('trustMembers() and restoreFencing()', ['timeoutMs'], {});

export const usingOptionNames = names('using()', [...acquireNames, 'extendThreshold', 'maxExtensions'], {
  ...perCallHints,
  automaticExtensionThreshold:
    "is node-redlock v5's: using() extends when the remaining validity drops to extendThreshold ms (default ttl / 3); pass that instead",
});

/** A semaphore's permits are plain locks, so its acquire takes acquire()'s options (and no more). */
const semaphoreHints = {
  ...perCallHints,
  limit: "is redis-semaphore's: quorumlock's is permits, an option of redlock.semaphore(name, { permits })",
  reentrant: 'does not apply: a semaphore permit is never re-entered; acquire another permit instead',
  shared: 'does not apply: a semaphore permit has one holder (a shared permit would let any number in); raise permits instead',
};

export const semaphoreOptionNames = names('redlock.semaphore()', ['permits'], semaphoreHints);

const semaphoreAcquireNames = acquireNames.filter((name: string) => name !== 'reentrant' && name !== 'shared');
const fixedPermits = 'is an option of redlock.semaphore(name, { permits }), fixed per semaphore';

export const semaphoreAcquireOptionNames = names('semaphore.acquire()', semaphoreAcquireNames, { ...semaphoreHints, permits: fixedPermits });

export const semaphoreUsingOptionNames = names('semaphore.using()', [...semaphoreAcquireNames, 'extendThreshold', 'maxExtensions'], {
  ...semaphoreHints,
  permits: fixedPermits,
});

/** redlock.election(name, options): src/election/options.ts. */
export const electionOptionNames = names('election()', ['ttl', 'id', 'pollInterval'], {
  ...perCallHints,
  signal: 'is an option of election.campaign() and election.observe(), per call',
  fencing: 'is always on for elections: the term is the fencing token',
});

/** election.campaign() and election.observe(). */
export const campaignOptionNames = names('election.campaign()', ['signal'], perCallHints);
export const observeOptionNames = names('election.observe()', ['signal'], perCallHints);

/**
 * Refuses any name in `options` that `allowed` does not take. Only for objects already checked to
 * be objects (checkOptionsObject); a call without options has no names to check, and does not
 * come here. for-in, not Object.keys: no array per call.
 */
export function checkOptionNames(options: object, allowed: OptionNames): void {
  for (const name in options) if (!allowed.names.has(name)) throw unknownOption(name, allowed);
}

function unknownOption(name: string, allowed: OptionNames): ArgumentError {
  const valid = [...allowed.names].join(', ');
  const hint = Object.hasOwn(allowed.hints, name) ? allowed.hints[name] : undefined;
  if (hint) return unknownOptionError(name, `is not an option of ${allowed.call}: it ${hint}`);
  const closest = closestName(name, allowed.names);
  const suggestion = closest ? ` (did you mean ${closest}?)` : '';
  return unknownOptionError(name, `is not an option of ${allowed.call}${suggestion}; its options are ${valid}`);
}

/**
 * The valid name a typo most likely meant: the same but for case, else the nearest by edit
 * distance if near enough: within a third of the name's length (at least 2: 'retryCont' finds
 * retryCount), or starting with the same 4 letters ('fenced' finds fencing). 'colour' finds no
 * 'clock', 'signal' no 'fencing'.
 */
export function closestName(name: string, valid: Iterable<string>): string | undefined {
  const lower = name.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of valid) {
    const other = candidate.toLowerCase();
    if (other === lower) return candidate;
    const distance = editDistance(lower, other);
    const near = distance <= Math.max(2, Math.floor(name.length / 3)) || (lower.length >= 4 && other.startsWith(lower.slice(0, 4)));
    if (near && distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** Levenshtein distance: only on the error path, never per call. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
