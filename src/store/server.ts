/**
 * What a server says about itself in INFO: members and the CLI probes read it here. (The Lua
 * side reads the same fields in src/lua/_epoch.lua; the epoch hash's layout is in keys.ts.)
 */

/** What INFO says that decides whether a member may count. */
export interface ServerFacts {
  /** The process: changes at every start. '' when the engine has none (Dragonfly). */
  runId: string;
  /** The data's replication lineage: changes at every promotion and full resync. */
  replid: string;
  /** 'master', 'slave', 'active-replica' (KeyDB), ... */
  role: string;
  /** 0 = no limit. */
  maxmemory: number;
  maxmemoryPolicy: string;
  version: string | undefined;
}

function field(info: string, name: string): string | undefined {
  const at = info.indexOf(`\n${name}:`);
  if (at < 0) return info.startsWith(`${name}:`) ? info.slice(name.length + 1).split(/\r?\n/, 1)[0] : undefined;
  return info.slice(at + name.length + 2).split(/\r?\n/, 1)[0];
}

export function serverFacts(info: string): ServerFacts {
  return {
    runId: field(info, 'run_id') ?? '',
    replid: field(info, 'master_replid') ?? '',
    role: field(info, 'role') ?? 'unknown',
    maxmemory: Number(field(info, 'maxmemory') ?? 0),
    maxmemoryPolicy: field(info, 'maxmemory_policy') ?? 'noeviction',
    version: field(info, 'redis_version')?.trim(),
  };
}

/**
 * Why a server must not count toward any quorum, or undefined when it may.
 *
 * - Not a plain master: a replica (even a writable one) and a KeyDB active-replica can have
 *   their data replaced by a resync; a failover hands their data, not ours, to the new master.
 * - An eviction policy that can drop lock keys: under maxmemory, `volatile-*` policies evict
 *   keys with a TTL (every lock key has one) and `allkeys-*` any key. Such a member can forget a
 *   held lock without restarting, while its epoch survives, so no quarantine would start.
 */
export function whyNotCounting(facts: ServerFacts): string | undefined {
  if (facts.role !== 'master') return `not a master (role ${facts.role})`;
  if (facts.maxmemory > 0 && facts.maxmemoryPolicy !== 'noeviction') return `may evict lock keys (maxmemory-policy ${facts.maxmemoryPolicy})`;
  return undefined;
}
