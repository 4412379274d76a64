/**
 * src/errors.ts: every error carries a stable `code`; messages are what they were; `instanceof`
 * holds across two copies of the module (as the ESM and CJS builds are, side by side) through
 * Symbol.for brands, while subclasses and `instanceof Error` behave as usual. Pure: no redis.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  argumentError,
  errorCodes,
  LockAcquireError,
  LockExtendError,
  LockLostError,
  type ArgumentError,
  type AttemptRecord,
  type ErrorCode,
} from '../../src/errors.js';
import type { MemberVote } from '../../src/quorum/votes.js';

type ErrorsModule = typeof import('../../src/errors.js');

/** The same source loaded a second time, as a module of its own (its own classes): the query makes it another module id. */
const specifier = '../../src/errors.ts?copy';
const copy = (await import(/* @vite-ignore */ specifier)) as ErrorsModule;

const votes: MemberVote[] = [
  { member: 'a:6379/0', vote: 'locked', ms: 1 },
  { member: 'b:6379/0', vote: 'taken', ms: 2, heldForMs: 900 },
  { member: 'c:6379/0', vote: 'error', ms: 3, error: new Error('connect ECONNREFUSED') },
];
const attempt = (outcome: AttemptRecord['outcome'], validityMs = 0): AttemptRecord => ({ attempt: 1, outcome, startedMs: 0, elapsedMs: 4, validityMs, votes });

/** One error of each class, from module `from`. */
function samples(from: Pick<ErrorsModule, 'LockAcquireError' | 'LockExtendError' | 'LockLostError'>) {
  return {
    acquire: new from.LockAcquireError(['r'], [attempt('taken')], 10, 'retries exhausted'),
    extend: new from.LockExtendError(['r'], 'unavailable', votes, 5),
    lost: new from.LockLostError(['r'], 'expired'),
  };
}

describe('codes', () => {
  it('each class has its code, as an own enumerable property', () => {
    const { acquire, extend, lost } = samples({ LockAcquireError, LockExtendError, LockLostError });
    expect(acquire.code).toBe('QUORUMLOCK_ERR_ACQUIRE');
    expect(extend.code).toBe('QUORUMLOCK_ERR_EXTEND');
    expect(lost.code).toBe('QUORUMLOCK_ERR_LOCK_LOST');
    for (const error of [acquire, extend, lost]) expect(Object.keys(error)).toContain('code');
  });

  it('errorCodes lists every code, each under its own name', () => {
    expect(Object.values(errorCodes).sort()).toEqual([
      'QUORUMLOCK_ERR_ACQUIRE',
      'QUORUMLOCK_ERR_EXTEND',
      'QUORUMLOCK_ERR_INVALID_ARG_TYPE',
      'QUORUMLOCK_ERR_LOCK_LOST',
      'QUORUMLOCK_ERR_OUT_OF_RANGE',
      'QUORUMLOCK_ERR_PROTOCOL',
      'QUORUMLOCK_ERR_REENTRANCY',
      'QUORUMLOCK_ERR_TESTING_ONLY',
      'QUORUMLOCK_ERR_UNKNOWN_OPTION',
    ]);
    for (const [key, code] of Object.entries(errorCodes)) expect(key).toBe(code);
    const code: ErrorCode = new LockLostError(['r'], 'expired').code;
    expect(code).toBe(errorCodes.QUORUMLOCK_ERR_LOCK_LOST);
  });

  it('JSON and inspect show the code; the brand stays hidden', () => {
    const { acquire, extend, lost } = samples({ LockAcquireError, LockExtendError, LockLostError });
    for (const error of [acquire, extend, lost]) {
      expect(JSON.parse(JSON.stringify(error))).toMatchObject({ name: error.name, code: error.code });
      expect(inspect(error)).toContain(`code: '${error.code}'`);
      expect(inspect(error)).not.toContain('quorumlock.error');
      expect(Object.getOwnPropertySymbols(error).filter((key) => Object.getOwnPropertyDescriptor(error, key)!.enumerable)).toEqual([]);
    }
  });
});

describe('messages and fields are unchanged', () => {
  it('LockAcquireError', () => {
    const taken = new LockAcquireError(['a', 'b'], [attempt('taken')], 12.4, 'retries exhausted');
    expect(taken.message).toBe(
      'could not lock a, b: 1/3 locked, 1 held by another owner, 1 failed (connect ECONNREFUSED), after 1 attempt in 12 ms (retries exhausted)',
    );
    expect(taken).toMatchObject({ name: 'LockAcquireError', resources: ['a', 'b'], elapsedMs: 12.4, stoppedBecause: 'retries exhausted', outcome: 'taken' });
    const expired = new LockAcquireError(['r'], [attempt('taken'), attempt('expired', -3.4)], 50, 'retries exhausted');
    expect(expired.message).toBe(
      'could not lock r: 1/3 locked, 1 held by another owner, 1 failed (connect ECONNREFUSED), but validity was used up (-3 ms left), after 2 attempts in 50 ms (retries exhausted)',
    );
    const none = new LockAcquireError(['r'], [], 0, 'wait budget exhausted');
    expect(none.message).toBe('could not lock r: no attempt fit in the wait budget, after 0 attempts in 0 ms (wait budget exhausted)');
    expect(none.outcome).toBe('unavailable');
  });

  it('LockExtendError', () => {
    expect(new LockExtendError(['r'], 'released', [], 0).message).toBe('could not extend the lock on r (released: release() was already called)');
    expect(new LockExtendError(['r', 's'], 'unavailable', votes, 5).message).toBe(
      'could not extend the lock on r, s (unavailable: too few members answered; the previous validity still applies): 1/3 locked, 1 held by another owner, 1 failed (connect ECONNREFUSED)',
    );
    expect(new LockExtendError(['r'], 'lost', [], 0, 'taken').message).toBe('could not extend the lock on r (lost: held by another owner)');
    expect(new LockExtendError(['r'], 'lost', [], 0, 'expired').message).toBe(
      'could not extend the lock on r (lost: the lock was lost before: its validity ran out)',
    );
    expect(new LockExtendError(['r'], 'lost', [], 0).message).toBe('could not extend the lock on r (lost: the lock was lost)');
    expect(new LockExtendError(['r'], 'late', [], 7, 'late')).toMatchObject({
      name: 'LockExtendError',
      resources: ['r'],
      reason: 'late',
      votes: [],
      elapsedMs: 7,
      lostBecause: 'late',
    });
  });

  it('LockLostError', () => {
    const expired = new LockLostError(['r'], 'expired');
    expect(expired.message).toBe('lost the lock on r: its validity ran out');
    expect(expired).toMatchObject({ name: 'LockLostError', resources: ['r'], reason: 'expired', lostBecause: 'expired' });
    const cause = new LockExtendError(['r'], 'lost', [], 0, 'gone');
    const failed = new LockLostError(['r'], 'extension failed', { cause });
    expect(failed.message).toBe(
      'lost the lock on r: an extension failed: could not extend the lock on r (lost: our keys are gone on too many members (expired, evicted, deleted or forgotten))',
    );
    expect(failed.cause).toBe(cause);
    expect(failed.lostBecause).toBe('gone');
    expect(new LockLostError(['r'], 'extension failed').lostBecause).toBe('taken');
    expect(new LockLostError(['r'], 'extension failed', { cause, lostBecause: 'lapsed' }).lostBecause).toBe('lapsed');
  });
});

describe('instanceof across two copies of the module', () => {
  it('the copy really is another module, with classes of its own', () => {
    expect(copy.LockAcquireError).not.toBe(LockAcquireError);
    expect(copy.LockExtendError).not.toBe(LockExtendError);
    expect(copy.LockLostError).not.toBe(LockLostError);
    expect(copy.LockAcquireError.prototype).not.toBe(LockAcquireError.prototype);
  });

  it('an error from either copy is an instance of the same class in the other, and of no other class', () => {
    const ours = samples({ LockAcquireError, LockExtendError, LockLostError });
    const theirs = samples(copy);
    for (const { acquire, extend, lost } of [ours, theirs]) {
      for (const Class of [LockAcquireError, copy.LockAcquireError]) {
        expect(acquire instanceof Class).toBe(true);
        expect(extend instanceof Class).toBe(false);
        expect(lost instanceof Class).toBe(false);
      }
      for (const Class of [LockExtendError, copy.LockExtendError]) {
        expect(extend instanceof Class).toBe(true);
        expect(acquire instanceof Class).toBe(false);
        expect(lost instanceof Class).toBe(false);
      }
      for (const Class of [LockLostError, copy.LockLostError]) {
        expect(lost instanceof Class).toBe(true);
        expect(acquire instanceof Class).toBe(false);
        expect(extend instanceof Class).toBe(false);
      }
      for (const error of [acquire, extend, lost]) expect(error instanceof Error).toBe(true);
    }
    expect(theirs.acquire.code).toBe(ours.acquire.code);
  });

  it('narrows in TypeScript as before', () => {
    const error: unknown = samples(copy).acquire;
    if (!(error instanceof LockAcquireError)) throw new Error('not a LockAcquireError');
    expect(error.outcome).toBe('taken');
    expect(error.code).toBe('QUORUMLOCK_ERR_ACQUIRE');
  });

  it('a LockExtendError of the other copy still gives LockLostError its lostBecause', () => {
    const cause = new copy.LockExtendError(['r'], 'lost', [], 0, 'gone');
    expect(new LockLostError(['r'], 'extension failed', { cause }).lostBecause).toBe('gone');
  });

  it('values without the brand are no instances', () => {
    for (const value of [null, undefined, 0, 'LockAcquireError', {}, new Error('x'), Symbol('x'), () => {}]) {
      expect(value instanceof LockAcquireError).toBe(false);
      expect(value instanceof LockExtendError).toBe(false);
      expect(value instanceof LockLostError).toBe(false);
    }
    expect({ [Symbol.for('quorumlock.error.LockAcquireError')]: 'yes' } instanceof LockAcquireError).toBe(false);
  });

  it('a second class with the same brand is recognised (what another build or version does)', () => {
    const brand = Symbol.for('quorumlock.error.LockLostError');
    class Foreign extends Error {
      constructor() {
        super('lost');
        Object.defineProperty(this, brand, { value: true });
      }
    }
    expect(new Foreign() instanceof LockLostError).toBe(true);
    expect(new Foreign() instanceof LockAcquireError).toBe(false);
  });

  it('the prototype chain still counts for the class itself', () => {
    expect(Object.create(LockAcquireError.prototype) instanceof LockAcquireError).toBe(true);
    expect(Object.create(LockAcquireError.prototype) instanceof copy.LockAcquireError).toBe(false);
  });
});

describe('subclasses', () => {
  class Custom extends LockAcquireError {
    readonly extra = 'mine';
  }
  class OtherCustom extends LockAcquireError {}
  class CustomLost extends copy.LockLostError {}

  it('an instance of a subclass is one of the subclass, of LockAcquireError in every copy, and of Error', () => {
    const custom = new Custom(['r'], [], 0, 'wait budget exhausted');
    expect(custom instanceof Custom).toBe(true);
    expect(custom instanceof LockAcquireError).toBe(true);
    expect(custom instanceof copy.LockAcquireError).toBe(true);
    expect(custom instanceof Error).toBe(true);
    expect(custom instanceof OtherCustom).toBe(false);
    expect(custom instanceof LockExtendError).toBe(false);
    expect(custom.code).toBe('QUORUMLOCK_ERR_ACQUIRE');
    expect(custom.extra).toBe('mine');
    expect(custom.message).toBe('could not lock r: no attempt fit in the wait budget, after 0 attempts in 0 ms (wait budget exhausted)');
  });

  it('an instance of the base class, from either copy, is no instance of a subclass', () => {
    expect(new LockAcquireError(['r'], [], 0, 'wait budget exhausted') instanceof Custom).toBe(false);
    expect(new copy.LockAcquireError(['r'], [], 0, 'wait budget exhausted') instanceof Custom).toBe(false);
    expect(new LockLostError(['r'], 'expired') instanceof CustomLost).toBe(false);
  });

  it("a subclass of the other copy's class is an instance of ours", () => {
    const lost = new CustomLost(['r'], 'expired');
    expect(lost instanceof CustomLost).toBe(true);
    expect(lost instanceof LockLostError).toBe(true);
    expect(lost instanceof copy.LockLostError).toBe(true);
    expect(lost.code).toBe('QUORUMLOCK_ERR_LOCK_LOST');
  });
});

describe('argumentError', () => {
  it('a TypeError with parameter and code QUORUMLOCK_ERR_INVALID_ARG_TYPE', () => {
    const error: ArgumentError = argumentError(TypeError, 'ttl', 'must be a number, got "5"');
    expect(error).toBeInstanceOf(TypeError);
    expect(error).not.toBeInstanceOf(RangeError);
    expect(error.message).toBe('quorumlock: ttl must be a number, got "5"');
    expect(error.parameter).toBe('ttl');
    expect(error.code).toBe(errorCodes.QUORUMLOCK_ERR_INVALID_ARG_TYPE);
    expect(error.name).toBe('TypeError');
  });

  it('a RangeError with parameter and code QUORUMLOCK_ERR_OUT_OF_RANGE', () => {
    const error = argumentError(RangeError, 'driftFactor', 'must be in [0, 0.5), got 0.7');
    expect(error).toBeInstanceOf(RangeError);
    expect(error.message).toBe('quorumlock: driftFactor must be in [0, 0.5), got 0.7');
    expect(error.parameter).toBe('driftFactor');
    expect(error.code).toBe(errorCodes.QUORUMLOCK_ERR_OUT_OF_RANGE);
  });

  it('JSON and inspect show parameter and code', () => {
    const error = argumentError(RangeError, 'retryCount', 'must be an integer >= 0, got -1');
    expect(JSON.parse(JSON.stringify(error))).toEqual({ parameter: 'retryCount', code: 'QUORUMLOCK_ERR_OUT_OF_RANGE' });
    expect(inspect(error)).toContain("code: 'QUORUMLOCK_ERR_OUT_OF_RANGE'");
  });
});
