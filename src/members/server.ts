/** A member that is one server: a master, or a Sentinel-managed group (ioredis follows its master). */
import type { Redis } from 'ioredis';
import { EPOCH_KEY, resourceKeys } from '../store/keys.js';
import { serverFacts } from '../store/server.js';
import type { Topology } from './topology.js';

/**
 * resourceKeys() for an array of resources, remembered for the last array asked: a round asks
 * for the same array once per member, one after another. (Not a WeakMap per array: at thousands
 * of acquires a second its ephemerons cost the garbage collector more than the keys cost to make.)
 */
let lastKeys: { resources: readonly string[]; keys: readonly string[] } | undefined;
let lastKeysAndEpoch: { resources: readonly string[]; keys: readonly string[] } | undefined;

function keysOf(resources: readonly string[]): readonly string[] {
  if (lastKeys?.resources !== resources) lastKeys = { resources, keys: resourceKeys(resources) };
  return lastKeys.keys;
}

function keysAndEpochOf(resources: readonly string[]): readonly string[] {
  if (lastKeysAndEpoch?.resources !== resources) lastKeysAndEpoch = { resources, keys: [...keysOf(resources), EPOCH_KEY] };
  return lastKeysAndEpoch.keys;
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
    keysAndEpochOf,
    everyEpochKey: () => EPOCH_KEYS,
    // A stand-in client without INFO (the drift simulator's) has no facts to read.
    readFacts: typeof client.info === 'function' ? () => client.info().then(serverFacts) : undefined,
    oneSocket: true,
  };
}
