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
 *   `result` (a summary, never the Lock) or `error` added when it settles.
 * - `channels`: the plain events of earlier versions, by name, unchanged.
 */
import { channel, tracingChannel, type Channel, type TracingChannel } from 'node:diagnostics_channel';

/** The plain channels, by name. The message shapes are documented on each. */
export const channels = {
  /** { lockId, resources, ttl } when acquire() or tryAcquire() starts. */
  acquireStart: channel('quorumlock:acquire:start'),
  /** { lockId, resources, ttl, acquired, elapsedMs, attempts, outcome? ('taken' | 'unavailable' | 'quarantined' | 'unfenced' | 'expired' | 'aborted'), fence? } when it ends. */
  acquireEnd: channel('quorumlock:acquire:end'),
  /** { operation ('acquire' | 'extend' | 'release' | 'fence'), member, vote, ms, error? } for each member's answer in each round. */
  vote: channel('quorumlock:vote'),
  /** { lockId, resources, extended, elapsedMs, reason? } after each extend(). */
  extend: channel('quorumlock:extend'),
  /** { lockId, resources, reason ('expired' | 'extension failed') } when a lock is lost. */
  lost: channel('quorumlock:lost'),
  /** { member, quarantinedForMs } when a member's yes did not count (restart quarantine, or not a master). */
  quarantine: channel('quorumlock:quarantine'),
  /** { lockId, resources, freed, elapsedMs } after each release(). */
  release: channel('quorumlock:release'),
} as const;

/** What a traced operation's context holds: set at start, `result` or `error` added by Node. */
export interface TraceContext {
  lockId: string;
  resources: readonly string[];
  ttl?: number;
  result?: unknown;
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
  acquire: tracingChannel<object, TraceContext>('quorumlock:acquire'),
  extend: tracingChannel<object, TraceContext>('quorumlock:extend'),
  release: tracingChannel<object, TraceContext>('quorumlock:release'),
} as const;

export function publish(target: Channel, message: () => object): void {
  if (target.hasSubscribers) target.publish(message());
}

/** TracingChannel.hasSubscribers is Node ≥ 20.13: ask its five channels on older ones. */
function observed(target: TracingChannel<object, TraceContext>): boolean {
  const { start, end, asyncStart, asyncEnd, error } = target;
  return start.hasSubscribers || end.hasSubscribers || asyncStart.hasSubscribers || asyncEnd.hasSubscribers || error.hasSubscribers;
}

/**
 * Runs `operation` traced on `target` when anyone listens; otherwise just runs it, adding no
 * promise of its own (the hot path: acquire and release pass through here). The traced result is
 * `summary(value)`: the caller gets `value` itself, subscribers only the summary.
 */
export function traced<T>(
  target: TracingChannel<object, TraceContext>,
  context: () => TraceContext,
  operation: () => Promise<T>,
  summary: (value: T) => object,
): Promise<T> {
  if (!observed(target)) return operation();
  let value!: T;
  return target.tracePromise(async () => summary((value = await operation())), context()).then(() => value);
}
