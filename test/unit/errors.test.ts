/**
 * src/errors.ts: every error quorumlock throws extends QuorumlockError (the argument errors, which
 * stay TypeError / RangeError, carry its brand) and carries a stable `code`; messages are what they
 * were; `instanceof` holds across two copies of the module, and across the ESM and CJS builds of
 * the package side by side, through Symbol.for brands, while subclasses and `instanceof Error`
 * behave as usual. The table below lists every class. Pure: no redis.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { inspect } from 'node:util';
import { build, type BuildOptions } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  argumentError,
  codes,
  electionErrorCodes,
  errorCodes,
  LockAcquireError,
  LockExtendError,
  LockLostError,
  QuorumlockError,
  type ArgumentError,
  type AttemptRecord,
  type ErrorCode,
} from '../../src/errors.js';
import * as errors from '../../src/errors.js';
import * as index from '../../src/index.js';
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

  it('codes lists every code, each under its own name; errorCodes and electionErrorCodes still say the same', () => {
    expect(Object.values(codes).sort()).toEqual([
      'QUORUMLOCK_ERR_ACQUIRE',
      'QUORUMLOCK_ERR_EPOCH_CHANGED',
      'QUORUMLOCK_ERR_EPOCH_TOO_NEW',
      'QUORUMLOCK_ERR_EXTEND',
      'QUORUMLOCK_ERR_INVALID_ARG_TYPE',
      'QUORUMLOCK_ERR_LEADERSHIP_LOST',
      'QUORUMLOCK_ERR_LEADER_UNKNOWN',
      'QUORUMLOCK_ERR_LOCK_LOST',
      'QUORUMLOCK_ERR_NOT_MASTER',
      'QUORUMLOCK_ERR_OUT_OF_RANGE',
      'QUORUMLOCK_ERR_PROTOCOL',
      'QUORUMLOCK_ERR_REENTRANCY',
      'QUORUMLOCK_ERR_RESET_MEMBERS',
      'QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE',
      'QUORUMLOCK_ERR_TESTING_ONLY',
      'QUORUMLOCK_ERR_UNKNOWN_OPTION',
    ]);
    for (const [key, code] of Object.entries(codes)) expect(key).toBe(code);
    expect(errorCodes).toBe(codes);
    expect(electionErrorCodes).toEqual({
      QUORUMLOCK_ERR_LEADERSHIP_LOST: 'QUORUMLOCK_ERR_LEADERSHIP_LOST',
      QUORUMLOCK_ERR_LEADER_UNKNOWN: 'QUORUMLOCK_ERR_LEADER_UNKNOWN',
    });
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
    for (const value of [null, undefined, 0, 'LockAcquireError', {}, new Error('x'), new TypeError('x'), Symbol('x'), () => {}]) {
      expect(value instanceof LockAcquireError).toBe(false);
      expect(value instanceof LockExtendError).toBe(false);
      expect(value instanceof LockLostError).toBe(false);
      expect(value instanceof QuorumlockError).toBe(false);
    }
    expect({ [Symbol.for('quorumlock.error.LockAcquireError')]: 'yes' } instanceof LockAcquireError).toBe(false);
    expect({ [Symbol.for('quorumlock.error')]: 'yes' } instanceof QuorumlockError).toBe(false);
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

  it('the brands sit on the prototypes (as undici does), so the prototype chain carries them', () => {
    expect(Object.create(LockAcquireError.prototype) instanceof LockAcquireError).toBe(true);
    expect(Object.create(LockAcquireError.prototype) instanceof copy.LockAcquireError).toBe(true);
    expect(Object.create(LockAcquireError.prototype) instanceof copy.QuorumlockError).toBe(true);
    expect(Object.create(LockAcquireError.prototype) instanceof copy.LockLostError).toBe(false);
  });

  it('a value with only the base brand is a QuorumlockError, and of no class below it', () => {
    const foreign = Object.assign(new Error('x'), { [Symbol.for('quorumlock.error')]: true });
    expect(foreign instanceof QuorumlockError).toBe(true);
    expect(foreign instanceof copy.QuorumlockError).toBe(true);
    expect(foreign instanceof LockAcquireError).toBe(false);
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
    expect(lost instanceof QuorumlockError).toBe(true);
    expect(lost.code).toBe('QUORUMLOCK_ERR_LOCK_LOST');
  });

  it('an instance of a subclass is no instance of a sibling subclass of QuorumlockError', () => {
    expect(new Custom(['r'], [], 0, 'wait budget exhausted') instanceof copy.LockLostError).toBe(false);
    expect(new CustomLost(['r'], 'expired') instanceof Custom).toBe(false);
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

// --- Every class, in every copy: this source, a second copy of it, and the ESM and CJS builds -----

/** The error classes, by the names src/errors.ts and the package export them under. */
type ClassName =
  | 'LockAcquireError'
  | 'LockExtendError'
  | 'LockLostError'
  | 'ArgumentTypeError'
  | 'ArgumentRangeError'
  | 'UnknownOptionError'
  | 'ReentrancyError'
  | 'ProtocolError'
  | 'SemaphoreUnavailableError'
  | 'LeadershipLostError'
  | 'LeaderUnknownError'
  | 'EpochChangedError'
  | 'NotMasterError'
  | 'EpochTooNewError'
  | 'TestingOnlyError'
  | 'ResetMembersError';
type Classes = Pick<ErrorsModule, ClassName | 'QuorumlockError'>;

interface Row {
  Class: ClassName;
  /** `error.name`: the class name, but for the argument errors, which stay 'TypeError' / 'RangeError' as before. */
  name: string;
  code: ErrorCode;
  /** The built-in class it also is. */
  kind: typeof Error | typeof TypeError | typeof RangeError;
  make(from: Classes): Error & { code: string };
}

/** Every error class of quorumlock: its name, its code, the built-in it extends, and one instance. */
const table: Row[] = [
  {
    Class: 'LockAcquireError',
    name: 'LockAcquireError',
    code: 'QUORUMLOCK_ERR_ACQUIRE',
    kind: Error,
    make: (from) => new from.LockAcquireError(['r'], [attempt('taken')], 10, 'retries exhausted'),
  },
  {
    Class: 'LockExtendError',
    name: 'LockExtendError',
    code: 'QUORUMLOCK_ERR_EXTEND',
    kind: Error,
    make: (from) => new from.LockExtendError(['r'], 'unavailable', votes, 5),
  },
  { Class: 'LockLostError', name: 'LockLostError', code: 'QUORUMLOCK_ERR_LOCK_LOST', kind: Error, make: (from) => new from.LockLostError(['r'], 'expired') },
  {
    Class: 'ArgumentTypeError',
    name: 'TypeError',
    code: 'QUORUMLOCK_ERR_INVALID_ARG_TYPE',
    kind: TypeError,
    make: (from) => new from.ArgumentTypeError('ttl', 'must be a number, got "5"'),
  },
  {
    Class: 'ArgumentRangeError',
    name: 'RangeError',
    code: 'QUORUMLOCK_ERR_OUT_OF_RANGE',
    kind: RangeError,
    make: (from) => new from.ArgumentRangeError('driftFactor', 'must be in [0, 0.5), got 0.7'),
  },
  {
    Class: 'UnknownOptionError',
    name: 'TypeError',
    code: 'QUORUMLOCK_ERR_UNKNOWN_OPTION',
    kind: TypeError,
    make: (from) => new from.UnknownOptionError('automaticExtensionThreshold', 'is not an option of new Redlock()'),
  },
  {
    Class: 'ReentrancyError',
    name: 'ReentrancyError',
    code: 'QUORUMLOCK_ERR_REENTRANCY',
    kind: Error,
    make: (from) => new from.ReentrancyError(['r'], 2, 'reentrant acquire of r would nest 2 deep, more than maxReentrancy (1)'),
  },
  { Class: 'ProtocolError', name: 'ProtocolError', code: 'QUORUMLOCK_ERR_PROTOCOL', kind: Error, make: (from) => new from.ProtocolError('unexpected reply 9') },
  {
    Class: 'SemaphoreUnavailableError',
    name: 'SemaphoreUnavailableError',
    code: 'QUORUMLOCK_ERR_SEMAPHORE_UNAVAILABLE',
    kind: Error,
    make: (from) => new from.SemaphoreUnavailableError('gpu', [{ member: 'a:6379/0', pttls: undefined, error: 'timeout' }], 2),
  },
  {
    Class: 'LeadershipLostError',
    name: 'LeadershipLostError',
    code: 'QUORUMLOCK_ERR_LEADERSHIP_LOST',
    kind: Error,
    make: (from) => new from.LeadershipLostError('scheduler', 7, 'resigned'),
  },
  {
    Class: 'LeaderUnknownError',
    name: 'LeaderUnknownError',
    code: 'QUORUMLOCK_ERR_LEADER_UNKNOWN',
    kind: Error,
    make: (from) => new from.LeaderUnknownError('scheduler', [{ member: 'a:6379/0', error: 'timeout' }], 'unavailable'),
  },
  {
    Class: 'EpochChangedError',
    name: 'EpochChangedError',
    code: 'QUORUMLOCK_ERR_EPOCH_CHANGED',
    kind: Error,
    make: (from) => new from.EpochChangedError('a:6379/0', 'e1', 'e2'),
  },
  { Class: 'NotMasterError', name: 'NotMasterError', code: 'QUORUMLOCK_ERR_NOT_MASTER', kind: Error, make: (from) => new from.NotMasterError('a:6379/0') },
  {
    Class: 'EpochTooNewError',
    name: 'EpochTooNewError',
    code: 'QUORUMLOCK_ERR_EPOCH_TOO_NEW',
    kind: Error,
    make: (from) => new from.EpochTooNewError('a:6379/0', 'e2'),
  },
  {
    Class: 'TestingOnlyError',
    name: 'TestingOnlyError',
    code: 'QUORUMLOCK_ERR_TESTING_ONLY',
    kind: Error,
    make: (from) => new from.TestingOnlyError('quorumlock/testing: resetMembers() refuses to run with NODE_ENV=production'),
  },
  {
    Class: 'ResetMembersError',
    name: 'ResetMembersError',
    code: 'QUORUMLOCK_ERR_RESET_MEMBERS',
    kind: Error,
    make: (from) => new from.ResetMembersError('a:6379/0', 'has no master node'),
  },
];

type Testing = typeof import('../../src/testing.js');
interface Build {
  index: Classes & Record<string, unknown>;
  testing: Testing;
}

/**
 * Two more copies of the package, an ESM and a CJS bundle (esbuild, node20, ioredis external;
 * src/index.ts and src/testing.ts each on their own), as two bundles of one application may hold
 * them (the package itself ships one copy, scripts/build.mjs), fresh from src/ into a
 * directory of this test's own: the checkout's dist/ may be absent or older than src/, and
 * `npm run build` deletes it first, under whoever else reads it. Inside node_modules, so that
 * the bundles' ioredis resolves. The CJS one is loaded with require(), the ESM one with import().
 */
const root = fileURLToPath(new URL('../../', import.meta.url));
let outDir: string;
const builds = {} as { esm: Build; cjs: Build };

beforeAll(async () => {
  outDir = mkdtempSync(join(root, 'node_modules', '.quorumlock-errors-'));
  const common: BuildOptions = { bundle: true, platform: 'node', target: 'node20', external: ['ioredis'], logLevel: 'silent' };
  const entries = { index: join(root, 'src/index.ts'), testing: join(root, 'src/testing.ts') };
  await Promise.all(
    (['esm', 'cjs'] as const).flatMap((format) =>
      Object.entries(entries).map(([name, entry]) => build({ ...common, entryPoints: [entry], format, outfile: join(outDir, format, `${name}.js`) })),
    ),
  );
  writeFileSync(join(outDir, 'esm/package.json'), '{ "type": "module" }\n');
  writeFileSync(join(outDir, 'cjs/package.json'), '{ "type": "commonjs" }\n');
  const load = (format: 'esm' | 'cjs', name: string): Promise<unknown> =>
    format === 'cjs'
      ? Promise.resolve(createRequire(import.meta.url)(join(outDir, 'cjs', `${name}.js`)))
      : import(/* @vite-ignore */ pathToFileURL(join(outDir, 'esm', `${name}.js`)).href);
  for (const format of ['esm', 'cjs'] as const)
    builds[format] = { index: (await load(format, 'index')) as Build['index'], testing: (await load(format, 'testing')) as Testing };
}, 60_000);

afterAll(() => {
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

/** Every copy of the classes: this source, a second copy of it, and the two builds. */
const copies = (): [string, Classes][] => [
  ['src', errors],
  ['src copy', copy],
  ['ESM build', builds.esm.index],
  ['CJS build', builds.cjs.index],
];

describe('every error class (the table)', () => {
  it('the builds are really other copies, with classes of their own, one in the format asked for', () => {
    expect(builds.esm.index.LockAcquireError).not.toBe(builds.cjs.index.LockAcquireError);
    expect(builds.esm.index.QuorumlockError).not.toBe(QuorumlockError);
    expect(builds.cjs.index.QuorumlockError).not.toBe(QuorumlockError);
    expect(createRequire(import.meta.url).cache[join(outDir, 'cjs/index.js')]).toBeDefined();
  });

  it('lists every class src/index.ts exports (as a value) and every code, each code once', () => {
    const branded = (module: Record<string, unknown>) =>
      Object.entries(module)
        .filter(
          ([, value]) => typeof value === 'function' && (value as { prototype?: Record<symbol, unknown> }).prototype?.[Symbol.for('quorumlock.error')] === true,
        )
        .map(([name]) => name)
        .sort();
    const listed = ['QuorumlockError', ...table.map((row) => row.Class)].sort();
    expect(branded(index)).toEqual(listed);
    expect(branded(errors)).toEqual(listed);
    expect(branded(builds.esm.index)).toEqual(listed);
    expect(branded(builds.cjs.index)).toEqual(listed);
    expect(table.map((row) => row.code).sort()).toEqual(Object.values(codes).sort());
  });

  describe.each(table)('$Class', (row) => {
    it(`is named ${row.name}, has code ${row.code}, and is a QuorumlockError, a ${row.Class} and a ${row.kind.name}, whichever copy made it and whichever checks`, () => {
      for (const [madeBy, from] of copies()) {
        const error = row.make(from);
        expect(error.name, madeBy).toBe(row.name);
        expect(error.code, madeBy).toBe(row.code);
        expect(Object.keys(error), madeBy).toContain('code');
        expect(JSON.parse(JSON.stringify(error)).code, madeBy).toBe(row.code);
        expect(Object.getOwnPropertySymbols(error), madeBy).toEqual([]);
        for (const [checkedBy, by] of copies()) {
          const where = `made by ${madeBy}, checked by ${checkedBy}`;
          expect(error instanceof by.QuorumlockError, where).toBe(true);
          expect(error instanceof by[row.Class], where).toBe(true);
          for (const other of table) if (other.Class !== row.Class) expect(error instanceof by[other.Class], `${where}: no ${other.Class}`).toBe(false);
        }
        expect(error instanceof Error, madeBy).toBe(true);
        expect(error instanceof row.kind, madeBy).toBe(true);
        if (row.kind === TypeError) expect(error instanceof RangeError, madeBy).toBe(false);
        if (row.kind === RangeError) expect(error instanceof TypeError, madeBy).toBe(false);
      }
    });
  });

  it('what quorumlock/testing throws, from either build, is an instance of every copy of its class', async () => {
    const saved = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      for (const format of ['esm', 'cjs'] as const) {
        const error: unknown = await builds[format].testing.resetMembers([]).then(
          () => undefined,
          (thrown: unknown) => thrown,
        );
        for (const [checkedBy, by] of copies()) {
          expect(error instanceof by.TestingOnlyError, `${format} testing, checked by ${checkedBy}`).toBe(true);
          expect(error instanceof by.QuorumlockError, `${format} testing, checked by ${checkedBy}`).toBe(true);
        }
        expect(error).toMatchObject({ name: 'TestingOnlyError', code: 'QUORUMLOCK_ERR_TESTING_ONLY' });
      }
    } finally {
      if (saved === undefined) delete process.env.NODE_ENV;
      else process.env.NODE_ENV = saved;
    }
  });
});
