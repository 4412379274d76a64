/**
 * Events for metrics and tracing, on node:diagnostics_channel. Subscribe with
 * `diagnostics_channel.subscribe('quorumlock:acquire:end', (message) => …)`. A message is built
 * only when its channel has subscribers, so unobserved code pays one boolean check. No message
 * ever carries a lock value (it is the capability to release).
 */
import { channel, type Channel } from 'node:diagnostics_channel';

/** The channels, by name. The message shapes are documented on each. */
export const channels = {
  /** { resources, ttl } when acquire() or tryAcquire() starts. */
  acquireStart: channel('quorumlock:acquire:start'),
  /** { resources, ttl, acquired, elapsedMs, attempts, outcome? ('taken' | 'unavailable' | 'quarantined' | 'unfenced' | 'expired' | 'aborted'), fence? } when it ends. */
  acquireEnd: channel('quorumlock:acquire:end'),
  /** { operation ('acquire' | 'extend' | 'release' | 'fence'), member, vote, ms, error? } for each member's answer in each round. */
  vote: channel('quorumlock:vote'),
  /** { resources, extended, elapsedMs, reason? } after each extend(). */
  extend: channel('quorumlock:extend'),
  /** { resources, reason ('expired' | 'extension failed') } when a lock is lost. */
  lost: channel('quorumlock:lost'),
  /** { member, quarantinedForMs } when a member's yes did not count (restart quarantine, or not a master). */
  quarantine: channel('quorumlock:quarantine'),
  /** { resources, freed, elapsedMs } after each release(). */
  release: channel('quorumlock:release'),
} as const;

export function publish(target: Channel, message: () => object): void {
  if (target.hasSubscribers) target.publish(message());
}
