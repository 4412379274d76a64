/**
 * Real Redis Cluster and Redis Sentinel topologies for tests, built on the process backend: the
 * nodes are ordinary ProcessMasters, so kill/pause/resume/restart and the exit cleanup work as for
 * plain masters. Process backend only (local redis-server and redis-cli).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { onFreePort } from './common.js';
import { freePort, MissingServerError, processBackend, spawnUntilReady, waitForExit } from './process.js';
import type { Master, MasterSet } from './types.js';

/** redis-cli, for `--cluster create`: QUORUMLOCK_REDIS_CLI, or redis-cli from PATH. */
const redisCliBinary = (): string => process.env.QUORUMLOCK_REDIS_CLI ?? 'redis-cli';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Calls `check` every 100 ms until it returns true, for at most `timeoutMs`. Anything else it
 * returns (or throws) is the reason it is not there yet, quoted in the timeout error.
 */
async function poll(what: string, timeoutMs: number, check: () => Promise<true | string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let reason: string;
  for (;;) {
    try {
      const result = await check();
      if (result === true) return;
      reason = result;
    } catch (error) {
      reason = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) throw new Error(`${what}: not after ${timeoutMs} ms (${reason})`);
    await sleep(100);
  }
}

/**
 * One admin command on a fresh connection, closed afterwards. No retries and short timeouts, so a
 * poll of a dead node fails at once instead of queueing behind ioredis' reconnects.
 */
async function admin(port: number, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 1000,
  });
  client.on('error', () => {}); // the rejected call reports it
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

/** `count` distinct ports, free a moment ago. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

// ---------------------------------------------------------------------------------------------
// Cluster

export interface TestCluster {
  /**
   * The cluster's master nodes, as created (their roles as of startCluster(); a failover swaps
   * them, these lists do not follow: ask masterOfSlot()/replicaOf()). kill/pause/resume/restart
   * keep the port; restart() keeps nodes.conf, so the node rejoins with its slots, but empty (a
   * master whose slots went to its replica meanwhile rejoins as that replica's replica).
   */
  nodes: Master[];
  /**
   * The replicas, as created (empty without `replicasPerMaster`), in no particular order: redis-cli
   * decides which node replicates which master; replicaOf() says.
   */
  replicas: Master[];
  /** For `new Cluster(startupNodes)` of ioredis: every node, masters first. */
  startupNodes: { host: string; port: number }[];
  /**
   * Waits (poll, 10 s max) until every running, unpaused node says cluster_state:ok, sees every
   * other such node connected and not failing, and agrees with them on the master of every slot;
   * and every such replica whose master is among them has its replication link up. The
   * not-failing part matters after restart(): the others keep a master with slots flagged `fail`
   * until it has been back for a while. It does not wait for a failover: a replica of a killed or paused master
   * is not asked to be in sync.
   */
  waitForOk(): Promise<void>;
  /** The node that serves `slot` as master now (CLUSTER SLOTS, asked of a running, unpaused node). */
  masterOfSlot(slot: number): Promise<Master>;
  /** A running, unpaused node that says (ROLE) it replicates the master on `masterPort`; rejects if none does. */
  replicaOf(masterPort: number): Promise<Master>;
  stop(): Promise<void>;
}

/** ROLE: ['master', offset, replicas] or ['slave', masterHost, masterPort, linkState, offset]. */
async function roleOf(port: number): Promise<{ role: 'master' } | { role: 'slave'; masterPort: number; link: string }> {
  const reply = (await admin(port, 'ROLE')) as unknown[];
  if (reply[0] === 'slave') return { role: 'slave', masterPort: Number(reply[2]), link: String(reply[3]) };
  if (reply[0] === 'master') return { role: 'master' };
  throw new Error(`${port}: unexpected ROLE ${JSON.stringify(reply)}`);
}

/** "from-to:masterPort" for every slot range of CLUSTER SLOTS, sorted: one node's view of who owns what. */
async function slotMap(port: number): Promise<string> {
  const shards = (await admin(port, 'CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
  return shards
    .map(([from, to, [, master]]) => `${from}-${to}:${master}`)
    .sort()
    .join(' ');
}

/** Why the healthy nodes do not agree yet, or true when they do. */
async function clusterHealth(healthy: Master[]): Promise<true | string> {
  const ports = new Set(healthy.map((node) => node.port));
  let agreed: { port: number; view: string } | undefined;
  for (const node of healthy) {
    const info = String(await admin(node.port, 'CLUSTER', 'INFO'));
    if (!info.includes('cluster_state:ok')) return `${node.port}: ${/cluster_state:\w+/.exec(info)?.[0]}`;
    // CLUSTER NODES lines: <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slots...>
    const lines = String(await admin(node.port, 'CLUSTER', 'NODES'))
      .trim()
      .split('\n')
      .map((line) => {
        const [id = '', address = '', flags = '', master = '', , , , link = ''] = line.split(' ');
        return { id, port: Number(/:(\d+)@/.exec(address)?.[1]), flags: flags.split(','), master, link };
      });
    const portOf = new Map(lines.map((line) => [line.id, line.port]));
    const roles: string[] = [];
    for (const { port, flags, master, link } of lines) {
      if (!ports.has(port)) continue; // a node the test killed or paused may well be failing
      if (link !== 'connected' || flags.some((flag) => flag === 'fail' || flag === 'fail?')) {
        return `${node.port} sees ${port} as ${flags.join(',')} ${link}`;
      }
      roles.push(flags.includes('slave') ? `${port}<${portOf.get(master) ?? master}` : `${port}`);
    }
    // Every node must see the same replicas of the same masters, and the same master for each
    // slot: right after `--cluster create` a master may not know yet (by gossip) that a node
    // replicates it, and ignores its CLUSTER FAILOVER handshake (the failover times out); after
    // a failover the others learn of the new master a moment after it says so.
    const view = `${roles.sort().join(' ')} | ${await slotMap(node.port)}`;
    if (agreed === undefined) agreed = { port: node.port, view };
    else if (view !== agreed.view) return `${node.port} and ${agreed.port} disagree: ${view} vs ${agreed.view}`;
    // A replica of a healthy master: in sync (a killed master's replica waits for its failover).
    const role = await roleOf(node.port);
    if (role.role === 'slave' && ports.has(role.masterPort) && role.link !== 'connected') {
      return `${node.port} replicates ${role.masterPort}: link ${role.link}`;
    }
  }
  return true;
}

/** Runs `redis-cli --cluster create` on the nodes; rejects with its output if it fails. */
function createCluster(nodes: Master[], replicasPerMaster: number): Promise<void> {
  const args = ['--cluster', 'create', ...nodes.map((node) => `${node.host}:${node.port}`), '--cluster-replicas', String(replicasPerMaster), '--cluster-yes'];
  return new Promise((resolve, reject) => {
    const child = spawn(redisCliBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const onData = (chunk: Buffer) => (output += chunk.toString());
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    // It waits for the nodes to agree ("Waiting for the cluster to join"): never forever.
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    // 'close', not 'exit': the process may exit before its last output was read.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // redis-cli exits 0 even on some errors, so check what it printed too.
      if (code === 0 && output.includes('[OK] All 16384 slots covered')) resolve();
      else reject(new Error(`redis-cli --cluster create failed (code ${code}, signal ${signal}):\n${output}`));
    });
  });
}

export interface ClusterOptions {
  /**
   * Replicas per master (default 0): startCluster() then starts masters × (1 + replicasPerMaster)
   * nodes and lets `redis-cli --cluster create --cluster-replicas` pick which become replicas.
   * With cluster-node-timeout 2000, a killed master's replica takes over by itself within seconds;
   * `CLUSTER FAILOVER` sent to a replica promotes it at once.
   */
  replicasPerMaster?: number;
}

/**
 * `masters` (default 3, at least 3: redis-cli refuses fewer) masters, `replicasPerMaster` replicas
 * of each (default none), all 16384 slots assigned; cluster_state:ok and every replica in sync
 * when it resolves.
 *
 * cluster-require-full-coverage is off: with a node down, the other nodes keep serving their own
 * slots (only the dead node's slots fail), which is what a fault test wants to see.
 */
export async function startCluster(masters = 3, options: ClusterOptions = {}): Promise<TestCluster> {
  if (!Number.isInteger(masters) || masters < 3) throw new Error(`startCluster: a cluster needs at least 3 masters, got ${masters}`);
  const { replicasPerMaster = 0 } = options;
  if (!Number.isInteger(replicasPerMaster) || replicasPerMaster < 0)
    throw new Error(`startCluster: replicasPerMaster must be a whole number >= 0, got ${replicasPerMaster}`);
  const total = masters * (1 + replicasPerMaster);
  // nodes.conf lives here, by absolute path: redis-server resolves a relative one against its
  // working directory (the repository, for us).
  const dir = await mkdtemp(join(tmpdir(), 'quorumlock-cluster-'));
  // The bus port must be set explicitly (the default, port + 10000, may be taken or out of range)
  // and kept across restart(), since the other nodes remember it. args(port) is synchronous and
  // runs at every (re)start, so free ports are taken up front; the spares cover start retries.
  const spare = await freePorts(total * 2);
  const busPorts = new Map<number, number>();
  const busPort = (port: number): number => {
    let bus = busPorts.get(port);
    if (bus === undefined) {
      bus = spare.pop();
      if (bus === undefined) throw new Error('startCluster: out of spare bus ports');
      busPorts.set(port, bus);
    }
    return bus;
  };
  let set: MasterSet | undefined;
  try {
    set = await processBackend.start(total, {
      args: (port) => [
        '--dir',
        dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--cluster-port',
        String(busPort(port)),
        // Small, so a killed node is flagged failed (and a restarted one cleared) within seconds.
        '--cluster-node-timeout',
        '2000',
        '--cluster-require-full-coverage',
        'no',
        // Replication: the full sync goes over the socket both ways (no RDB file, which a restart
        // would load: restart() must come back empty) and starts at once (by default a master
        // waits 5 s for more replicas). The file name is per node all the same, in case.
        '--repl-diskless-sync',
        'yes',
        '--repl-diskless-sync-delay',
        '0',
        '--repl-diskless-load',
        'swapdb',
        '--dbfilename',
        `dump-${port}.rdb`,
      ],
    });
    const all = set.masters;
    await createCluster(all, replicasPerMaster);
    // redis-cli picked the replicas: each node says what it is.
    const roles = await Promise.all(all.map((node) => roleOf(node.port)));
    const nodes = all.filter((_, i) => roles[i]!.role === 'master');
    const replicas = all.filter((_, i) => roles[i]!.role === 'slave');
    if (nodes.length !== masters || replicas.length !== total - masters) {
      throw new Error(`startCluster: expected ${masters} masters and ${total - masters} replicas, got ${nodes.length} and ${replicas.length}`);
    }
    const healthy = () => [...nodes, ...replicas].filter((node) => node.running && !node.paused);
    const waitForOk = () => poll('cluster_state:ok on every node', 10_000, () => clusterHealth(healthy()));
    await waitForOk();
    const byPort = new Map(all.map((node) => [node.port, node]));
    const started = set;
    return {
      nodes,
      replicas,
      startupNodes: [...nodes, ...replicas].map(({ host, port }) => ({ host, port })),
      waitForOk,
      async masterOfSlot(slot) {
        if (!Number.isInteger(slot) || slot < 0 || slot > 16383) throw new Error(`masterOfSlot: no slot ${slot}`);
        const asked = healthy()[0];
        if (!asked) throw new Error('masterOfSlot: no node is running');
        const shards = (await admin(asked.port, 'CLUSTER', 'SLOTS')) as [number, number, [string, number, ...unknown[]], ...unknown[]][];
        const shard = shards.find(([from, to]) => from <= slot && slot <= to);
        if (!shard) throw new Error(`masterOfSlot: ${asked.port} knows no master of slot ${slot}`);
        const node = byPort.get(shard[2][1]);
        if (!node) throw new Error(`masterOfSlot: slot ${slot} is on ${shard[2][1]}, not a node of this cluster`);
        return node;
      },
      async replicaOf(masterPort) {
        for (const node of healthy()) {
          if (node.port === masterPort) continue;
          const role = await roleOf(node.port);
          if (role.role === 'slave' && role.masterPort === masterPort) return node;
        }
        throw new Error(`replicaOf: no running node replicates ${masterPort}`);
      },
      async stop() {
        await started.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await set?.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Sentinel

export interface TestSentinelGroup {
  /**
   * The initial master and its replica. restart() keeps each one's start arguments: the replica
   * comes back as a replica of the initial master's port, the master as a master. After a
   * failover, a restarted old master is an empty, writable master for ~10 s (measured 10-11 s)
   * before the sentinel turns it into a replica of the new master (+convert-to-slave).
   */
  master: Master;
  replica: Master;
  /** The one sentinel: quorum 1, down-after-milliseconds 2000 (see DOWN_AFTER_MS), failover-timeout 2000. */
  sentinel: { host: string; port: number; stop(): Promise<void> };
  /** The monitored name, 'mymaster'. */
  name: string;
  /** For ioredis `new Redis({ sentinels, name })`. */
  sentinels: { host: string; port: number }[];
  /** host:port of what the sentinel currently reports as master (SENTINEL get-master-addr-by-name). */
  currentMaster(): Promise<string>;
  /**
   * Waits (poll, up to 15 s) until the sentinel reports a master other than `previous` (host:port)
   * and has finished the failover (+switch-master); resolves with the new master's host:port.
   * A master killed at time 0 is replaced after 3-4.5 s.
   */
  waitForFailover(previous: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Not lower: after each +switch-master the sentinel resets its link to the new master as if a ping
 * were pending, and reconnects at most once per second (SENTINEL_PING_PERIOD). With 500 or 1000 it
 * flags the new master +sdown before its first PONG and, with quorum 1, fails over again, back to
 * the old master if that was restarted meanwhile (measured: 3 extra failovers with 500, ping-pong
 * now and then with 1000; none in 10 runs with 1500, 4 at a time). 2000 leaves a margin for load.
 */
const DOWN_AFTER_MS = 2000;

/**
 * Spawns a sentinel on `port` with a config file of its own (sentinel insists on one, as the first
 * argument, and rewrites it). Resolves once it monitors the master: sentinel mode never prints
 * "Ready to accept connections"; "+monitor master" comes after it listens.
 */
async function spawnSentinel(dir: string, port: number, name: string, master: Master): Promise<ChildProcess> {
  const config = join(dir, `sentinel-${port}.conf`);
  await writeFile(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      'protected-mode no',
      `dir ${dir}`,
      `sentinel monitor ${name} ${master.host} ${master.port} 1`,
      `sentinel down-after-milliseconds ${name} ${DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${name} 2000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'),
  );
  return spawnUntilReady([config, '--sentinel'], '+monitor master', `sentinel on port ${port}`, { cwd: dir });
}

/** A master, one replica of it, and one sentinel monitoring them as 'mymaster'. */
export async function startSentinelGroup(): Promise<TestSentinelGroup> {
  const name = 'mymaster';
  const dir = await mkdtemp(join(tmpdir(), 'quorumlock-sentinel-'));
  const started: { stop(): Promise<void> }[] = [];
  const stopAll = async () => {
    await Promise.allSettled(started.map((part) => part.stop()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // --dir/--dbfilename: a replica's full sync writes an RDB file even without `save`, and a
    // killed master that comes back becomes a replica too; keep those files out of the repository.
    // --repl-diskless-sync-delay 0: by default a master waits 5 s for more replicas before the
    // first full sync.
    const common = (port: number) => ['--dir', dir, '--dbfilename', `dump-${port}.rdb`, '--repl-diskless-sync-delay', '0'];
    const masterSet = await processBackend.start(1, { args: common });
    started.push(masterSet);
    const master = masterSet.masters[0]!;
    const replicaSet = await processBackend.start(1, { args: (port) => [...common(port), '--replicaof', master.host, String(master.port)] });
    started.push(replicaSet);
    const replica = replicaSet.masters[0]!;
    await poll(
      'replica in sync',
      10_000,
      async () => String(await admin(replica.port, 'INFO', 'replication')).includes('master_link_status:up') || 'link not up',
    );

    const { port, started: child } = await onFreePort(
      (port) => spawnSentinel(dir, port, name, master),
      (error) => error instanceof MissingServerError,
    );
    const sentinel = {
      host: '127.0.0.1',
      port,
      async stop() {
        child.kill('SIGKILL');
        await waitForExit(child);
      },
    };
    started.push(sentinel);
    // A failover right after start needs a replica the sentinel can promote: one it learnt of
    // (from the master's INFO), is connected to, and has read INFO from (master-link-status comes
    // from the replica's own INFO). Otherwise it aborts with -failover-abort-no-good-slave.
    await poll('sentinel sees the replica', 10_000, async () => {
      const replicas = (await admin(port, 'SENTINEL', 'REPLICAS', name)) as string[][];
      const field = (fields: string[], key: string) => fields[fields.indexOf(key) + 1];
      const good = replicas.some(
        (fields) => field(fields, 'port') === String(replica.port) && field(fields, 'flags') === 'slave' && field(fields, 'master-link-status') === 'ok',
      );
      return good || `replicas: ${JSON.stringify(replicas)}`;
    });

    const currentMaster = async () => {
      const [host, masterPort] = (await admin(port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
      return `${host}:${masterPort}`;
    };
    return {
      master,
      replica,
      sentinel,
      name,
      sentinels: [{ host: sentinel.host, port }],
      currentMaster,
      async waitForFailover(previous) {
        let now = previous;
        await poll(`failover away from ${previous}`, 15_000, async () => {
          // get-master-addr-by-name already names the promoted replica while the failover still
          // runs; SENTINEL MASTER's flags lose failover_in_progress only at +switch-master. (They
          // may say `disconnected` for up to a second after it: the sentinel reconnects at most
          // once per second. Clients do not need that link, so that is not waited for.)
          const fields = (await admin(port, 'SENTINEL', 'MASTER', name)) as string[];
          const field = (key: string) => fields[fields.indexOf(key) + 1] ?? '';
          const flags = field('flags').split(',');
          now = `${field('ip')}:${field('port')}`;
          const done = now !== previous && !flags.some((flag) => ['failover_in_progress', 's_down', 'o_down'].includes(flag));
          return done || `${now} ${field('flags')}`;
        });
        return now;
      },
      stop: stopAll,
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}
