/**
 * When a member's server last showed that it works through our calls: its connection became
 * ready, or it answered an epoch read. A new Redlock's first call on a member waits for both (the
 * connection, then the epoch its write is bound to: epochs.ts) before the call itself is written,
 * and on a busy machine those round trips can take longer than nodeTimeout together while each
 * answer comes in time. The round counts a member's silence from its latest sign of life
 * (quorum/round.ts, #silentAt), so such a member is not timed out; one that shows none (down,
 * paused, a link cut) is, as before.
 *
 * Only for a member whose calls share one socket, in order (a server, not a Cluster): there a
 * sign of life while our call is pending comes from a call written before ours, or from the
 * connection our call is written on. One per client, shared by every Redlock on it; each
 * Redlock reads it on its own clock.
 */
import type { Connection } from '../clients/index.js';
import type { Clock } from '../clock/index.js';

export class Hearing {
  /** Per clock that listens, when this client's server last showed life, on that clock. */
  readonly #at = new Map<Clock, number>();

  /** Records the time of each later sign of life on `clock` too. */
  listen(clock: Clock): void {
    if (!this.#at.has(clock)) this.#at.set(clock, -Infinity);
  }

  /** The server showed life now. */
  heard(): void {
    for (const clock of this.#at.keys()) this.#at.set(clock, clock.now());
  }

  /** The latest sign of life on `clock` (-Infinity: none since it listens). */
  lastAt(clock: Clock): number {
    return this.#at.get(clock) ?? -Infinity;
  }
}

const hearings = new WeakMap<object, Hearing>();

export function hearingOf(client: Connection): Hearing {
  let hearing = hearings.get(client);
  if (hearing === undefined) {
    const made = new Hearing();
    hearings.set(client, (hearing = made));
    client.on('ready', () => made.heard());
  }
  return hearing;
}
