/**
 * The line of waiters kept beside each lock key on every member: who is next, in arrival order.
 *
 * Why a ticket chosen by the client: every member must order the same waiters the same way. If
 * each member ordered by its own arrival time, two waiters could each be first on half the
 * members and neither could ever reach a quorum. With one ticket per acquire call, written to
 * every member, the order is total and identical everywhere, also across the resources of a
 * multi-resource lock (so two such locks can never wait on each other in a cycle). Tickets come
 * from each client's wall clock: clocks that disagree make the order less fair, never unsafe.
 */
import { randomBytes } from 'node:crypto';
import { allSlotTags, companionKey, slotOf, tagOfSlot } from '../slots.js';

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
 * The keys a script gets for `resources`: the lock keys, then their lines, then their leases.
 * Line and lease keys share their lock key's hash slot (with the client's `keyPrefix` in front),
 * so all live on one node of a Cluster.
 */
export function lineKeys(resources: readonly string[], keyPrefix = ''): string[] {
  const companions = (suffix: string) => resources.map((key) => companionKey(key, suffix, keyPrefix));
  return [...resources, ...companions('quorumlock:line'), ...companions('quorumlock:leases')];
}

/** The keys of the acquire script: lineKeys() and the member's epoch hash (see Member for clusters). */
export function acquireKeys(resources: readonly string[]): string[] {
  return [...lineKeys(resources), EPOCH_KEY];
}

/**
 * The channel on which members tell one waiter it is first in line after a release. One channel
 * per waiter: a release sends one message per member, however many wait.
 */
export function waiterChannel(waiterId: string): string {
  return `quorumlock:waiter:${waiterId}`;
}

export interface Waiter {
  /** Random, not secret: it only names a place in line. */
  id: string;
  /** Arrival order: lower goes first. */
  ticket: number;
  /** How long a refused caller keeps its place without coming back; 0 = does not join the line. */
  leaseMs: number;
}

/** Unique, not secret: a random prefix per process and a counter. */
const processToken = randomBytes(9).toString('base64url');
let waiterCount = 0;

export function newWaiterId(): string {
  return `${processToken}.${(++waiterCount).toString(36)}`;
}

/**
 * A waiter comes back at least every retryDelay + retryJitter (plus a round): three of those, and
 * never under a second, before its place is given up.
 */
export function leaseFor(policy: { retryDelay: number; retryJitter: number }, nodeTimeout: number): number {
  return Math.ceil(Math.max(1_000, 3 * (policy.retryDelay + policy.retryJitter + nodeTimeout)));
}
