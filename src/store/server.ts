/**
 * What a server says about itself in INFO: members and the CLI probes read it here. (The Lua
 * side reads the same fields in src/lua/_epoch.lua; the epoch hash's layout is in keys.ts.)
 *
 * Every decision is made on the feature it needs, read from the fields that show it, never on
 * `redis_version` alone: Valkey pins `redis_version:7.2.4` (its own is `valkey_version`),
 * Dragonfly says `redis_version:7.4.0` (its own is `dragonfly_version`) and has no `run_id`,
 * and KeyDB says `redis_version:6.3.x` and names itself only in its `# KeyDB` section
 * (`mvcc_depth`) or its executable. test/unit/server-facts.test.ts feeds INFO of each engine.
 */

/** The server program, as far as INFO tells it apart. */
export type Engine = 'redis' | 'valkey' | 'dragonfly' | 'keydb';

/** What INFO says that decides whether a member may count. */
export interface ServerFacts {
  /**
   * The process: changes at every start. '' when the engine has none (Dragonfly): then the
   * epoch's lineage is the replication id alone (src/lua/_epoch.lua reads '' the same way on
   * every call, so a missing run id is never mistaken for a new process).
   */
  runId: string;
  /** The data's replication lineage: changes at every promotion and full resync. */
  replid: string;
  /** 'master', 'slave', 'active-replica' (KeyDB), ... */
  role: string;
  /** 0 = no limit. */
  maxmemory: number;
  maxmemoryPolicy: string;
  /** `redis_version`: the Redis version the server claims compatibility with (not its own). */
  version: string | undefined;
  /** Which program answers (absent: a stand-in built by hand, read as Redis). */
  engine?: Engine;
  /** The engine's own version (`valkey_version`, `dragonfly_version` without `df-v`, or `redis_version`). */
  engineVersion?: string | undefined;
  /**
   * Dragonfly's `cache_mode:cache`: it evicts keys (any key, TTL or not) when memory runs short,
   * whatever `maxmemory_policy` says.
   */
  cacheMode?: boolean;
}

function field(info: string, name: string): string | undefined {
  const at = info.indexOf(`\n${name}:`);
  if (at < 0) return info.startsWith(`${name}:`) ? info.slice(name.length + 1).split(/\r?\n/, 1)[0] : undefined;
  return info.slice(at + name.length + 2).split(/\r?\n/, 1)[0];
}

/** Which engine wrote `info` (whole INFO, or the sections read), by the fields only it writes. */
export function engineOf(info: string): Engine {
  if (field(info, 'dragonfly_version') !== undefined) return 'dragonfly';
  if (field(info, 'valkey_version') !== undefined || field(info, 'server_name')?.trim().toLowerCase() === 'valkey') return 'valkey';
  if (field(info, 'mvcc_depth') !== undefined || /keydb/i.test(field(info, 'executable') ?? '')) return 'keydb';
  return 'redis';
}

export function serverFacts(info: string): ServerFacts {
  const engine = engineOf(info);
  const version = field(info, 'redis_version')?.trim();
  const own = engine === 'valkey' ? field(info, 'valkey_version') : engine === 'dragonfly' ? field(info, 'dragonfly_version')?.replace(/^df-v/, '') : undefined;
  return {
    runId: (field(info, 'run_id') ?? '').trim(),
    replid: (field(info, 'master_replid') ?? '').trim(),
    role: field(info, 'role')?.trim() ?? 'unknown',
    maxmemory: Number(field(info, 'maxmemory') ?? 0) || 0,
    maxmemoryPolicy: field(info, 'maxmemory_policy')?.trim() ?? 'noeviction',
    version,
    engine,
    engineVersion: own?.trim() ?? version,
    cacheMode: field(info, 'cache_mode')?.trim() === 'cache',
  };
}

/** A process id that names this one server process: 40 hex digits (Redis, Valkey, KeyDB). */
export function hasRunId(facts: ServerFacts): boolean {
  return /^[0-9a-f]{40}$/.test(facts.runId);
}

/**
 * What names this server for the duplicate check (two members that are one server): its run id,
 * or where it has none (Dragonfly) its replication id, which two masters never share (a
 * promotion gives the promoted one a new id); undefined when neither is known.
 */
export function serverIdentity(facts: ServerFacts): string | undefined {
  if (facts.runId !== '') return facts.runId;
  return facts.replid !== '' ? `replid:${facts.replid}` : undefined;
}

/**
 * Whether a script loaded into this server stays in its own process (members/binding.ts needs
 * it): the script cache is not replicated and SCRIPT LOAD is not propagated to replicas or the
 * AOF. Redis ≥ 7 (scripts replicate as their effects only) and every Valkey (forked from Redis
 * 7.2) keep them; Redis < 7 and KeyDB (a fork of Redis 6) propagate SCRIPT LOAD; Dragonfly's
 * cache is its own design, not argued here, and it has no run id to bind to anyway.
 */
export function keepsScriptsLocal(facts: ServerFacts): boolean {
  switch (facts.engine ?? 'redis') {
    case 'valkey':
      return true;
    case 'redis':
      return Number(facts.version?.split('.')[0]) >= 7;
    default:
      return false;
  }
}

/**
 * Why a server must not count toward any quorum, or undefined when it may.
 *
 * - Not a plain master: a replica (even a writable one) and a KeyDB active-replica can have
 *   their data replaced by a resync; a failover hands their data, not ours, to the new master.
 * - An eviction policy that can drop lock keys: under maxmemory, `volatile-*` policies evict
 *   keys with a TTL (every lock key has one) and `allkeys-*` any key; Dragonfly in cache mode
 *   evicts whatever its policy says. Such a member can forget a held lock without restarting,
 *   while its epoch survives, so no quarantine would start.
 */
export function whyNotCounting(facts: ServerFacts): string | undefined {
  // No role at all (serverFacts reads it as 'unknown'): hosted services that hide INFO's
  // replication section answer so. The scripts refuse such a server too (_epoch.lua), so no trust
  // or wait can make it count: say that, not "not a master", which reads as a misconfiguration.
  if (facts.role === 'unknown')
    return "its INFO shows no role (as hosted Redis services that hide INFO's replication section answer), so it cannot be shown to be a plain master";
  if (facts.role !== 'master') return `not a master (role ${facts.role})`;
  if (facts.cacheMode) return 'may evict lock keys (Dragonfly cache_mode)';
  if (facts.maxmemory > 0 && facts.maxmemoryPolicy !== 'noeviction') return `may evict lock keys (maxmemory-policy ${facts.maxmemoryPolicy})`;
  return undefined;
}
