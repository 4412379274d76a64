/**
 * The checks of election inputs, before any network call: typed errors naming the parameter
 * and the allowed range (src/errors.ts argumentError), unknown option names refused.
 */
import { hostname } from 'node:os';
import { argumentError } from '../errors.js';
import { checkOptionsObject, checkTtl } from '../options/check.js';
import { campaignOptionNames, checkOptionNames, electionOptionNames, observeOptionNames } from '../options/names.js';
import type { Settings } from '../options/settings.js';

/** redlock.election()'s options: what every candidate of one election should agree on (the ttl), and its own name. */
export interface ElectionOptions {
  /** The leadership's ttl, ms: a leader that is gone is replaced about this long after its last extension. Required. */
  ttl: number;
  /** How this candidate is named to observers (leader().id). Default `<hostname>:<pid>`. */
  id?: string;
  /** How often observe() reads the leader, ms. Default min(1000, ttl / 4). */
  pollInterval?: number;
}

/** campaign()'s options: a campaign waits without end unless told to stop. */
export interface CampaignOptions {
  /** Gives up the campaign: campaign() rejects with signal.reason, leaving nothing behind. */
  signal?: AbortSignal;
}

/** observe()'s options: `signal` ends the observation (the iterator returns). */
export type ObserveOptions = CampaignOptions;

export interface ElectionConfig {
  readonly name: string;
  readonly ttl: number;
  readonly id: string;
  readonly pollInterval: number;
}

/** Ids and names longer than this are refused: they travel in every record and log line. */
export const MAX_NAME_LENGTH = 512;

/**
 * The ttl must leave room for an extension, its retries and the stop margin (leadership.ts:
 * extend with 2/3 of the ttl left, stop with 1/5 left): more than 5 member timeouts.
 */
const TIMEOUTS_PER_TTL = 5;

function checkText(parameter: string, value: unknown): string {
  if (typeof value !== 'string') throw argumentError(TypeError, parameter, `must be a string of 1 to ${MAX_NAME_LENGTH} characters, got ${typeof value}`);
  if (value.length === 0 || value.length > MAX_NAME_LENGTH)
    throw argumentError(RangeError, parameter, `must be a string of 1 to ${MAX_NAME_LENGTH} characters, got ${value.length}`);
  return value;
}

export function checkElection(name: unknown, options: unknown, settings: Settings): ElectionConfig {
  checkText('name', name);
  // The name is the hash tag of the election's keys (keys.ts, electionResource): a brace would end it early.
  if (/[{}]/.test(name as string)) throw argumentError(RangeError, 'name', `must not contain { or }, got ${JSON.stringify(name)}`);
  if (options === undefined) throw argumentError(TypeError, 'options', 'must be an object with at least a ttl, e.g. { ttl: 10_000 }');
  checkOptionsObject(options);
  checkOptionNames(options as object, electionOptionNames);
  const given = options as Partial<ElectionOptions>;
  const ttl = checkTtl(given.ttl, settings);
  const floor = settings.nodeTimeout * TIMEOUTS_PER_TTL;
  if (ttl <= floor)
    throw argumentError(
      RangeError,
      'ttl',
      `must be more than ${TIMEOUTS_PER_TTL} × nodeTimeout (${floor} ms) for an election, to leave room for extensions and the stop margin, got ${ttl}`,
    );
  const id = given.id === undefined ? `${hostname()}:${process.pid}` : checkText('id', given.id);
  const pollInterval = given.pollInterval === undefined ? Math.max(1, Math.min(1000, Math.floor(ttl / 4))) : checkPollInterval(given.pollInterval);
  return Object.freeze({ name: name as string, ttl, id, pollInterval });
}

function checkPollInterval(value: unknown): number {
  const range = 'an integer from 1 to 3600000 ms';
  if (typeof value !== 'number' || Number.isNaN(value)) throw argumentError(TypeError, 'pollInterval', `must be ${range}, got ${typeof value}`);
  if (!Number.isInteger(value) || value < 1 || value > 3_600_000) throw argumentError(RangeError, 'pollInterval', `must be ${range}, got ${value}`);
  return value;
}

/** campaign()'s and observe()'s options: an object with at most an AbortSignal. */
export function checkSignalOptions(options: unknown, call: 'campaign' | 'observe'): AbortSignal | undefined {
  checkOptionsObject(options);
  if (options !== undefined) checkOptionNames(options as object, call === 'campaign' ? campaignOptionNames : observeOptionNames);
  const signal = (options as CampaignOptions | undefined)?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw argumentError(TypeError, 'signal', 'must be an AbortSignal');
  return signal;
}
