/**
 * Handing the lock over inside the release (docs/handover.md).
 *
 * A contended handoff used to cost the holder's release, a notification of the next waiter, and
 * then that waiter's own acquire round. Now a waiter in line sends, with each attempt, a handover
 * request: the value a release may set for it. The release script that frees the resource sets
 * that value for the head of the line, where the head's own acquire would have been granted and
 * counted at that moment (_wake.lua, handOver), and tells it "handed, by your request of attempt
 * k". A waiter told so by a majority holds the lock: no acquire round at all.
 *
 * Why that is as safe as winning attempt k's round:
 * - Each hand-over it counts names attempt k, its latest, and a member only hands over by the
 *   request that attempt k's own run wrote there. So the key was set after that run, and so after
 *   attempt k's start (`startedAt`, read before anything was sent): it lives (below) at least ttl
 *   from that start, exactly as a key attempt k set would. The validity is therefore computed as
 *   for attempt k's round, ttl − elapsed since its start − drift, and checked after the count.
 * - A member hands over only what it would have granted then: a free resource (no key, no live
 *   reader) with the waiter at the head of its line, and, with the quarantine on, only a plain
 *   master whose epoch is past it. A member whose yes does not count for other reasons (it may
 *   evict, is another member's server, its facts are not read yet) is not counted: countsNow.
 * - Messages are counted only while the waiter waits after attempt k, and only with the stamp
 *   attempt k sent to that very member (memberStamp: pub/sub ignores the database, so members
 *   that share a server hear each other). A message for an earlier attempt, for another member,
 *   or from a member that does not count is not counted; it, too few hand-overs, or one the
 *   next attempt finds (Refusal.handedOver) make the waiter abandon the value between attempts.
 * - The key lives the ttl from the hand-over, which comes after attempt k's run: so it lives at
 *   least ttl from attempt k's start. A member hands over only to a waiter that still waits: its
 *   place in line is live and its presence channel has a subscriber there (the Redlock holds it
 *   from the first refusal to the end of the wait: waiting/notifications.ts, Watch.present), so one that stopped waiting is handed
 *   nothing (docs/handover.md, "A waiter that stops in line").
 * - Nothing deletes a value the waiter may still count on. Its attempts use values of their own
 *   (a rollback deletes only those); a handover value is deleted only by its holder's release, by
 *   the waiter's leave when it gives up (it counts nothing after that), and by `takeBack` once
 *   the waiter abandoned it. An abandoned value is never counted again: a new request carries a
 *   new value. So a late copy of any of these calls (re-sent after a reconnect, or delivered late
 *   by a held link: docs/internals.md#re-send-after-reconnect) only ever deletes a value that nobody counts on.
 * - A re-sent release or leave that runs in a new process (a restart, a failover) hands over only
 *   if that process passes the same checks itself, in its own epoch.
 */
import { newLockValue } from './attempt.js';
import type { HandoverRequest } from '../store/protocol.js';

/** How many abandoned values a waiter takes back with each later call (a ring: the oldest then expire by ttl). */
const ABANDONED_KEPT = 8;

/**
 * Whether an acquire asks to be handed the lock: a waiter for one resource (a release frees one
 * resource at a time), exclusive (readers enter together, and are told) and unfenced (a fenced
 * lock needs its fence round after the win anyway). Any ttl: the key is set for the whole ttl.
 */
export function handsOver(resources: readonly string[], policy: { shared?: boolean | undefined; fencing: boolean }): boolean {
  return resources.length === 1 && !policy.shared && !policy.fencing;
}

/** One acquire call's handover value, and those it abandoned. */
export class Handover {
  #value = newLockValue();
  readonly #abandoned: string[] = [];
  /** Whether any request went out: until then no member can hold a value of ours. */
  #requested = false;

  /** The value a release sets for this waiter now. */
  get value(): string {
    return this.#value;
  }

  /** The request attempt `attempt` sends. */
  request(attempt: number): HandoverRequest {
    this.#requested = true;
    return { value: this.#value, stamp: stampOf(attempt), abandoned: this.#abandoned.join(' ') };
  }

  /**
   * Gives up the current value: a member may hold it without the waiter counting that, so it is
   * taken back by the waiter's next calls, and the next request carries a new one.
   */
  abandon(): void {
    if (!this.#requested) return;
    this.#abandoned.push(this.#value);
    if (this.#abandoned.length > ABANDONED_KEPT) this.#abandoned.shift();
    this.#value = newLockValue();
  }

  /**
   * What the holder's release (or, without `lockValue`, the leave of a waiter that gives up) takes
   * back: every value abandoned, and the current one too unless it is the lock's own value (won by
   * a hand-over): a member may have handed it over late.
   */
  leftover(lockValue?: string): string | undefined {
    if (!this.#requested) return undefined;
    return (lockValue === this.#value ? this.#abandoned : [...this.#abandoned, this.#value]).join(' ');
  }
}

/** The stamp of attempt `attempt`'s request: what a hand-over by it names (protocol.ts, readWaiterMessage). */
export const stampOf = (attempt: number): string => attempt.toString(36);
