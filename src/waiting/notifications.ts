/**
 * Waking waiters when a lock is released, instead of making them poll.
 *
 * The release script PUBLISHes, on each member, the id of the waiter now first in line. Each
 * Redlock keeps one subscriber connection per member (a duplicate of the user's client, opened on
 * first need, closed by quit() or when the user's client ends), shared by all its waiters. A
 * waiter wakes when a majority of members have named it: one release wakes one waiter, whatever
 * the length of the line, so the load per release stays bounded. Messages can be lost (a
 * subscriber reconnecting, a lock that expired instead of being released): the timed retry
 * stays as the fallback.
 */
import type { Redis } from 'ioredis';
import type { Clock } from '../clock/index.js';
import type { Member } from '../member.js';
import type { Logger } from '../options.js';
import { quorumOf } from '../quorum/tally.js';
import { releaseChannel } from './line.js';

/** A channel stays subscribed this long after its last waiter left: the next one often comes soon. */
const LINGER_MS = 1_000;

interface Subscription {
  watches: Set<Watch>;
  linger: NodeJS.Timeout | undefined;
}

/** One waiter's ears: which members have named it first in line since the last reset. */
export class Watch {
  readonly #announced = new Set<number>();
  readonly #quorum: number;
  #wake: (() => void) | undefined;

  /** Resolves once the subscriptions are in place (or could not be made) on every member. */
  ready: Promise<unknown> = Promise.resolve();

  constructor(
    readonly waiterId: string,
    memberCount: number,
    private readonly onClose: () => void,
  ) {
    this.#quorum = quorumOf(memberCount);
  }

  get notified(): boolean {
    return this.#announced.size >= this.#quorum;
  }

  /** Called before each attempt: only announcements made after it count toward the next wake. */
  reset(): void {
    this.#announced.clear();
  }

  announce(memberIndex: number): void {
    this.#announced.add(memberIndex);
    if (this.notified) this.#wake?.();
  }

  /** Resolves after `ms`, or as soon as a majority named this waiter; rejects if `signal` aborts. */
  async wait(ms: number, clock: Clock, signal: AbortSignal | undefined): Promise<void> {
    if (this.notified) return;
    const woken = new AbortController();
    this.#wake = () => woken.abort();
    const onAbort = () => woken.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await clock.sleep(ms, woken.signal);
    } catch (error) {
      signal?.throwIfAborted();
      if (!woken.signal.aborted) throw error;
    } finally {
      this.#wake = undefined;
      signal?.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    this.onClose();
  }
}

export class Notifications {
  readonly #members: readonly Member[];
  readonly #logger: Logger;
  readonly #subscribers: (Redis | undefined)[];
  /** Per member: channel → who listens on it. */
  readonly #subscriptions: Map<string, Subscription>[];
  #closed = false;

  constructor(members: readonly Member[], logger: Logger) {
    this.#members = members;
    this.#logger = logger;
    this.#subscribers = members.map(() => undefined);
    this.#subscriptions = members.map(() => new Map());
  }

  /** Starts listening for releases of `resources` on behalf of `waiterId`. */
  watch(resources: readonly string[], waiterId: string): Watch {
    const joined: [number, string][] = [];
    const watch = new Watch(waiterId, this.#members.length, () => {
      for (const [index, channel] of joined) this.#leave(index, channel, watch);
    });
    if (this.#closed) return watch; // after quit(): timed retries only
    const ready: Promise<unknown>[] = [];
    this.#members.forEach((member, index) => {
      for (const resource of resources) {
        const channel = releaseChannel(member.keyPrefix, resource);
        joined.push([index, channel]);
        ready.push(this.#join(index, channel, watch));
      }
    });
    watch.ready = Promise.allSettled(ready);
    return watch;
  }

  /** Closes the subscriber connections this Redlock opened. Waiting still works, by timed retries. */
  async quit(): Promise<void> {
    this.#closed = true;
    this.#subscribers.forEach((_, index) => this.#closeSubscriber(index));
  }

  #join(index: number, channel: string, watch: Watch): Promise<unknown> {
    const subscriptions = this.#subscriptions[index]!;
    const existing = subscriptions.get(channel);
    if (existing) {
      clearTimeout(existing.linger);
      existing.linger = undefined;
      existing.watches.add(watch);
      return Promise.resolve();
    }
    subscriptions.set(channel, { watches: new Set([watch]), linger: undefined });
    return this.#subscriber(index)
      .subscribe(channel)
      .catch((error: Error) => this.#logger.debug({ member: this.#members[index]!.id, error: error.message }, 'could not subscribe; waiting by timed retries on this member'));
  }

  #leave(index: number, channel: string, watch: Watch): void {
    const subscription = this.#subscriptions[index]!.get(channel);
    if (!subscription?.watches.delete(watch) || subscription.watches.size > 0) return;
    subscription.linger = setTimeout(() => {
      this.#subscriptions[index]!.delete(channel);
      this.#subscribers[index]?.unsubscribe(channel).catch(() => undefined);
    }, LINGER_MS);
    subscription.linger.unref();
  }

  #subscriber(index: number): Redis {
    const existing = this.#subscribers[index];
    if (existing) return existing;
    const member = this.#members[index]!;
    const subscriber = member.subscriber();
    subscriber.on('error', (error: Error) => this.#logger.debug({ member: member.id, error: error.message }, 'subscriber connection error'));
    subscriber.on('message', (channel: string, head: string) => {
      const subscription = this.#subscriptions[index]!.get(channel);
      if (!subscription) return;
      for (const watch of subscription.watches) if (watch.waiterId === head) watch.announce(index);
    });
    // The user quitting their client ends our duplicate too, so their process can exit.
    member.onEnd(() => this.#closeSubscriber(index));
    this.#subscribers[index] = subscriber;
    return subscriber;
  }

  #closeSubscriber(index: number): void {
    const subscriber = this.#subscribers[index];
    this.#subscribers[index] = undefined;
    for (const subscription of this.#subscriptions[index]!.values()) clearTimeout(subscription.linger);
    this.#subscriptions[index]!.clear();
    subscriber?.disconnect();
  }
}
