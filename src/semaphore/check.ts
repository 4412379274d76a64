/**
 * The semaphore's own argument checks, before any network call (the lock's are in options/check.ts).
 */
import { argumentError } from '../errors.js';
import { checkOptionsObject } from '../options/check.js';
import { checkOptionNames, semaphoreOptionNames } from '../options/names.js';

/** The most permits one semaphore may have: every acquire may read them all on every member. */
export const MAX_PERMITS = 1024;
/** The longest semaphore name, in UTF-16 code units. */
export const MAX_NAME_LENGTH = 256;

/** The options of `redlock.semaphore(name, options)`. */
export interface SemaphoreOptions {
  /** How many holders at once: an integer from 1 to 1024. Required. */
  permits: number;
}

function show(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * A non-empty string without braces, at most 256 long: the name becomes the permits' hash tag
 * (permitResource), and a brace inside would change which part of the key is the tag.
 */
export function checkSemaphoreName(name: unknown): string {
  const rule = `must be a non-empty string of at most ${MAX_NAME_LENGTH} characters without "{" or "}"`;
  if (typeof name !== 'string') throw argumentError(TypeError, 'name', `${rule}, got ${show(name)}`);
  if (name.length === 0 || name.length > MAX_NAME_LENGTH || /[{}]/.test(name)) throw argumentError(RangeError, 'name', `${rule}, got ${show(name)}`);
  return name;
}

export function checkSemaphoreOptions(options: unknown): number {
  if (options === undefined) throw argumentError(TypeError, 'options', `must be an object with permits (an integer from 1 to ${MAX_PERMITS}), got undefined`);
  checkOptionsObject(options);
  checkOptionNames(options as object, semaphoreOptionNames);
  const { permits } = options as { permits?: unknown };
  const rule = `must be an integer from 1 to ${MAX_PERMITS}`;
  if (typeof permits !== 'number' || Number.isNaN(permits)) throw argumentError(TypeError, 'permits', `${rule}, got ${show(permits)}`);
  if (!Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) throw argumentError(RangeError, 'permits', `${rule}, got ${show(permits)}`);
  return permits;
}
