/**
 * When a member's server last answered on the connection our calls are written on: the
 * library's ready check at a (re)connect, the INFO of its server watch (watch.ts) or an epoch read
 * (epochs.ts). A new Redlock's first call on a member waits for the connection, then for the
 * epoch its write is bound to, before the call itself is written; on a busy machine or a slow
 * link those round trips can take longer than nodeTimeout together while each answer comes in
 * time. The round counts a member's silence from its latest sign of life (quorum/round.ts,
 * #silentAt), so such a member is not timed out; one that answers nothing (down, paused, a link
 * cut) is, as before.
 *
 * Only answers count. 'ready' counts only where the library fires it after a reply of the server
 * (Connection.readyIsAnswer: ioredis with its ready check on, the default): without one, ioredis
 * fires it having heard nothing, and a front end that accepts connections and closes them (a
 * proxy whose server is gone) would make one on every reconnect. Only for a member whose calls
 * share one socket, in order (a server, not a Cluster): there an answer while our call is pending
 * comes from a call written before ours, or from the connection our call is written on.
 * One per client, shared by every Redlock on it; each Redlock reads it on its own clock.
 */
import type { Connection } from '../clients/index.js';
import type { Clock } from '../clock/index.js';

export class Hearing {
  /**
   * Per clock that listens (the system clock, or each Redlock's own: options.clock), when this
   * client's server last showed life, on that clock. The clocks are held weakly: a Redlock made
   * with a clock of its own, per job, must not stay alive with the client (one entry each).
   */
  readonly #at: { clock: WeakRef<Clock>; at: number }[] = [];

  /** Records the time of each later sign of life on `clock` too. */
  listen(clock: Clock): void {
    if (this.#entry(clock) === undefined) this.#at.push({ clock: new WeakRef(clock), at: -Infinity });
  }

  /** The server showed life now. */
  heard(): void {
    for (let i = this.#at.length - 1; i >= 0; i--) {
      const entry = this.#at[i]!;
      const clock = entry.clock.deref();
      if (clock) entry.at = clock.now();
      else this.#at.splice(i, 1);
    }
  }

  /** The latest sign of life on `clock` (-Infinity: none since it listens). */
  lastAt(clock: Clock): number {
    return this.#entry(clock)?.at ?? -Infinity;
  }

  #entry(clock: Clock): { at: number } | undefined {
    // A loop, not find(): a round reads this per pending member, and find's callback is a closure per read.
    for (const entry of this.#at) if (entry.clock.deref() === clock) return entry;
    return undefined;
  }
}

const hearings = new WeakMap<object, Hearing>();

export function hearingOf(client: Connection): Hearing {
  let hearing = hearings.get(client);
  if (hearing === undefined) {
    const made = new Hearing();
    hearings.set(client, (hearing = made));
    if (client.readyIsAnswer) client.on('ready', () => made.heard());
  }
  return hearing;
}
