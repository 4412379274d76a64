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
import { freePort, INSTALL_HINT, live, processBackend, redisServerBinary } from './process.js';
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
  let reason = '';
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
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 1000, commandTimeout: 1000 });
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

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

// ---------------------------------------------------------------------------------------------
// Cluster

export interface TestCluster {
  /**
   * The cluster's master nodes. kill/pause/resume/restart keep the port; restart() keeps
   * nodes.conf, so the node rejoins with its slots, but empty.
   */
  nodes: Master[];
  /** For `new Cluster(startupNodes)` of ioredis. */
  startupNodes: { host: string; port: number }[];
  /**
   * Waits (poll, 10 s max) until every running, unpaused node says cluster_state:ok and sees every
   * other such node connected and not failing. The second part matters after restart(): the
   * others keep a master with slots flagged `fail` until it has been back for a while.
   */
  waitForOk(): Promise<void>;
  stop(): Promise<void>;
}

/** Why the healthy nodes do not agree yet, or true when they do. */
async function clusterHealth(healthy: Master[]): Promise<true | string> {
  const ports = new Set(healthy.map((node) => node.port));
  for (const node of healthy) {
    const info = String(await admin(node.port, 'CLUSTER', 'INFO'));
    if (!info.includes('cluster_state:ok')) return `${node.port}: ${/cluster_state:\w+/.exec(info)?.[0]}`;
    // CLUSTER NODES lines: <id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slots...>
    for (const line of String(await admin(node.port, 'CLUSTER', 'NODES')).trim().split('\n')) {
      const [, address = '', flags = '', , , , , link] = line.split(' ');
      const port = Number(/:(\d+)@/.exec(address)?.[1]);
      if (!ports.has(port)) continue; // a node the test killed or paused may well be failing
      if (link !== 'connected' || flags.split(',').some((flag) => flag === 'fail' || flag === 'fail?')) {
        return `${node.port} sees ${port} as ${flags} ${link}`;
      }
    }
  }
  return true;
}

/** Runs `redis-cli --cluster create` on the nodes; rejects with its output if it fails. */
function createCluster(nodes: Master[]): Promise<void> {
  const args = ['--cluster', 'create', ...nodes.map((node) => `${node.host}:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'];
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
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      // redis-cli exits 0 even on some errors, so check what it printed too.
      if (code === 0 && output.includes('[OK] All 16384 slots covered')) resolve();
      else reject(new Error(`redis-cli --cluster create failed (code ${code}, signal ${signal}):\n${output}`));
    });
  });
}

/**
 * `masters` (default 3, at least 3: redis-cli refuses fewer) masters, no replicas, all 16384
 * slots assigned; cluster_state:ok when it resolves.
 *
 * cluster-require-full-coverage is off: with a node down, the other nodes keep serving their own
 * slots (only the dead node's slots fail), which is what a fault test wants to see.
 */
export async function startCluster(masters = 3): Promise<TestCluster> {
  if (!Number.isInteger(masters) || masters < 3) throw new Error(`startCluster: a cluster needs at least 3 masters, got ${masters}`);
  // nodes.conf lives here, by absolute path: redis-server resolves a relative one against its
  // working directory (the repository, for us).
  const dir = await mkdtemp(join(tmpdir(), 'quorumlock-cluster-'));
  // The bus port must be set explicitly (the default, port + 10000, may be taken or out of range)
  // and kept across restart(), since the other nodes remember it. args(port) is synchronous and
  // runs at every (re)start, so free ports are taken up front; the spares cover start retries.
  const spare = await freePorts(masters * 2);
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
    set = await processBackend.start(masters, {
      args: (port) => [
        '--dir', dir,
        '--cluster-enabled', 'yes',
        '--cluster-config-file', join(dir, `nodes-${port}.conf`),
        '--cluster-port', String(busPort(port)),
        // Small, so a killed node is flagged failed (and a restarted one cleared) within seconds.
        '--cluster-node-timeout', '2000',
        '--cluster-require-full-coverage', 'no',
      ],
    });
    const nodes = set.masters;
    await createCluster(nodes);
    const waitForOk = () => poll('cluster_state:ok on every node', 10_000, () => clusterHealth(nodes.filter((node) => node.running && !node.paused)));
    await waitForOk();
    const started = set;
    return {
      nodes,
      startupNodes: nodes.map(({ host, port }) => ({ host, port })),
      waitForOk,
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
  return new Promise((resolve, reject) => {
    const child = spawn(redisServerBinary(), [config, '--sentinel'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let ready = false;
    const onData = (chunk: Buffer) => {
      if (ready) return;
      output += chunk.toString();
      if (output.includes('+monitor master')) {
        ready = true;
        live.add(child); // SIGKILLed with the servers if the test process exits
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (error: NodeJS.ErrnoException) => reject(error.code === 'ENOENT' ? new Error(INSTALL_HINT) : error));
    child.once('exit', (code, signal) => {
      live.delete(child);
      if (!ready) reject(new Error(`sentinel on port ${port} exited before it was ready (code ${code}, signal ${signal}):\n${output}`));
    });
  });
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
    await poll('replica in sync', 10_000, async () => String(await admin(replica.port, 'INFO', 'replication')).includes('master_link_status:up') || 'link not up');

    const { port, started: child } = await onFreePort(
      (port) => spawnSentinel(dir, port, name, master),
      (error) => error instanceof Error && error.message === INSTALL_HINT,
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
      const good = replicas.some((fields) => field(fields, 'port') === String(replica.port) && field(fields, 'flags') === 'slave' && field(fields, 'master-link-status') === 'ok');
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
