/**
 * Two members that are the same server (one run id, however each is addressed: 127.0.0.1 and
 * localhost, two DNS names, two dbs of one server) are one failure domain: counting both would
 * let one server's votes stand in for two. The later one in the list does not count.
 */
import type { Logger } from '../diagnostics.js';
import type { RedisMember } from './redis-member.js';

/** Marks each of `members` that is an earlier one's server under another address (RedisMember.markDuplicate). */
export function markDuplicates(members: readonly RedisMember[], logger: Logger): void {
  const first = new Map<string, string>();
  for (const member of members) {
    const server = member.serverId;
    const earlier = server === undefined ? undefined : first.get(server);
    if (server !== undefined && earlier === undefined) first.set(server, member.id);
    if (earlier !== undefined && member.notCounting === undefined)
      logger.error({ member: member.id, sameAs: earlier }, 'two members are the same server: the later one will not count');
    member.markDuplicate(earlier);
  }
}

/** What a Redlock's locks and rounds share (its context): the members they vote with, and the logger. */
export interface DuplicateContext {
  readonly members: readonly RedisMember[];
  readonly settings: { readonly logger: Logger };
}

/** Drops a collected context's listeners from the watches (the clients' watches outlive it). */
const unwatched = new FinalizationRegistry<() => void>((stopListening) => stopListening());

/**
 * Marks the duplicates among `context.members` now and again after every reading of a member's
 * server (RedisMember.onServerFacts), for as long as anything votes with them: the Redlock, or a
 * lock, election or semaphore it made (each holds `context`). The clients, and the server watch
 * each client shares, outlive a Redlock made per job or request: the listener holds `context`
 * weakly, and once it is collected the registry drops the listener from the watches (a reading
 * in between finds nothing to mark). Made here, not in the Redlock's constructor, so that no
 * closure of the constructor's keeps the context alive.
 */
export function watchDuplicates(context: DuplicateContext): void {
  const ref = new WeakRef(context);
  const check = () => {
    const alive = ref.deref();
    if (alive) markDuplicates(alive.members, alive.settings.logger);
  };
  const stops = context.members.map((member) => member.onServerFacts(check));
  unwatched.register(context, () => {
    for (const stop of stops) stop();
  });
  markDuplicates(context.members, context.settings.logger);
}
