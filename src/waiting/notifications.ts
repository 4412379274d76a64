/**
 * Waking a waiter when the lock is released to it, instead of making it poll.
 *
 * The release script PUBLISHes, on each member, the id of the waiter now first in line (and only
 * it; with a stamp when it handed that waiter the lock: quorum/handover.ts), on the channel of that waiter's Redlock (keys.ts, waiterChannel: each Redlock is a
 * listener, and its waiters' ids name it). Each Redlock keeps one subscriber connection per member
 * (a duplicate of the user's client, opened on first need, closed by quit() or when the user's
 * client ends), subscribed to its channel from its first wait on: later waits need no SUBSCRIBE
 * or UNSUBSCRIBE of their own. A waiter wakes when a majority of members have named it. So one
 * release costs one message per member and wakes one waiter, however long the line: the load per
 * release stays bounded. Messages can be lost (a subscriber reconnecting, a lock that expired
 * instead of being released): the timed retry stays as the fallback.
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
import type { Subscription } from '../clients/index.js';
import { onAbort, type Clock } from '../clock/index.js';
import type { RedisMember } from '../members/redis-member.js';
import type { Logger } from '../diagnostics.js';
import { quorumOf } from '../tally.js';
import { listenerChannel, newListener, presenceChannel } from '../store/keys.js';
import { memberStamp, readWaiterMessage } from '../store/protocol.js';

/**
 * One waiter's ears: which members have named it first in line since the last reset, and which
 * of them handed it the lock by the request of the attempt that reset it (quorum/handover.ts).
 */
export class Watch {
  readonly #announced = new Set<number>();
  readonly #handedBy = new Set<number>();
  /** The stamp whose hand-overs count until the next reset; undefined: none count. */
  #counting: string | undefined;
  /** A hand-over was heard that does not count: the waiter must abandon its value. */
  #stray = false;
  readonly #quorum: number;
  readonly #memberCount: number;
  #wake: (() => void) | undefined;
  #ready: Promise<unknown> = Promise.resolve();
  #subscribing = false;
  /**
   * Ends the wait under way that waits for the subscriptions too (wait's untilSubscribed). A field
   * the one reaction to `ready` calls, not a reaction per wait: `ready` may stay pending for as
   * long as a majority refuses or cannot take the SUBSCRIBE, and each wait's would be kept.
   */
  #onSubscribed: (() => void) | undefined;

  constructor(
    memberCount: number,
    private readonly onClose: () => void,
    private readonly onPresent: () => void = () => undefined,
  ) {
    this.#quorum = quorumOf(memberCount);
    this.#memberCount = memberCount;
  }

  /** Resolves once the subscriptions are in place (or could not be made) on a majority of members. */
  get ready(): Promise<unknown> {
    return this.#ready;
  }

  /** Set once, by Notifications.watch, with a promise that never rejects (a rejection counts as settled too). */
  set ready(subscribed: Promise<unknown>) {
    this.#subscribing = true;
    const settled = () => {
      this.#subscribing = false;
      this.#onSubscribed?.();
    };
    this.#ready = subscribed.then(settled, settled);
  }

  /**
   * Whether the subscriptions are still on their way (`ready` has not settled): a release that
   * runs on a member before its SUBSCRIBE does tells nobody there.
   */
  get subscribing(): boolean {
    return this.#subscribing;
  }

  /**
   * From now until close(), a release may hand this waiter the lock: its presence channel is
   * subscribed (Notifications.watch). Called at its first refusal, not before its first attempt:
   * an acquire that is never refused sends no SUBSCRIBE or UNSUBSCRIBE. Again: no effect.
   */
  present(): void {
    this.onPresent();
  }

  /**
   * Time to act: a majority handed this waiter the lock, or named it first in line, unless some
   * handed it over and the members not heard yet may still make that a majority (their messages
   * are on the way: an attempt now would only find the lock set for us, uncounted). That wait
   * lasts a grace at most (wait()'s graceMs): a member that is down never speaks.
   */
  get notified(): boolean {
    if (this.handedOver) return true;
    if (this.#announced.size < this.#quorum) return false;
    const handed = this.#handedBy.size;
    return handed === 0 || this.#graceOver || handed + this.#memberCount - this.#announced.size < this.#quorum;
  }

  /** Whether the grace for the rest of a hand-over majority ran out (notified). */
  #graceOver = false;
  /** Starts that grace, in a wait (wait() sets it). */
  #startGrace: (() => void) | undefined;

  /** Whether a majority handed this waiter the lock by the stamp counted since the last reset. */
  get handedOver(): boolean {
    return this.#handedBy.size >= this.#quorum;
  }

  /** The members that handed it the lock by that stamp. */
  get handedBy(): ReadonlySet<number> {
    return this.#handedBy;
  }

  /**
   * Called before each attempt: only announcements made after it count toward the next wake, and
   * only hand-overs by the request of `stamp` (that attempt's: quorum/handover.ts) count as won.
   */
  reset(stamp?: string): void {
    this.#announced.clear();
    this.#handedBy.clear();
    this.#counting = stamp;
    this.#graceOver = false;
  }

  /** Whether a hand-over that did not count was heard since the last call (and forgets it). */
  takeStray(): boolean {
    const stray = this.#stray;
    this.#stray = false;
    return stray;
  }

  announce(memberIndex: number): void {
    this.#announced.add(memberIndex);
    if (this.notified) this.#wake?.();
    else if (this.#announced.size >= this.#quorum) this.#startGrace?.();
  }

  /**
   * A member handed this waiter the lock, by its request of `stamp`. Counted only for the stamp
   * counted now as sent to this very member (memberStamp) and from a member whose yes counts
   * (`counts`); any other is stray.
   */
  handOver(memberIndex: number, stamp: string, counts: boolean): void {
    if (counts && this.#counting !== undefined && stamp === memberStamp(this.#counting, memberIndex)) this.#handedBy.add(memberIndex);
    else this.#stray = true;
    this.announce(memberIndex);
  }

  /**
   * Resolves after `ms`, or as soon as this waiter is `notified` (at most `graceMs` after a
   * majority named it, while a hand-over majority is still possible), or, `untilSubscribed`, as
   * soon as the subscriptions are in place (at once if they are by now); rejects with the reason
   * if `signal` aborts. Timers and a listener, no AbortController: a contended lock waits here
   * once per attempt, and an aborted controller makes a DOMException (a stack trace) each time.
   */
  wait(ms: number, clock: Clock, signal: AbortSignal | undefined, graceMs = ms, untilSubscribed = false): Promise<void> {
    if (this.notified || (untilSubscribed && !this.#subscribing)) return Promise.resolve();
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let grace: unknown;
      let settled = false;
      let stop: (() => void) | undefined;
      const done = (reason?: unknown) => {
        // Once only: a timer that fired has its turn still to come (setImmediate) after a wake
        // ended the wait, and the fields below may be the next wait's by then.
        if (settled) return;
        settled = true;
        clock.clearTimer(timer);
        if (grace !== undefined) clock.clearTimer(grace);
        this.#wake = undefined;
        this.#startGrace = undefined;
        this.#onSubscribed = undefined;
        stop?.();
        if (reason === undefined) resolve();
        else reject(reason);
      };
      // Timers run before the poll phase reads what arrived meanwhile (docs/internals.md#timers-before-io): the wait
      // ends a turn later, so that messages already on their sockets are heard first.
      const timer = clock.setTimer(() => setImmediate(() => done()), ms);
      this.#wake = () => done();
      this.#startGrace = () => {
        grace ??= clock.setTimer(() => {
          this.#graceOver = true;
          done();
        }, graceMs);
      };
      if (this.#announced.size >= this.#quorum) this.#startGrace();
      if (untilSubscribed) this.#onSubscribed = () => done();
      if (signal && !settled) stop = onAbort(signal, () => done(signal.reason));
    });
  }

  /** Resolves once `ready` has, or after `ms`, whichever comes first (never rejects: `ready` does not). */
  readyWithin(ms: number, clock: Clock): Promise<void> {
    return new Promise((resolve) => {
      const timer = clock.setTimer(resolve, ms);
      void this.ready.then(() => {
        clock.clearTimer(timer);
        resolve();
      });
    });
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

/** One member's subscriber connection, subscribed to `channel` whenever it is ready. */
class Subscriber {
  /** Settles with the subscription made when the connection is next ready. */
  #nextReady: ReturnType<typeof deferred> | undefined;
  /** The subscription on the current connection, once asked for: every later wait reuses it. */
  #subscribed: Promise<unknown> | undefined;
  #listening = false;
  /**
   * Presence channels a SUBSCRIBE on this connection named and no UNSUBSCRIBE has followed yet.
   * ioredis writes again, after a reconnect, a command that was written but not answered when the
   * socket closed, before it says 'ready': so a presence SUBSCRIBE in flight at a drop comes back
   * after the reconnect, though its waiter may have stopped waiting meanwhile (its UNSUBSCRIBE
   * was not sent: the connection was not ready). Each 'ready' unsubscribes those, after the
   * re-sent commands (#subscribeAll).
   */
  readonly #named = new Set<string>();

  constructor(
    readonly connection: Subscription,
    private readonly channel: string,
    /** The presence channels of the waiters that wait to be handed the lock now (keys.ts, presenceChannel). */
    private readonly present: ReadonlySet<string>,
    private readonly onFailure: (error: Error) => void,
    /** Called whenever `listening` changes. */
    private readonly onListening: () => void,
  ) {
    connection.on('ready', () => this.#subscribeAll());
    // A new connection has no subscription: the next 'ready' makes it.
    connection.on('close', () => {
      this.#subscribed = undefined;
      this.listening = false;
    });
    connection.on('end', () => this.#nextReady?.reject(new Error('the subscriber connection ended')));
    // A lazyConnect client would otherwise never connect: we send nothing until it is ready.
    connection.connect();
  }

  /** Subscribed now: messages on the channel reach us. */
  get listening(): boolean {
    return this.#listening;
  }

  set listening(now: boolean) {
    if (now === this.#listening) return;
    this.#listening = now;
    this.onListening();
  }

  /** Resolves once the channel is subscribed; rejects when that cannot happen on this connection. */
  subscribe(): Promise<unknown> {
    const { connection } = this;
    if (connection.state === 'ended') return Promise.reject(new Error('the subscriber connection ended'));
    // A connection that is not ready would refuse it (enableOfflineQueue: false) or queue it
    // without bound while the member is down: the next 'ready' subscribes.
    if (connection.state !== 'ready') return this.#whenReady();
    // Ready, yet the socket may have just closed: then the next 'ready' is the way.
    this.#subscribed ??= connection.subscribe(this.channel).then(
      () => (this.listening = true),
      () => {
        this.#subscribed = undefined;
        return this.#whenReady();
      },
    );
    return this.#subscribed;
  }

  /**
   * Subscribes to (or from) a waiter's presence channel on a ready connection; a connection that
   * is not ready subscribes to those still present when it is (#subscribeAll). Calls on one
   * connection keep their order, so an unsubscribe always follows its subscribe. A failure costs
   * hand-overs only: the release then wakes the waiter instead.
   */
  presence(channel: string, present: boolean): void {
    if (this.connection.state !== 'ready') return;
    if (present) {
      this.#named.add(channel);
      this.connection.subscribe(channel).catch(() => undefined);
    } else {
      this.#named.delete(channel);
      this.connection.unsubscribe(channel).catch(() => undefined);
    }
  }

  #whenReady(): Promise<void> {
    this.#nextReady ??= deferred();
    return this.#nextReady.promise;
  }

  #subscribeAll(): void {
    const next = this.#nextReady;
    this.#nextReady = undefined;
    const gone = [...this.#named].filter((channel) => !this.present.has(channel));
    if (gone.length > 0) this.connection.unsubscribe(...gone).catch(() => undefined);
    this.#named.clear();
    for (const channel of this.present) this.#named.add(channel);
    this.#subscribed = this.connection.subscribe(this.channel, ...this.present).then(
      () => {
        this.listening = true;
        next?.resolve();
      },
      (error: Error) => {
        this.#subscribed = undefined;
        this.onFailure(error);
        next?.reject(error);
      },
    );
  }
}

export class Notifications {
  readonly #members: readonly RedisMember[];
  /** quorumOf(members.length): how many subscriptions make this Redlock's waiters heard. */
  readonly #quorum: number;
  readonly #logger: Logger;
  readonly #subscribers: (Subscriber | undefined)[];
  /** Waiter id → its watch: every member's subscriber announces to the same ones (one channel). */
  readonly #watches = new Map<string, Watch>();
  /** The presence channels of the waiters that ask to be handed the lock, while they wait. */
  readonly #present = new Set<string>();
  /** This Redlock's listener: its waiters' ids start with it (keys.ts, newWaiterId), and its channel is theirs. */
  readonly listener = newListener();
  readonly #channel = listenerChannel(this.listener);
  /** Per member: how to stop listening for the end of the user's client, once we listen (once per member). */
  readonly #endHeard: ((() => void) | undefined)[];
  #closed = false;

  constructor(members: readonly RedisMember[], logger: Logger) {
    this.#members = members;
    this.#quorum = quorumOf(members.length);
    this.#logger = logger;
    this.#subscribers = members.map(() => undefined);
    this.#endHeard = members.map(() => undefined);
  }

  /**
   * Whether a majority of members would tell this Redlock's waiters now: subscribed since an
   * earlier wait (the subscription stays). A waiter may then take its place in line on its first
   * attempt (quorum/wait.ts): a release right after that attempt is heard.
   */
  listening = false;

  /** Counted again whenever a subscriber starts or stops listening, not per acquire. */
  #countListening(): void {
    let listening = 0;
    for (const subscriber of this.#subscribers) if (subscriber?.listening) listening++;
    this.listening = listening >= this.#quorum;
  }

  /**
   * Starts listening for the members' word that `waiterId` (a newWaiterId of `listener`'s) is first
   * in line after a release. `handedOver`: it asks to be handed the lock (quorum/handover.ts), so
   * its presence channel is subscribed from Watch.present() until the watch ends: a release hands
   * over only to a waiter present (_keys.lua, listening).
   */
  watch(waiterId: string, handedOver = false): Watch {
    const presence = handedOver ? presenceChannel(waiterId) : undefined;
    let state: 'absent' | 'present' | 'closed' = 'absent';
    const watch = new Watch(
      this.#members.length,
      () => {
        if (state === 'present' && this.#present.delete(presence!)) for (const subscriber of this.#subscribers) subscriber?.presence(presence!, false);
        state = 'closed';
        if (!this.#watches.delete(waiterId) || this.#watches.size > 0) return;
        // The last wait: stop reconnecting to members that are down now (the next wait makes a new
        // subscriber), so nothing of ours keeps the process alive. A ready one stays subscribed for
        // the next wait.
        this.#subscribers.forEach((subscriber, index) => {
          if (subscriber && subscriber.connection.state !== 'ready') this.#closeSubscriber(index);
        });
      },
      () => {
        if (presence === undefined || state !== 'absent' || this.#closed) return;
        state = 'present';
        this.#present.add(presence);
        // A subscriber not ready yet (a first wait) subscribes to it when ready, with the listener channel.
        for (const subscriber of this.#subscribers) subscriber?.presence(presence, true);
      },
    );
    if (this.#closed) return watch; // after quit(): timed retries only
    this.#watches.set(waiterId, watch);
    // Subscribed on a majority already (an earlier wait): ready as it is. A minority reconnecting
    // subscribes again by itself when ready (Subscriber). Most acquires of a Redlock that waited
    // once come here, contended or not: nothing more to send or to wait for, but a member whose
    // subscriber connection ended (its retryStrategy gave up) gets a new one.
    if (this.listening) {
      this.#members.forEach((_, index) => {
        if (this.#subscribers[index] === undefined)
          this.#subscriber(index)
            ?.subscribe()
            .catch(() => undefined);
      });
      return watch;
    }
    const subscribed = this.#members.map((_, index) => this.#subscriber(index)?.subscribe() ?? Promise.reject(new Error('the client was quit')));
    // A waiter needs a majority of announcements, so a majority of subscriptions is enough: a
    // member that is down must not hold up every waiter.
    watch.ready = atLeast(this.#quorum, subscribed).catch((error: Error) =>
      this.#logger.debug({ error: error.message }, 'could not subscribe on a majority; waiting by timed retries'),
    );
    return watch;
  }

  /** Closes the subscriber connections this Redlock opened. Waiting still works, by timed retries. */
  async quit(): Promise<void> {
    this.#closed = true;
    this.#subscribers.forEach((_, index) => this.#closeSubscriber(index));
    // The user's clients outlive this Redlock: they must not keep it (a Redlock per job that waited).
    for (const stop of this.#endHeard) stop?.();
  }

  /** Member `index`'s subscriber, made on first need; none once the user quit that member's client (a duplicate of it would keep their process alive). */
  #subscriber(index: number): Subscriber | undefined {
    const existing = this.#subscribers[index];
    if (existing) return existing;
    const member = this.#members[index]!;
    if (member.clientEnded) return undefined;
    const watches = this.#watches;
    const connection = member.subscriber(() => !this.#closed && watches.size > 0);
    const subscriber = new Subscriber(
      connection,
      this.#channel,
      this.#present,
      (error) => this.#logger.debug({ member: member.id, error: error.message }, 'could not subscribe; waiting by timed retries'),
      () => this.#countListening(),
    );
    connection.onError((error: Error) => this.#logger.debug({ member: member.id, error: error.message }, 'subscriber connection error'));
    connection.onMessage((channel: string, message: string) => {
      if (channel !== this.#channel) return;
      const { waiterId, handedBy } = readWaiterMessage(message);
      const watch = watches.get(waiterId);
      if (handedBy === undefined) watch?.announce(index);
      else watch?.handOver(index, handedBy, member.countsNow);
    });
    // A connection that gave up on its own (the user's retryStrategy said stop) is replaced on the
    // next need; the new one subscribes to every channel still watched.
    connection.on('end', () => {
      if (this.#subscribers[index] !== subscriber) return;
      this.#subscribers[index] = undefined;
      this.#countListening();
    });
    // The user quitting their client ends our duplicate too, so their process can exit.
    if (!this.#endHeard[index]) this.#endHeard[index] = member.onEnd(() => this.#closeSubscriber(index));
    this.#subscribers[index] = subscriber;
    return subscriber;
  }

  #closeSubscriber(index: number): void {
    const subscriber = this.#subscribers[index];
    this.#subscribers[index] = undefined;
    this.#countListening();
    subscriber?.connection.close();
  }
}
