/**
 * What members read from INFO, for each engine: every decision on the feature it needs, not on
 * `redis_version` (src/store/server.ts). The INFO texts below are written after each engine's
 * documented INFO output and public samples, trimmed to the fields that matter plus their
 * neighbours; no Valkey, Dragonfly or KeyDB binary was run here to capture them.
 */
import { describe, expect, it } from 'vitest';
import { canBind } from '../../src/members/binding.js';
import { engineOf, hasRunId, keepsScriptsLocal, serverFacts, serverIdentity, whyNotCounting } from '../../src/store/server.js';

const info = (...lines: string[]) => `${lines.join('\r\n')}\r\n`;

const REDIS_7 = info(
  '# Server',
  'redis_version:7.0.15',
  'redis_git_sha1:00000000',
  'redis_mode:standalone',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'process_id:4242',
  'run_id:0f5c6a3e9e1b4d2c8a7f6e5d4c3b2a1908f7e6d5',
  'tcp_port:6379',
  'executable:/usr/bin/redis-server',
  '',
  '# Memory',
  'used_memory:1001576',
  'maxmemory:0',
  'maxmemory_human:0B',
  'maxmemory_policy:noeviction',
  '',
  '# Replication',
  'role:master',
  'connected_slaves:0',
  'master_failover_state:no-failover',
  'master_replid:7d7a9e3b1c5f2e8a4b6d0c9e1f3a5b7c9d2e4f60',
  'master_replid2:0000000000000000000000000000000000000000',
);

const VALKEY_8 = info(
  '# Server',
  'redis_version:7.2.4',
  'server_name:valkey',
  'valkey_version:8.0.2',
  'redis_git_sha1:00000000',
  'redis_git_dirty:0',
  'redis_build_id:5a0e28e1c3b9d3e1',
  'server_mode:standalone',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'arch_bits:64',
  'multiplexing_api:epoll',
  'process_id:1',
  'process_supervised:no',
  'run_id:4c6f1d3ab0d5c5e0c2b0f4ad2a7b1f2e9c8d7e6f',
  'tcp_port:6379',
  'executable:/usr/local/bin/valkey-server',
  'config_file:',
  '',
  '# Memory',
  'used_memory:968312',
  'maxmemory:0',
  'maxmemory_human:0B',
  'maxmemory_policy:noeviction',
  '',
  '# Replication',
  'role:master',
  'connected_slaves:0',
  'replicas_waiting_psync:0',
  'master_failover_state:no-failover',
  'master_replid:9b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b70',
  'master_replid2:0000000000000000000000000000000000000000',
);

const DRAGONFLY = info(
  '# Server',
  'redis_version:7.4.0',
  'dragonfly_version:df-v1.26.1',
  'redis_mode:standalone',
  'arch_bits:64',
  'os:Linux 6.1.0-18-amd64 x86_64',
  'thread_count:2',
  'multiplexing_api:epoll',
  'tcp_port:6379',
  'uptime_in_seconds:42',
  'uptime_in_days:0',
  '',
  '# Memory',
  'used_memory:1417504',
  'used_memory_human:1.35MiB',
  'maxmemory:3221225472',
  'maxmemory_human:3.00GiB',
  'cache_mode:store',
  'maxmemory_policy:noeviction',
  '',
  '# Replication',
  'role:master',
  'connected_slaves:0',
  'master_replid:2f6a2bb7c8b1c9d1e0f5a9c3b7d2e4f6a8b0c1d2',
);

const KEYDB = info(
  '# Server',
  'redis_version:6.3.4',
  'redis_git_sha1:7e7e5e57',
  'redis_git_dirty:1',
  'redis_mode:standalone',
  'os:Linux 5.15.0-91-generic x86_64',
  'arch_bits:64',
  'multiplexing_api:epoll',
  'process_id:1',
  'run_id:a1b2c3d4e5f60718293a4b5c6d7e8f9011223344',
  'tcp_port:6379',
  'executable:/usr/local/bin/keydb-server',
  'config_file:/etc/keydb/keydb.conf',
  'availability_zone:',
  'features:cluster_mget',
  '',
  '# Memory',
  'used_memory:2296392',
  'maxmemory:0',
  'maxmemory_policy:noeviction',
  '',
  '# Replication',
  'role:master',
  'connected_slaves:0',
  'master_replid:c0ffee00112233445566778899aabbccddeeff00',
  '',
  '# KeyDB',
  'mvcc_depth:0',
);

describe('INFO of each engine', () => {
  it('tells the engines apart by the fields only each writes, and reads its own version', () => {
    expect([REDIS_7, VALKEY_8, DRAGONFLY, KEYDB].map(engineOf)).toEqual(['redis', 'valkey', 'dragonfly', 'keydb']);
    expect(serverFacts(VALKEY_8)).toMatchObject({ engine: 'valkey', version: '7.2.4', engineVersion: '8.0.2' });
    expect(serverFacts(DRAGONFLY)).toMatchObject({ engine: 'dragonfly', version: '7.4.0', engineVersion: '1.26.1' });
    expect(serverFacts(KEYDB)).toMatchObject({ engine: 'keydb', version: '6.3.4', engineVersion: '6.3.4' });
    // KeyDB's own section may be missing from a partial INFO (INFO server): its executable still names it.
    expect(engineOf(KEYDB.slice(0, KEYDB.indexOf('# Memory')))).toBe('keydb');
  });

  it('Dragonfly: no run id, read as "" (never undefined, never a new process per call); its replication id names it', () => {
    const facts = serverFacts(DRAGONFLY);
    expect(facts.runId).toBe('');
    expect(facts.replid).toBe('2f6a2bb7c8b1c9d1e0f5a9c3b7d2e4f6a8b0c1d2');
    expect(hasRunId(facts)).toBe(false);
    // The same text read twice names the same server, so the duplicate check works without a run id.
    expect(serverIdentity(facts)).toBe('replid:2f6a2bb7c8b1c9d1e0f5a9c3b7d2e4f6a8b0c1d2');
    expect(serverIdentity(serverFacts(DRAGONFLY))).toBe(serverIdentity(facts));
    expect(serverIdentity(serverFacts(REDIS_7))).toBe('0f5c6a3e9e1b4d2c8a7f6e5d4c3b2a1908f7e6d5');
    // Its maxmemory is always set; in store mode with noeviction it counts.
    expect(whyNotCounting(facts)).toBeUndefined();
  });

  it('Dragonfly in cache mode may evict any key: it does not count, whatever its policy says', () => {
    const cache = serverFacts(DRAGONFLY.replace('cache_mode:store', 'cache_mode:cache'));
    expect(whyNotCounting(cache)).toMatch(/cache_mode/);
  });

  it('bound scripts: on the features (a run id, scripts kept to the process), not on redis_version', () => {
    expect(keepsScriptsLocal(serverFacts(REDIS_7))).toBe(true);
    expect(keepsScriptsLocal(serverFacts(REDIS_7.replace('redis_version:7.0.15', 'redis_version:6.2.14')))).toBe(false);
    // Valkey pins redis_version at 7.2.4 whatever its own version: it keeps scripts local in all of them.
    expect(keepsScriptsLocal(serverFacts(VALKEY_8))).toBe(true);
    expect(keepsScriptsLocal(serverFacts(VALKEY_8.replace('valkey_version:8.0.2', 'valkey_version:9.0.0')))).toBe(true);
    // KeyDB is a Redis 6 fork (SCRIPT LOAD propagates); Dragonfly has no run id to bind to.
    expect(keepsScriptsLocal(serverFacts(KEYDB))).toBe(false);
    expect([REDIS_7, VALKEY_8, DRAGONFLY, KEYDB].map((text) => canBind(serverFacts(text)))).toEqual([true, true, false, false]);
    // A KeyDB that claims a Redis 7 version still does not bind: the engine decides, not the number.
    expect(canBind(serverFacts(KEYDB.replace('redis_version:6.3.4', 'redis_version:7.0.0')))).toBe(false);
  });

  it('who may count: a KeyDB active-replica never does; an evicting Valkey does not', () => {
    expect(whyNotCounting(serverFacts(KEYDB))).toBeUndefined();
    expect(whyNotCounting(serverFacts(KEYDB.replace('role:master', 'role:active-replica')))).toMatch(/not a master \(role active-replica\)/);
    const evicting = VALKEY_8.replace('maxmemory:0', 'maxmemory:104857600').replace('maxmemory_policy:noeviction', 'maxmemory_policy:volatile-lru');
    expect(whyNotCounting(serverFacts(evicting))).toMatch(/volatile-lru/);
    expect(whyNotCounting(serverFacts(VALKEY_8))).toBeUndefined();
  });

  it('a field on the last line without \\r\\n, or missing altogether, reads cleanly', () => {
    expect(serverFacts('role:master').role).toBe('master');
    expect(serverFacts('# Replication\r\nrole:master\r\nmaster_replid:abc').replid).toBe('abc');
    expect(serverFacts('')).toMatchObject({ runId: '', replid: '', role: 'unknown', maxmemory: 0, engine: 'redis' });
    // No role (a hosted service hiding INFO's replication section): never counts, and says why.
    expect(whyNotCounting(serverFacts(''))).toMatch(/INFO shows no role .*cannot be shown to be a plain master/);
  });
});
