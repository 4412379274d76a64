/**
 * Events for metrics and tracing, on node:diagnostics_channel. No message ever carries a lock
 * value (it is the capability to extend and release); a lock is named by `lockId`, which is not
 * secret. A message is built only when its channel has subscribers, so unobserved code pays one
 * boolean check per event.
 *
 * Two kinds, both kept:
 * - `tracing`: diagnostics_channel.tracingChannel per operation ('quorumlock:acquire',
 *   'quorumlock:extend', 'quorumlock:release'), whose start/end/asyncStart/asyncEnd/error events
 *   share one context object (so a subscriber matches a start to its end, and async context
 *   flows as with pino and ioredis' own tracing). Context: { lockId, resources, ttl? } at start;
 *   `result` (a summary, never the Lock) or `error` added when it settles. Every call is traced,
 *   a second release() too.
 * - `channels`: the plain events, by name, one message type each (ChannelMessages).
 *
 * The life of one lock on the plain channels, the contract a `locks_held` gauge relies on: one
 * `acquire:end` with `acquired: true`, then exactly one end of holding, whichever comes first:
 * `release` (the first release() call; later calls publish nothing) or `lost` (validity ran out,
 * or an extension found the lock lost; a release() after that publishes nothing). A lock that
 * expires unreleased publishes `lost` when `lost` had subscribers at the lock's acquire (its
 * expiry timer is armed for them then), or when its `signal` was read: otherwise it publishes
 * nothing until release(), which then publishes `release` as usual.
 */
import { channel, subscribe, tracingChannel, unsubscribe, type Channel, type ChannelListener, type TracingChannel } from 'node:diagnostics_channel';
import type { AttemptOutcome, ExtendFailure, LossCause } from './errors.js';
import type { MemberVote } from './errors.js';

/** The subset of a pino logger quorumlock calls. Lock values are never passed to it. */
export interface Logger {
  /** Per-lock progress (acquired, attempt failed, extended, released): built only when wanted (Settings.debugging). */
  debug(object: object, message: string): void;
  /** What an operator should see without asking: a member in its restart quarantine, an election won. */
  info(object: object, message: string): void;
  /** Something is wrong but the call went on: a lost lock, an unconfirmed release, a member that never counts. */
  warn(object: object, message: string): void;
  /** A configuration that defeats the quorum: two members that are one server. */
  error(object: object, message: string): void;
}

const silent = (): void => {};

/** The default logger: says nothing. */
export const silentLogger: Logger = { debug: silent, info: silent, warn: silent, error: silent };

/** 'quorumlock:acquire:start': acquire(), tryAcquire() or using() starts. */
export interface AcquireStartMessage {
  /** Names this acquire and, if it wins, its lock (`lock.id`) in every event. */
  lockId: string;
  /** The resources asked for, all or none. */
  resources: readonly string[];
  /** The ttl asked for, ms. */
  ttl: number;
}

/** 'quorumlock:acquire:end': the acquire ended, won or not. Published once per acquire. */
export interface AcquireEndMessage {
  /** The acquire's `lockId`, as in its `acquire:start`: match the two by it. */
  lockId: string;
  /** The resources asked for, all or none. */
  resources: readonly string[];
  /** The ttl asked for, ms. */
  ttl: number;
  /** true: a Lock with this `lockId` exists now, and will publish exactly one `release` or `lost`. */
  acquired: boolean;
  /** From the call to this end, ms (a failed acquire's last rollback included). */
  elapsedMs: number;
  /** Attempts made (for a won acquire: the one that won included). */
  attempts: number;
  /** Why it was not acquired: the last attempt's outcome, or 'aborted' (the signal). */
  outcome?: AttemptOutcome | 'aborted';
  /** The fencing token, when acquired with `{ fencing: true }`. */
  fence?: number | undefined;
  /** true when a release handed the lock over, with no acquire round of its own (docs/handover.md). */
  handedOver?: true;
}

/** 'quorumlock:vote': one member's answer in one round. A member event: it names no lock. */
export type VoteMessage = MemberVote<string> & {
  /** The kind of round: a lock's (acquire, extend, release, fence), an operator's (trust, restore), an election's (read, announce). */
  operation: 'acquire' | 'extend' | 'release' | 'fence' | 'trust' | 'restore' | 'read' | 'announce';
};

/** 'quorumlock:extend': an extend() round ended (not published for one refused before any round: released, expired, lost before). */
export interface ExtendMessage {
  /** The lock's `lock.id`. */
  lockId: string;
  /** The lock's resources. */
  resources: readonly string[];
  /** A quorum renewed it in time: the lock holds for the new ttl. */
  extended: boolean;
  /** How long the round took, ms. */
  elapsedMs: number;
  /** When not extended: why (see ExtendFailure). */
  reason?: ExtendFailure;
  /** When not extended and the lock is lost: how (see LossCause). */
  lostBecause?: LossCause;
}

/**
 * 'quorumlock:lost': the lock stopped being guaranteed before it was released: one of the two
 * ends of holding (the other is `release`). At most once per lock, never after its release.
 */
export interface LostMessage {
  /** The lock's `lock.id`. */
  lockId: string;
  /** The lock's resources. */
  resources: readonly string[];
  /** 'expired': the validity ran out; 'extension failed': an extension found the lock lost. */
  reason: 'expired' | 'extension failed';
  /** Why, in detail (see LossCause): what a `lost_total{lostBecause}` metric counts by. */
  lostBecause: LossCause;
}

/** 'quorumlock:quarantine': a member's yes did not count (restart quarantine, or not a master). A member event: it names no lock. */
export interface QuarantineMessage {
  /** The member, as host:port/db. */
  member: string;
  /** How long until its yes counts again, ms (very large for a member that never counts). */
  quarantinedForMs: number;
  /** Set when it never counts while its condition lasts (not a master, may evict, a duplicate): why. */
  notCounting?: string | undefined;
}

/**
 * 'quorumlock:release': the first release() of a lock that was not lost before: the other end
 * of holding. At most once per lock; later release() calls publish nothing here (they are traced
 * on the 'quorumlock:release' tracing channel, as every call is).
 */
export interface ReleaseMessage {
  /** The lock's `lock.id`. */
  lockId: string;
  /** The lock's resources. */
  resources: readonly string[];
  /** A quorum confirmed our keys are gone; when false, the rest expire by their TTL. */
  freed: boolean;
  /** How long the release round took, ms. */
  elapsedMs: number;
}

/** Each plain channel's name and the type of its messages. */
export interface ChannelMessages {
  /** acquire(), tryAcquire() or using() starts. */
  'quorumlock:acquire:start': AcquireStartMessage;
  /** The acquire ended, won or not: once per acquire. */
  'quorumlock:acquire:end': AcquireEndMessage;
  /** One member's answer in one round. */
  'quorumlock:vote': VoteMessage;
  /** An extend round ended. */
  'quorumlock:extend': ExtendMessage;
  /** A lock stopped being guaranteed before its release: one of its two ends. */
  'quorumlock:lost': LostMessage;
  /** A member's yes did not count. */
  'quorumlock:quarantine': QuarantineMessage;
  /** A lock's first release(), unless it was lost before: the other end. */
  'quorumlock:release': ReleaseMessage;
}

/** The name of each plain channel: 'quorumlock:acquire:start', 'quorumlock:release', ... */
export type ChannelName = keyof ChannelMessages;

/** A diagnostics_channel Channel whose messages are ChannelMessages[Name]. */
export interface QuorumlockChannel<Name extends ChannelName> extends Channel {
  /** The channel's name, typed: what `subscribeChannel` and `diagnostics_channel.subscribe` take. */
  readonly name: Name;
  /** Publishes a message of this channel's type (quorumlock's own code does; subscribers only read). */
  publish(message: ChannelMessages[Name]): void;
}

function typed<Name extends ChannelName>(name: Name): QuorumlockChannel<Name> {
  return channel(name) as QuorumlockChannel<Name>;
}

/** The plain channels, by name: `channels.release.name` is 'quorumlock:release', and so on. */
export const channels = {
  /** 'quorumlock:acquire:start' (AcquireStartMessage). */
  acquireStart: typed('quorumlock:acquire:start'),
  /** 'quorumlock:acquire:end' (AcquireEndMessage). */
  acquireEnd: typed('quorumlock:acquire:end'),
  /** 'quorumlock:vote' (VoteMessage). */
  vote: typed('quorumlock:vote'),
  /** 'quorumlock:extend' (ExtendMessage). */
  extend: typed('quorumlock:extend'),
  /** 'quorumlock:lost' (LostMessage). */
  lost: typed('quorumlock:lost'),
  /** 'quorumlock:quarantine' (QuarantineMessage). */
  quarantine: typed('quorumlock:quarantine'),
  /** 'quorumlock:release' (ReleaseMessage). */
  release: typed('quorumlock:release'),
} as const;

/**
 * `diagnostics_channel.subscribe(name, listener)` with the listener typed for that channel's
 * messages. Returns the matching unsubscribe.
 *
 * @example
 * const stop = subscribeChannel('quorumlock:lost', (message) => log.warn(message.lostBecause));
 */
export function subscribeChannel<Name extends ChannelName>(name: Name, listener: (message: ChannelMessages[Name]) => void): () => void {
  // Node's listeners take unknown: the channel's publishers are what guarantees the type.
  const untyped = listener as ChannelListener;
  subscribe(name, untyped);
  return () => void unsubscribe(name, untyped);
}

/** What a traced operation's context holds: set at start, `result` or `error` added by Node. */
export interface TraceContext {
  /** The lock (or the acquire that would make it): `lock.id`. */
  lockId: string;
  /** The lock's resources. */
  resources: readonly string[];
  /** The ttl asked for, ms: acquire and extend. */
  ttl?: number;
  /** Set by Node at the end: the operation's summary (see `tracing`), never the Lock itself. */
  result?: unknown;
  /** Set by Node when the operation failed: its error. */
  error?: unknown;
}

/**
 * The tracing channels: subscribe with
 * `diagnostics_channel.tracingChannel('quorumlock:acquire').subscribe({ start, asyncEnd, error })`.
 * acquire's result: { fence, remainingMs } (tryAcquire's null: { taken: true }); extend's:
 * { remainingMs }; release's: { freed, elapsedMs }. A failed operation ends with `error` (a
 * LockAcquireError, ...).
 */
export const tracing = {
  acquire: answering(tracingChannel<object, TraceContext>('quorumlock:acquire')),
  extend: answering(tracingChannel<object, TraceContext>('quorumlock:extend')),
  release: answering(tracingChannel<object, TraceContext>('quorumlock:release')),
} as const;

/**
 * `target`, whose `hasSubscribers` answers on every Node this package supports: it is Node's own
 * from 20.13 on; before, this one asks its five channels. Callers check it before traced(), as
 * they check a plain channel's before publishing, so that nothing is built when nobody listens.
 */
function answering(target: TracingChannel<object, TraceContext>): TracingChannel<object, TraceContext> {
  if (typeof target.hasSubscribers === 'boolean') return target;
  const { start, end, asyncStart, asyncEnd, error } = target;
  const get = () => start.hasSubscribers || end.hasSubscribers || asyncStart.hasSubscribers || asyncEnd.hasSubscribers || error.hasSubscribers;
  return Object.defineProperty(target, 'hasSubscribers', { get });
}

/**
 * Runs `operation` traced on `target`: for when `target.hasSubscribers` (without listeners, call
 * `operation` itself, adding no promise: the hot path). The traced result is `summary(value)`:
 * the caller gets `value` itself, subscribers only the summary.
 */
export function traced<T>(
  target: TracingChannel<object, TraceContext>,
  context: TraceContext,
  operation: () => Promise<T>,
  summary: (value: T) => object,
): Promise<T> {
  let value!: T;
  return target.tracePromise(async () => summary((value = await operation())), context).then(() => value);
}
