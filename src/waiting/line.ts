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
import type { Waiter } from '../store/protocol.js';

export type { Waiter };

/**
 * A waiter comes back at least every retryDelay + retryJitter (plus a round): three of those, and
 * never under a second, before its place is given up.
 */
export function leaseFor(policy: { retryDelay: number; retryJitter: number }, nodeTimeout: number): number {
  return Math.ceil(Math.max(1_000, 3 * (policy.retryDelay + policy.retryJitter + nodeTimeout)));
}

/**
 * Whether a waiter keeps its places in line, turn by turn (the waiter for several resources).
 *
 * A waiter for one resource always keeps its place: it holds back only the resource it waits
 * for, and that one is held (or about to be handed to it) anyway. A waiter for several resources
 * is different: at the head of the line of a free r1 while it waits out a holder of r2, its place
 * keeps r1 from everyone who came later, for as long as r2 is held. Never keeping such places
 * would starve it instead: while some resource of its set is always held by someone, it would
 * never find them all free at once.
 *
 * So it takes turns: it keeps its places for one turn, then steps out of every line for as long
 * (a free resource goes to whoever is next, at once: leaving wakes the new head), then takes its
 * places again with its original ticket, so ahead of everyone who came after it. Each turn in line
 * is twice the one before, up to `longestMs` (maxLockTtl: every lock in use expires within it
 * unless extended). A free resource is thus kept back by such a waiter at most one turn at a
 * time and about half of the time, and the waiter still wins: during a turn in line nobody new
 * can take its resources, so once a turn outlasts the holds that were running at its start, all
 * of them are free for it. The order of tickets is never changed, so two waiters still cannot
 * wait on each other in a cycle.
 */
export class LineTurns {
  readonly #several: boolean;
  readonly #longestMs: number;
  #turnMs: number;
  #inLine = true;
  /** When the current turn (in line or out) ends; undefined until the waiter first joins. */
  #endsAt: number | undefined;

  constructor(resourceCount: number, firstTurnMs: number, longestMs: number) {
    this.#several = resourceCount > 1;
    this.#turnMs = firstTurnMs;
    this.#longestMs = Math.max(firstTurnMs, longestMs);
  }

  /** Whether an attempt made at `now` keeps (or takes) places in line. The first call starts the first turn. */
  inLine(now: number): boolean {
    if (!this.#several) return true;
    if (this.#endsAt === undefined) this.#endsAt = now + this.#turnMs;
    if (now >= this.#endsAt) {
      // The next turn starts when the caller comes back (its waits end at the change, see
      // msUntilChange): out for as long as the turn just kept, back in for twice as long.
      this.#inLine = !this.#inLine;
      if (this.#inLine) this.#turnMs = Math.min(2 * this.#turnMs, this.#longestMs);
      this.#endsAt = now + this.#turnMs;
    }
    return this.#inLine;
  }

  /** Milliseconds from `now` until the turn changes (Infinity: it never does, or has not started). */
  msUntilChange(now: number): number {
    if (!this.#several || this.#endsAt === undefined) return Infinity;
    return Math.max(0, this.#endsAt - now);
  }
}
