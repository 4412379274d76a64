/**
 * Waking a waiter when the lock is released to it, instead of making it poll.
 *
 * The release script PUBLISHes, on each member, to the channel of the waiter now first in line
 * (and only to it). Each Redlock keeps one subscriber connection per member (a duplicate of the
 * user's client, opened on first need, closed by quit() or when the user's client ends), on which
 * each of its waiting acquires subscribes to its own channel. A waiter wakes when a majority of
 * members have named it. So one release costs one message per member and wakes one waiter,
 * however long the line: the load per release stays bounded. Messages can be lost (a subscriber
 * reconnecting, a lock that expired instead of being released): the timed retry stays as the
 * fallback.
 */
import type { Redis } from 'ioredis';
import type { Clock } from '../clock/index.js';
import type { Member } from '../member.js';
import type { Logger } from '../options.js';
import { quorumOf } from '../quorum/tally.js';
import { waiterChannel } from './line.js';

/** One waiter's ears: which members have named it first in line since the last reset. */
export class Watch {
  readonly #announced = new Set<number>();
  readonly #quorum: number;
  #wake: (() => void) | undefined;
  /** Resolves once the subscriptions are in place (or could not be made) on every member. */
  ready: Promise<unknown> = Promise.resolve();

  constructor(
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

/** Resolves when `count` of the promises resolved; rejects when that can no longer happen. */
function atLeast(count: number, promises: Promise<unknown>[]): Promise<void> {
  return new Promise((resolve, reject) => {
    let resolved = 0;
    let rejected = 0;
    for (const promise of promises) {
      promise.then(
        () => ++resolved === count && resolve(),
        (error: unknown) => promises.length - ++rejected < count && reject(error),
      );
    }
  });
}

export class Notifications {
  readonly #members: readonly Member[];
  readonly #logger: Logger;
  readonly #subscribers: (Redis | undefined)[];
  /** Per member: waiter channel → its watch. */
  readonly #watches: Map<string, Watch>[];
  #closed = false;

  constructor(members: readonly Member[], logger: Logger) {
    this.#members = members;
    this.#logger = logger;
    this.#subscribers = members.map(() => undefined);
    this.#watches = members.map(() => new Map());
  }

  /** Starts listening for the members' word that `waiterId` is first in line after a release. */
  watch(waiterId: string): Watch {
    const channel = waiterChannel(waiterId);
    const watch = new Watch(this.#members.length, () => {
      this.#watches.forEach((watches, index) => {
        if (watches.delete(channel)) this.#subscribers[index]?.unsubscribe(channel).catch(() => undefined);
      });
    });
    if (this.#closed) return watch; // after quit(): timed retries only
    const subscribed = this.#members.map((member, index) => {
      this.#watches[index]!.set(channel, watch);
      return this.#subscriber(index).subscribe(channel);
    });
    // A waiter needs a majority of announcements, so a majority of subscriptions is enough: a
    // member that is down must not hold up every waiter.
    watch.ready = atLeast(quorumOf(subscribed.length), subscribed).catch((error: Error) =>
      this.#logger.debug({ error: error.message }, 'could not subscribe on a majority; waiting by timed retries'),
    );
    return watch;
  }

  /** Closes the subscriber connections this Redlock opened. Waiting still works, by timed retries. */
  async quit(): Promise<void> {
    this.#closed = true;
    this.#subscribers.forEach((_, index) => this.#closeSubscriber(index));
  }

  #subscriber(index: number): Redis {
    const existing = this.#subscribers[index];
    if (existing) return existing;
    const member = this.#members[index]!;
    const subscriber = member.subscriber();
    subscriber.on('error', (error: Error) => this.#logger.debug({ member: member.id, error: error.message }, 'subscriber connection error'));
    subscriber.on('message', (channel: string) => this.#watches[index]!.get(channel)?.announce(index));
    // The user quitting their client ends our duplicate too, so their process can exit.
    member.onEnd(() => this.#closeSubscriber(index));
    this.#subscribers[index] = subscriber;
    return subscriber;
  }

  #closeSubscriber(index: number): void {
    const subscriber = this.#subscribers[index];
    this.#subscribers[index] = undefined;
    this.#watches[index]!.clear();
    subscriber?.disconnect();
  }
}
