/**
 * Unknown option names (src/options/names.ts): refused with QUORUMLOCK_ERR_UNKNOWN_OPTION, a hint
 * for names other lock clients use, the closest valid name for a typo, and nothing else refused.
 * Pure: no client is made.
 */
import { describe, expect, it } from 'vitest';
import { errorCodes, type ArgumentError } from '../../src/errors.js';
import { checkSettings } from '../../src/options/check.js';
import { acquireOptionNames, checkOptionNames, closestName, redlockOptionNames, tryAcquireOptionNames, usingOptionNames } from '../../src/options/names.js';
import type { RedlockOptions } from '../../src/options/settings.js';

function thrownBy(run: () => unknown): ArgumentError {
  try {
    run();
  } catch (error) {
    return error as ArgumentError;
  }
  throw new Error('expected a throw, but the call returned');
}

describe('new Redlock() options', () => {
  it.each([
    ['automaticExtensionThreshold', 'quorumlock extends automatically inside using()'],
    ['db', 'new Redis({ db })'],
    ['retryAttempts', "redlock-universal's: quorumlock's is retryCount"],
    ['clockDriftFactor', "quorumlock's is driftFactor"],
    ['waitTimeout', 'is an acquire() option, per call'],
    ['extendThreshold', 'is a using() option'],
    ['timeout', 'nodeTimeout'],
  ])('%s is refused with a hint', (name, hint) => {
    const error = thrownBy(() => checkSettings({ [name]: 1 } as RedlockOptions));
    expect(error).toBeInstanceOf(TypeError);
    expect(error.code).toBe(errorCodes.QUORUMLOCK_ERR_UNKNOWN_OPTION);
    expect(error.parameter).toBe(name);
    expect(error.message).toMatch(new RegExp(`^quorumlock: ${name} is not an option of new Redlock\\(\\): it `));
    expect(error.message).toContain(hint);
  });

  it.each([
    ['retrycount', 'retryCount'],
    ['driftfactor', 'driftFactor'],
    ['nodeTimout', 'nodeTimeout'],
    ['maxLockTTL', 'maxLockTtl'],
    ['quarantined', 'quarantine'],
  ])('a typo (%s) suggests %s and lists the options', (typo, meant) => {
    const error = thrownBy(() => checkSettings({ [typo]: 1 } as RedlockOptions));
    expect(error.code).toBe(errorCodes.QUORUMLOCK_ERR_UNKNOWN_OPTION);
    expect(error.message).toContain(`(did you mean ${meant}?)`);
    expect(error.message).toContain('its options are driftFactor, retryCount, retryDelay, retryJitter, nodeTimeout, logger, clock, maxLockTtl, quarantine');
  });

  it('a name like no valid one gets the list and no guess', () => {
    const error = thrownBy(() => checkSettings({ colour: 'blue' } as RedlockOptions));
    expect(error.message).toBe(
      'quorumlock: colour is not an option of new Redlock(); its options are driftFactor, retryCount, retryDelay, retryJitter, nodeTimeout, logger, clock, maxLockTtl, quarantine, maxReentrancy',
    );
  });

  it('every documented option passes, also set to undefined', () => {
    for (const name of redlockOptionNames.names) expect(() => checkSettings({ [name]: undefined })).not.toThrow();
  });

  it('names inherited from Object.prototype are not taken for options', () => {
    expect(() => checkSettings(Object.create({}) as RedlockOptions)).not.toThrow();
    expect(thrownBy(() => checkSettings({ toString: 1 } as unknown as RedlockOptions)).parameter).toBe('toString');
  });
});

describe('per-call options', () => {
  it('acquire() takes its own names, and refuses using() and constructor ones with a hint', () => {
    expect(() =>
      checkOptionNames({ retryCount: 1, retryDelay: 1, retryJitter: 1, waitTimeout: 1, signal: undefined, fencing: true }, acquireOptionNames),
    ).not.toThrow();
    expect(thrownBy(() => checkOptionNames({ extendThreshold: 1 }, acquireOptionNames)).message).toContain('is a using() option');
    expect(thrownBy(() => checkOptionNames({ driftFactor: 0.1 }, acquireOptionNames)).message).toContain('is a new Redlock() option');
    expect(thrownBy(() => checkOptionNames({ fenced: true }, acquireOptionNames)).message).toContain('(did you mean fencing?)');
    expect(thrownBy(() => checkOptionNames({ acquireTimeout: 5_000 }, acquireOptionNames)).message).toContain("quorumlock's is waitTimeout");
  });

  it('using() takes acquire() names plus extendThreshold and maxExtensions', () => {
    expect(() => checkOptionNames({ retryCount: 1, extendThreshold: 300, maxExtensions: 2, fencing: false }, usingOptionNames)).not.toThrow();
    expect(thrownBy(() => checkOptionNames({ maxExtension: 2 }, usingOptionNames)).message).toContain('(did you mean maxExtensions?)');
    expect(thrownBy(() => checkOptionNames({ refreshInterval: 2 }, usingOptionNames)).message).toContain('extendThreshold');
  });

  it('tryAcquire() takes signal, fencing and waitTimeout; retry options say it makes one attempt', () => {
    expect(() => checkOptionNames({ signal: undefined, fencing: true, waitTimeout: 100 }, tryAcquireOptionNames)).not.toThrow();
    expect(thrownBy(() => checkOptionNames({ retryDelay: 1 }, tryAcquireOptionNames)).message).toContain('tryAcquire() makes one attempt');
  });

  it('an empty options object passes (a call without options has no names to check, and skips the check)', () => {
    expect(() => checkOptionNames({}, acquireOptionNames)).not.toThrow();
  });
});

describe('closestName', () => {
  it('prefers a match but for case, then the nearest name within a third of the length or with the same first 4 letters', () => {
    expect(closestName('RETRYDELAY', ['retryDelay', 'retryJitter'])).toBe('retryDelay');
    expect(closestName('retryJiter', ['retryDelay', 'retryJitter'])).toBe('retryJitter');
    expect(closestName('signal', ['fencing', 'waitTimeout'])).toBeUndefined();
    expect(closestName('fenced', ['signal', 'fencing'])).toBe('fencing');
    expect(closestName('colour', ['clock', 'logger'])).toBeUndefined();
    expect(closestName('x', ['fencing'])).toBeUndefined();
  });
});
