/** The Cluster and Sentinel topologies of the harness: they start, serve, and fail as real ones do. */
import Redis, { Cluster } from 'ioredis';
import { expect, it } from 'vitest';
import { startCluster, startSentinelGroup } from '../harness/topologies.js';
import { eventually } from './util.js';

/** A plain client for one node, so a test can ask it directly. */
function direct(port: number): Redis {
  const client = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  return client;
}

it('cluster: keys on every node; a killed node fails only its own slots; restarted, it serves again, empty', async () => {
  const cluster = await startCluster(3);
  const [down, up] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
  const admin = direct(up.port);
  // No node reconnects by itself (ioredis' default for cluster nodes): after a slots refresh,
  // the client connects to the restarted node afresh.
  const client = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: 1 } });
  client.on('error', () => {});
  try {
    // One key per node, found through the slot map (CLUSTER SHARDS is 7.0+; SLOTS is enough).
    const slots = (await admin.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const ownerOf = async (key: string) => {
      const slot = Number(await admin.call('CLUSTER', 'KEYSLOT', key));
      return slots.find(([from, to]) => from <= slot && slot <= to)![2][1];
    };
    const keyOn = new Map<number, string>();
    for (let i = 0; keyOn.size < cluster.nodes.length; i++) {
      const owner = await ownerOf(`key:${i}`);
      if (!keyOn.has(owner)) keyOn.set(owner, `key:${i}`);
    }
    for (const [port, key] of keyOn) {
      await client.set(key, String(port));
      expect(await client.get(key)).toBe(String(port));
      const node = direct(port);
      expect(await node.get(key)).toBe(String(port)); // it really landed on that node
      node.disconnect();
    }

    await down.kill();
    await expect(client.get(keyOn.get(down.port)!)).rejects.toThrow();
    expect(await client.get(keyOn.get(up.port)!)).toBe(String(up.port));
    await client.set(keyOn.get(up.port)!, 'still writable');
    expect(String(await admin.call('CLUSTER', 'INFO'))).toContain('cluster_state:ok'); // require-full-coverage no

    await down.restart();
    await cluster.waitForOk();
    expect(await eventually(() => client.get(keyOn.get(down.port)!), 10_000)).toBeNull(); // back with its slots, empty
    await client.set(keyOn.get(down.port)!, 'again');
    expect(await client.get(keyOn.get(down.port)!)).toBe('again');
  } finally {
    client.disconnect();
    admin.disconnect();
    await cluster.stop();
  }
});

it('sentinel: the client follows a failover to the promoted replica', async () => {
  const group = await startSentinelGroup();
  const client = new Redis({ sentinels: group.sentinels, name: group.name });
  client.on('error', () => {});
  const promoted = direct(group.replica.port);
  try {
    const before = await group.currentMaster();
    expect(before).toBe(`${group.master.host}:${group.master.port}`);
    await client.set('k', 'before');

    await group.master.kill();
    expect(await group.waitForFailover(before)).toBe(`${group.replica.host}:${group.replica.port}`);
    await eventually(() => client.set('k', 'after'), 10_000);
    expect(await promoted.get('k')).toBe('after'); // on the former replica, which kept 'k' from before
    expect(await promoted.info('replication')).toContain('role:master');
  } finally {
    client.disconnect();
    promoted.disconnect();
    await group.stop();
  }
});
