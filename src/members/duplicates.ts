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

/**
 * The listener every member's server watch calls after each reading (RedisMember.onServerFacts):
 * marks the duplicates among `members` again. The clients, and the watch each client shares,
 * outlive a Redlock made per job or request: the listener holds the members (what the Redlock and
 * each of its locks vote with) weakly, and tells the watch to drop it once they are collected.
 * Made here, not in the Redlock's constructor, so that no closure of the constructor's keeps them.
 */
export function duplicateCheck(members: WeakRef<readonly RedisMember[]>, logger: Logger): () => boolean {
  return () => {
    const alive = members.deref();
    if (alive) markDuplicates(alive, logger);
    return alive !== undefined;
  };
}
