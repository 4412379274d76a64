/**
 * Every name quorumlock stores or listens on in Redis, and the fields of its epoch hash: the one
 * home of the data model. Members, the CLI probes, the simulator and the tests use these; the Lua
 * scripts (src/lua/) receive the names as KEYS and read the fields named here.
 *
 * Per resource `name` (companionKey keeps the companions in the lock key's hash slot, under any
 * keyPrefix, so that a Cluster runs a script on one node):
 *   name                      the lock key: the owner's random value, with the lock's PX ttl
 *   {name}:quorumlock:line    the line of waiters (ZSET: waiter id → arrival ticket)
 *   {name}:quorumlock:leases  when each waiter's place lapses (ZSET: waiter id → ms)
 *   {name}:quorumlock:readers the shared holders (ZSET: lock value → expiry ms on the member's
 *                             clock; the key's PEXPIRE kept at the latest; docs/shared-locks.md)
 *   {name}:quorumlock:handover what a waiter in line asked to be handed at a release (HASH: waiter
 *                             id → HandoverRequest, protocol.ts; docs/handover.md), lapsing with
 *                             the line
 * Per member (one per hash slot on a Cluster: quorumlock:epoch:{tag}):
 *   quorumlock:epoch          the epoch hash (EPOCH_FIELDS, and fence:<name> per resource)
 * Per Redlock (a listener: its waiters' ids are <listener>.<n>, newWaiterId):
 *   quorumlock:waiter:<listener>  the channel a release announces "you are first in line" on,
 *                             the message naming the waiter
 * Per election `name` (src/election/):
 *   quorumlock:election:{<name>}                        its lock (electionResource): held by the leader
 *   quorumlock:election:{<name>}:quorumlock:leader      the leader record (leaderRecordKey, election.lua)
 * Per semaphore `name` (src/semaphore/), for each permit i:
 *   quorumlock:semaphore:{name}:permit:<i>              permit i's lock key (permitResource), with its companions
 */
import { randomBytes } from 'node:crypto';
import { isShared, SHARED_MARK } from './protocol.js';
import { allSlotTags, slotOfHashed, tagOfSlot } from './slots.js';

/**
 * The hash tag of `key` by Redis' rule: the text between the first `{` and the first `}` after
 * it, when not empty; undefined when the key has none (then the whole key is hashed).
 */
export function hashTagOf(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open === -1) return undefined;
  const close = key.indexOf('}', open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : undefined;
}

/** The cluster slot of `key` (0..16383), as Redis computes it (CLUSTER KEYSLOT): of its hash tag, or of the whole key. */
export function slotOf(key: string): number {
  return slotOfHashed(hashTagOf(key) ?? key);
}

/**
 * A key for `key`'s companion data (`suffix`) in the same slot as `key`, once the client's
 * keyPrefix is put in front of both. Keys whose full name has a hash tag keep it (the suffix is
 * appended); others are wrapped in braces, which hashes the same text; when that cannot work (a
 * prefix outside the braces, a stray `}`), the key borrows its slot's tag instead. A prefix with
 * a `{` but no complete tag is refused up front (see checkClusterPrefix).
 */
export function companionKey(key: string, suffix: string, prefix = ''): string {
  const full = prefix + key;
  if (hashTagOf(full) !== undefined) return `${key}:${suffix}`;
  if (prefix === '' && !key.includes('}')) return `{${key}}:${suffix}`;
  return `{${tagOfSlot(slotOf(full))}}:${suffix}:${key}`;
}

/**
 * Whether keys built with `companionKey` land in their key's slot under this keyPrefix: a prefix
 * without `{`, or with a complete hash tag (then every key is in that tag's slot).
 */
export function clusterPrefixWorks(prefix: string): boolean {
  return !prefix.includes('{') || hashTagOf(prefix) !== undefined;
}

/** The prefix of quorumlock's own names: the epoch hashes and the waiter channels. */
export const RESERVED_PREFIX = 'quorumlock:';

/**
 * Per member: when its data began (its epoch), whether it was declared brand new, fence counters.
 * A Redis Cluster member keeps one per hash slot instead (clusterEpochKey), as a script may only
 * touch keys of one slot.
 */
export const EPOCH_KEY = 'quorumlock:epoch';

const slotEpochKey = (tag: string) => `${EPOCH_KEY}:{${tag}}`;

/** The epoch hash of `key`'s slot on a Redis Cluster member (`key` with the keyPrefix). */
export function clusterEpochKey(prefixedKey: string): string {
  return slotEpochKey(tagOfSlot(slotOf(prefixedKey)));
}

/** The epoch hash of every slot of a Redis Cluster member, in slot order. */
export function allClusterEpochKeys(): string[] {
  return allSlotTags().map(slotEpochKey);
}

/**
 * The epoch hash's fields (src/lua/_epoch.lua writes them; trust.lua and _fence.lua read them):
 * id (unique per epoch: TIME to the µs), since (ms, the member's clock: when it began), restart
 * (ms: the process start, where the server proved it bounds every forgotten lock: the quarantine
 * of clients that chose 'from-restart' counts from it), run_id and replid (the
 * data's lineage), evicted (INFO stats evicted_keys when the epoch began: an eviction since ends
 * it for the scripts that grant on a key's absence), replaced ('1': the epoch replaced one of
 * another lineage, rather than beginning on a member with no hash), genesis ('1': declared brand new), floor (every resource's counter is at
 * least this), max (the highest counter or floor). Each resource's counter is `fence:<name>`.
 */
export const EPOCH_FIELDS = ['id', 'since', 'restart', 'run_id', 'replid', 'evicted', 'replaced', 'genesis', 'floor', 'max'] as const;
export type EpochFields = Partial<Record<(typeof EPOCH_FIELDS)[number], string>>;

/** HMGET epoch ...EPOCH_FIELDS → an object. */
export function epochFields(values: readonly (string | null | undefined)[]): EpochFields {
  const fields: EpochFields = {};
  EPOCH_FIELDS.forEach((name, index) => {
    const value = values[index];
    if (typeof value === 'string') fields[name] = value;
  });
  return fields;
}

/** The epoch hash field of `resource`'s fence counter (_fence.lua: 'fence:' .. KEYS[i]). */
export const fenceField = (resource: string) => `fence:${resource}`;

const LINE = 'quorumlock:line';
const LEASES = 'quorumlock:leases';
const LEADER = 'quorumlock:leader';

/**
 * The resource whose exclusive lock is the leadership of election `name` (which holds no `{` or
 * `}`: src/election/options.ts). Reserved (it starts with RESERVED_PREFIX), so no user lock can
 * take or overwrite it. The name is its hash tag, so the leader record shares its slot.
 */
export const electionResource = (name: string) => `${RESERVED_PREFIX}election:{${name}}`;

/**
 * The leader record of the election whose lock is `resource` (electionResource): in the lock
 * key's hash slot (companionKey: the resource's tag, or the keyPrefix's), so election.lua reads
 * both on one Cluster node; reserved like the resource (it starts with RESERVED_PREFIX).
 */
export const leaderRecordKey = (resource: string, keyPrefix = '') => companionKey(resource, LEADER, keyPrefix);

const READERS = 'quorumlock:readers';
const HANDOVER = 'quorumlock:handover';

/** The readers of `resource` (shared locks): a ZSET of reader value → end of its hold on the member's clock. */
export const readersKeyOf = (resource: string, keyPrefix = '') => companionKey(resource, READERS, keyPrefix);

const COMPANION_SUFFIXES = [LINE, LEASES, READERS, HANDOVER] as const;

/** How isReservedName's refusal describes our names, for the argument error. */
export const RESERVED_NAMES = `not starting with "${RESERVED_PREFIX}", not ending in ":${LINE}", ":${LEASES}", ":${READERS}" or ":${HANDOVER}"`;

/**
 * Whether `name` is (or may be) one of quorumlock's own keys, which no resource may be: locking
 * one would overwrite it, or wait on a key that never expires (the epoch has no TTL), retrying
 * forever. Ours are the epoch hashes (quorumlock:epoch…) and the companions resourceKeys() makes
 * (companionKey: `{name}:quorumlock:line`, `{tag}:name:quorumlock:line`, or
 * `{tag}:quorumlock:line:name`); names that merely contain the word are the user's.
 */
export function isReservedName(name: string): boolean {
  // Every reserved form contains RESERVED_PREFIX (the companions' suffixes start with it): one
  // scan decides for almost every name (this runs on every acquire).
  if (!name.includes(RESERVED_PREFIX)) return false;
  if (name.startsWith(RESERVED_PREFIX)) return true;
  for (const suffix of COMPANION_SUFFIXES) if (name.endsWith(`:${suffix}`) || name.includes(`}:${suffix}:`)) return true;
  return false;
}

/** How many keys a script gets per resource (resourceKeys; _keys.lua, resourceCount, says the same). */
export const KEYS_PER_RESOURCE = 5;

/** The companion groups of resourceKeys, in order after the lock keys. */
const COMPANIONS = [LINE, LEASES, READERS, HANDOVER] as const;

/**
 * The keys a script gets for `resources`: the lock keys, then their lines, then their leases,
 * then their shared holders, then their handover requests (the scripts find them by position:
 * KEYS_PER_RESOURCE × n keys). The companions share their lock key's hash slot (with the client's
 * `keyPrefix` in front), so all live on one node of a Cluster.
 */
export function resourceKeys(resources: readonly string[], keyPrefix = ''): string[] {
  // Filled in place, group by group: made twice per lock (its acquire and its release).
  const keys = resources.slice();
  for (const suffix of COMPANIONS) for (const key of resources) keys.push(companionKey(key, suffix, keyPrefix));
  return keys;
}

/** The shared holders' keys among resourceKeys(resources) (the fourth group). */
export function readersKeysIn(keys: readonly string[], resourceCount: number): readonly string[] {
  return keys.slice(3 * resourceCount, 4 * resourceCount);
}

/** Unique, not secret: a random prefix per process, then a counter per listener and per waiter. */
const processToken = randomBytes(9).toString('base64url');
let listenerCount = 0;
let waiterCount = 0;

/** A listener (one per Redlock): the channel its waiters are woken on (listenerChannel). */
export function newListener(): string {
  return `${processToken}.${(++listenerCount).toString(36)}`;
}

/**
 * A new waiter id of `listener`'s, `<listener>.<n>`: its listener is the part before the last '.'
 * (waiterChannel). It names one acquire in the lines of waiters, in events and logs, and the lock
 * it wins (`lock.id`).
 */
export function newWaiterId(listener: string): string {
  return `${listener}.${(++waiterCount).toString(36)}`;
}

/**
 * The channel on which members tell a waiter it is first in line after a release, the message
 * being its id: the channel of the waiter's listener (one per Redlock), the id up to its last '.'
 * (newWaiterId makes ids `<listener>.<n>`), without a shared waiter's SHARED_MARK. One subscription
 * per Redlock and member serves all its waiters, and a release still sends one message per member
 * to the one waiter it wakes. _keys.lua (notify) makes the same channel from the same id.
 */
export function waiterChannel(waiterId: string): string {
  const id = isShared(waiterId) ? waiterId.slice(SHARED_MARK.length) : waiterId;
  const dot = id.lastIndexOf('.');
  return listenerChannel(dot === -1 ? id : id.slice(0, dot));
}

/** The channel of a listener's waiters (waiterChannel). */
export const listenerChannel = (listener: string): string => `${RESERVED_PREFIX}waiter:${listener}`;

/**
 * The channel a waiter subscribes to, on its Redlock's subscriber connections, while it waits to
 * be handed the lock: its presence, which a release checks before handing it over (_keys.lua,
 * listening). Nothing is published on it. An exclusive waiter's id has two '.' (newWaiterId), so
 * this is never a listener's channel (one '.') nor a 0.1.0 waiter's (its id had one '.').
 */
export const presenceChannel = (waiterId: string): string => `${RESERVED_PREFIX}waiter:${waiterId}`;

/**
 * Whether an epoch hash (HGETALL) is one trust.lua declared brand new and nothing wrote since,
 * in the lineage `runId`/`replid`: its fields are exactly id, since, run_id, replid and genesis
 * '1' (no fence counter, floor or max). quorumlock/testing keeps such markers across a wipe.
 */
export function isUntouchedGenesis(hash: Record<string, string>, runId: string, replid: string): boolean {
  const names = Object.keys(hash);
  const expected: readonly string[] = ['id', 'since', 'run_id', 'replid', 'evicted', 'genesis'] satisfies (typeof EPOCH_FIELDS)[number][];
  // restart: where the server proved one (_epoch.lua).
  const count = 'restart' in hash ? expected.length + 1 : expected.length;
  return names.length === count && expected.every((name) => name in hash) && hash.genesis === '1' && hash.run_id === runId && hash.replid === replid;
}

/**
 * Permit `index` of the semaphore `name` (src/semaphore): an ordinary lock key, so each permit is
 * an exclusive lock with everything that brings. Under quorumlock's reserved prefix, which no
 * user resource may take (isReservedName), so no user lock collides with a permit; `{name}` is a
 * hash tag, so all permits of one semaphore (and their companions) share one Cluster slot and
 * one member call can read them all. Semaphore names hold no braces (checkSemaphoreName): the
 * tag is then exactly the name, and two semaphores' keys never coincide.
 */
export function permitResource(name: string, index: number): string {
  return `${RESERVED_PREFIX}semaphore:{${name}}:permit:${index}`;
}
