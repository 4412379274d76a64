/** A member that is one server: a master, or a Sentinel-managed group (ioredis follows its master). */
import type { Redis } from 'ioredis';
import { EPOCH_KEY, resourceKeys } from '../store/keys.js';
import { serverFacts } from '../store/server.js';
import type { Topology } from './topology.js';

/**
 * resourceKeys() for an array of resources, made once: an acquire call passes the same array to
 * every member in every attempt, and a lock the same to every extend and release.
 */
const keysMade = new WeakMap<readonly string[], readonly string[]>();
const acquireKeysMade = new WeakMap<readonly string[], readonly string[]>();

function keysOf(resources: readonly string[]): readonly string[] {
  let keys = keysMade.get(resources);
  if (!keys) keysMade.set(resources, (keys = resourceKeys(resources)));
  return keys;
}

function acquireKeysOf(resources: readonly string[]): readonly string[] {
  let keys = acquireKeysMade.get(resources);
  if (!keys) acquireKeysMade.set(resources, (keys = [...keysOf(resources), EPOCH_KEY]));
  return keys;
}

const EPOCH_KEYS = [EPOCH_KEY] as const;

/**
 * One epoch hash for the whole server. ioredis applies the client's keyPrefix to every key,
 * ours included, so the names here are unprefixed.
 */
export function serverTopology(client: Redis): Topology {
  return {
    keysOf,
    epochKeyOf: () => EPOCH_KEY,
    acquireKeysOf,
    everyEpochKey: () => EPOCH_KEYS,
    // A stand-in client without INFO (the drift simulator's) has no facts to read.
    readFacts: typeof client.info === 'function' ? () => client.info().then(serverFacts) : undefined,
    oneSocket: true,
  };
}
