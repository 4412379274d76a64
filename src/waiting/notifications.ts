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
 *
 * The subscriber is a duplicate of the user's client, so it carries the user's options
 * (enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect, a retryStrategy that gives
 * up...), and it must work, and never reject a promise nobody handles, under any of them. So it
 * sends SUBSCRIBE only on a connection that is ready, and subscribes afresh to every channel still
 * watched each time it becomes ready, instead of ioredis' autoResubscribe, whose SUBSCRIBE promise
 * no one can handle: when the connection drops again before it is answered, that promise rejects
 * (MaxRetriesPerRequestError, "Stream isn't writeable...") as an unhandled rejection, which ends
 * an application.
 */
import type { Redis } from 'ioredis';
import type { Clock } from '../clock/index.js';
import type { RedisMember } from '../members/redis-member.js';
import type { Logger } from '../options/settings.js';
import { quorumOf } from '../quorum/tally.js';
import { waiterChannel } from '../store/keys.js';

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

/** A promise to settle later, already handled: it never surfaces as an unhandled rejection. */
function deferred(): { promise: Promise<void>; resolve(): void; reject(error: Error): void } {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** One member's subscriber connection; `channels` lists what it must be subscribed to now. */
class Subscriber {
  /** Settles with the subscription made when the connection is next ready. */
  #nextReady: ReturnType<typeof deferred> | undefined;

  constructor(
    readonly connection: Redis,
    private readonly channels: () => string[],
    private readonly onFailure: (error: Error) => void,
  ) {
    // Ours instead (see the top of this file). The option is read at each reconnect, so setting
    // it here, before the connection can be ready, is in time. (duplicate({ autoResubscribe:
    // false }) in Member.subscriber would say the same more plainly.)
    (connection.options as { autoResubscribe?: boolean }).autoResubscribe = false;
    connection.on('ready', () => this.#subscribeAll());
    connection.once('end', () => this.#nextReady?.reject(new Error('the subscriber connection ended')));
    // A lazyConnect client would otherwise never connect: we send nothing until it is ready.
    if (connection.status === 'wait') connection.connect().catch(() => undefined);
  }

  /** Resolves once `channel` is subscribed; rejects when that cannot happen on this connection. */
  subscribe(channel: string): Promise<unknown> {
    const { connection } = this;
    if (connection.status === 'end') return Promise.reject(new Error('the subscriber connection ended'));
    // A connection that is not ready would refuse it (enableOfflineQueue: false) or queue it
    // without bound while the member is down: the next 'ready' subscribes to it with the rest.
    if (connection.status !== 'ready') return this.#whenReady();
    // Ready, yet the socket may have just closed: then the next 'ready' is the way.
    return connection.subscribe(channel).catch(() => this.#whenReady());
  }

  /** Fire and forget: a connection that is not ready leaves the channel out when it next subscribes. */
  unsubscribe(channel: string): void {
    if (this.connection.status === 'ready') this.connection.unsubscribe(channel).catch(() => undefined);
  }

  #whenReady(): Promise<void> {
    this.#nextReady ??= deferred();
    return this.#nextReady.promise;
  }

  #subscribeAll(): void {
    const next = this.#nextReady;
    this.#nextReady = undefined;
    const channels = this.channels();
    if (channels.length === 0) return next?.resolve();
    this.connection.subscribe(...channels).then(
      () => next?.resolve(),
      (error: Error) => {
        this.onFailure(error);
        next?.reject(error);
      },
    );
  }
}

export class Notifications {
  readonly #members: readonly RedisMember[];
  readonly #logger: Logger;
  readonly #subscribers: (Subscriber | undefined)[];
  /** Per member: waiter channel → its watch. */
  readonly #watches: Map<string, Watch>[];
  /** Per member: whether we listen for the end of the user's client already (once per member). */
  readonly #endHeard: boolean[];
  #closed = false;

  constructor(members: readonly RedisMember[], logger: Logger) {
    this.#members = members;
    this.#logger = logger;
    this.#subscribers = members.map(() => undefined);
    this.#watches = members.map(() => new Map());
    this.#endHeard = members.map(() => false);
  }

  /** Starts listening for the members' word that `waiterId` is first in line after a release. */
  watch(waiterId: string): Watch {
    const channel = waiterChannel(waiterId);
    const watch = new Watch(this.#members.length, () => {
      this.#watches.forEach((watches, index) => {
        if (!watches.delete(channel)) return;
        // The last wait on a member that is down: stop reconnecting to it now (the next wait
        // makes a new subscriber), so nothing of ours keeps the process alive.
        const subscriber = this.#subscribers[index];
        if (watches.size === 0 && subscriber && subscriber.connection.status !== 'ready') this.#closeSubscriber(index);
        else subscriber?.unsubscribe(channel);
      });
    });
    if (this.#closed) return watch; // after quit(): timed retries only
    const subscribed = this.#members.map((_, index) => {
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

  #subscriber(index: number): Subscriber {
    const existing = this.#subscribers[index];
    if (existing) return existing;
    const member = this.#members[index]!;
    const watches = this.#watches[index]!;
    const connection = member.subscriber(() => !this.#closed && watches.size > 0);
    const subscriber = new Subscriber(
      connection,
      () => [...watches.keys()],
      (error) => this.#logger.debug({ member: member.id, error: error.message }, 'could not subscribe; waiting by timed retries'),
    );
    connection.on('error', (error: Error) => this.#logger.debug({ member: member.id, error: error.message }, 'subscriber connection error'));
    connection.on('message', (channel: string) => watches.get(channel)?.announce(index));
    // A connection that gave up on its own (the user's retryStrategy said stop) is replaced on the
    // next need; the new one subscribes to every channel still watched.
    connection.once('end', () => {
      if (this.#subscribers[index] === subscriber) this.#subscribers[index] = undefined;
    });
    // The user quitting their client ends our duplicate too, so their process can exit.
    if (!this.#endHeard[index]) {
      this.#endHeard[index] = true;
      member.onEnd(() => this.#closeSubscriber(index));
    }
    this.#subscribers[index] = subscriber;
    return subscriber;
  }

  #closeSubscriber(index: number): void {
    const subscriber = this.#subscribers[index];
    this.#subscribers[index] = undefined;
    this.#watches[index]!.clear();
    subscriber?.connection.disconnect();
  }
}
