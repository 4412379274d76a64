/**
 * The Valkey GLIDE adapter (src/clients/glide.ts) on real redis-server processes: calls keep
 * their order on the server, EVAL after a flushed script cache, the server's own error texts,
 * replies shaped as ioredis has them, no re-sent command, the subscriber, closing.
 */
import { GlideClient, GlideClusterClient, ProtocolVersion, type GlideClientConfiguration } from '@valkey/valkey-glide';
import Redis from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Connection } from '../../../src/clients/connection.js';
import { describeGlide, glideConnection, isGlide, serverError } from '../../../src/clients/glide.js';
import { ioredisConnection } from '../../../src/clients/ioredis.js';
import { EPOCH_KEY, leaderRecordKey, resourceKeys } from '../../../src/store/keys.js';
import { acquireArgs, fenceArgs } from '../../../src/store/protocol.js';
import type { ScriptName } from '../../../src/store/scripts.js';
import { tagOfSlot } from '../../../src/store/slots.js';
import { startMasters, type MasterSet } from '../../harness/index.js';
import { startCluster } from '../../harness/topologies.js';
import { eventually, fresh, sleep } from '../util.js';

let set: MasterSet;
const opened: { close(): void }[] = [];
beforeAll(async () => {
  set = await startMasters(1);
});
afterEach(async () => {
  while (opened.length > 0) opened.pop()!.close();
  const master = set.masters[0]!;
  await master.resume();
  if (!master.running) await master.restart();
});
afterAll(() => set?.stop());

const master = () => set.masters[0]!;

async function glide(options: Partial<GlideClientConfiguration> = {}): Promise<GlideClient> {
  const client = await GlideClient.createClient({ addresses: [{ host: master().host, port: master().port }], ...options });
  opened.push(client);
  return client;
}

function ioredis(options: { protocol?: 2 | 3 } = {}): Redis {
  const client = new Redis({ host: master().host, port: master().port, ...options });
  client.on('error', () => undefined);
  opened.push({ close: () => client.disconnect() });
  return client;
}

/** Runs a script, answering its reply or its error's message. */
const outcome = (connection: Connection, name: ScriptName, keys: string[], args: string[]) =>
  connection.script(name, keys, args).then(
    (reply) => ({ reply }),
    (error: Error) => ({ error: error.message }),
  );

/** A reply's shape: its types, and the values that do not depend on time or on the resource. */
const shape = (value: unknown): unknown =>
  Array.isArray(value) ? value.map(shape) : value === null ? null : typeof value === 'number' ? (Math.abs(value) > 1 ? 'n' : value) : typeof value;

/** Every kind of script, as a member sends them, on `resource` (and a second, shared one). */
async function everyScript(connection: Connection, resource: string): Promise<unknown[]> {
  const keys = [...resourceKeys([resource]), EPOCH_KEY];
  const epoch = await connection.script('quorumlockEpoch', [EPOCH_KEY], []);
  const id = (epoch as string[])[0]!;
  const request = (value: string) => ({ value, ttlMs: 10_000, waiter: { id: `w-${value}`, ticket: 1, leaseMs: 5_000 }, quarantineMs: 0, fencing: true });
  const shared = fresh('shared');
  const calls: [ScriptName, string[], string[]][] = [
    ['quorumlockTrust', [EPOCH_KEY], [id, 'new', '0']],
    ['quorumlockAcquire', keys, [id, ...acquireArgs(request('v1'), '')]],
    ['quorumlockAcquire', keys, [id, ...acquireArgs(request('v2'), '')]],
    ['quorumlockExtend', [resource, EPOCH_KEY], [id, 'v1', '10000']],
    ['quorumlockFence', [resource, EPOCH_KEY], [id, ...fenceArgs({ value: 'v1', token: 5, mode: 'propose', epoch: id })]],
    ['quorumlockLeader', [resource, leaderRecordKey(resource), EPOCH_KEY], [id, 'v1', '1 me']],
    ['quorumlockElection', [resource, leaderRecordKey(resource), EPOCH_KEY], ['0']],
    ['quorumlockPermits', resourceKeys([resource]), []],
    ['quorumlockAcquireShared', [...resourceKeys([shared]), EPOCH_KEY], [id, ...acquireArgs(request('~s1'), '')]],
    ['quorumlockExtendShared', [...resourceKeys([shared]), EPOCH_KEY], [id, '~s1', '10000']],
    ['quorumlockLeave', keys, [id, 'w-v2']],
    ['quorumlockRelease', keys, [id, 'v1']],
    ['quorumlockRelease', keys, ['not-the-epoch', 'v1']],
  ];
  const outcomes: unknown[] = [{ reply: shape(epoch) }];
  for (const [name, scriptKeys, args] of calls) {
    const { reply, error } = (await outcome(connection, name, scriptKeys, args)) as { reply?: unknown; error?: string };
    outcomes.push(error === undefined ? { name, reply: shape(reply) } : { name, error });
  }
  return outcomes;
}

/** The commands the server runs from now on, as MONITOR shows them (its arguments). */
async function monitor(): Promise<{ commands: string[][]; stop(): void }> {
  const watcher = await ioredis().monitor();
  const commands: string[][] = [];
  // Each command as its client spelled it: lower-cased, as ioredis sends them.
  watcher.on('monitor', (_time: string, args: string[]) => commands.push([args[0]!.toLowerCase(), ...args.slice(1)]));
  return { commands, stop: () => watcher.disconnect() };
}

describe('the GLIDE adapter', () => {
  it('is told apart from ioredis, and named from its configuration', async () => {
    const client = await glide({ databaseId: 2 });
    expect(isGlide(client)).toBe(true);
    expect(isGlide(ioredis())).toBe(false);
    expect(describeGlide(client)).toEqual({ id: `127.0.0.1:${master().port}/2`, isCluster: false, keyPrefix: '' });
    const connection = glideConnection(client);
    expect([connection.library, connection.state, connection.resends, connection.everRetried]).toEqual(['glide', 'ready', false, false]);
    expect(await connection.info!('server')).toMatch(/run_id:\w+/);
  });

  it('200 calls made in one tick reach the server in the order they were made', async () => {
    const connection = glideConnection(await glide());
    const [id] = (await connection.script('quorumlockEpoch', [EPOCH_KEY], [])) as string[];
    // Both scripts loaded first: every call below is one EVALSHA (the NOSCRIPT path has its own test).
    const warm = [...resourceKeys([fresh('warm')]), EPOCH_KEY];
    const warmRequest = { value: 'w', ttlMs: 60_000, waiter: { id: 'w', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false };
    await connection.script('quorumlockAcquire', warm, [id!, ...acquireArgs(warmRequest, '')]);
    await connection.script('quorumlockRelease', warm, [id!, 'w']);
    const watch = await monitor();
    const resource = fresh('order');
    const keys = [...resourceKeys([resource]), EPOCH_KEY];
    const request = (i: number) => ({ value: `v${i}`, ttlMs: 60_000, waiter: { id: 'w', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false });
    // Each acquire followed by the release that undoes it: one release written first leaves a key.
    const calls = Array.from({ length: 100 }, (_, i) => [
      connection.script('quorumlockAcquire', keys, [id!, ...acquireArgs(request(i), '')]),
      connection.script('quorumlockRelease', keys, [id!, `v${i}`]),
    ]).flat();
    const replies = await Promise.all(calls);
    expect(replies.filter((_, i) => i % 2 === 1)).toEqual(Array(100).fill(1));
    await eventually(async () => expect(watch.commands.filter((args) => args[0] === 'evalsha')).toHaveLength(200));
    watch.stop();
    const values = watch.commands.filter((args) => args[0] === 'evalsha').map((args) => args[2 + keys.length + 2]);
    expect(values).toEqual(Array.from({ length: 100 }, (_, i) => [`v${i}`, `v${i}`]).flat());
    expect(await ioredis().exists(resource)).toBe(0);
  });

  it('falls back to EVAL after SCRIPT FLUSH, in the order of the calls', async () => {
    const client = await glide();
    const connection = glideConnection(client);
    const [id] = (await connection.script('quorumlockEpoch', [EPOCH_KEY], [])) as string[];
    await client.customCommand(['SCRIPT', 'FLUSH']);
    const watch = await monitor();
    const resource = fresh('flushed');
    const keys = [...resourceKeys([resource]), EPOCH_KEY];
    const request = { value: 'v', ttlMs: 60_000, waiter: { id: 'w', ticket: 1, leaseMs: 0 }, quarantineMs: 0, fencing: false };
    const [acquired, released] = await Promise.all([
      connection.script('quorumlockAcquire', keys, [id!, ...acquireArgs(request, '')]),
      connection.script('quorumlockRelease', keys, [id!, 'v']),
    ]);
    expect([acquired, released]).toEqual([[1, 0, 0, 0, id], 1]);
    const scriptCommands = () => watch.commands.map((args) => args[0]).filter((name) => name!.startsWith('eval'));
    await eventually(async () => expect(scriptCommands()).toEqual(['evalsha', 'evalsha', 'eval', 'eval']));
    watch.stop();
    expect(await ioredis().exists(resource)).toBe(0);
  });

  it("rejects with the server's own error text", async () => {
    const client = await glide();
    const texts = ['QUORUMLOCK_EPOCH 1a2b', 'QUORUMLOCK_ROLE this server is not a plain master', 'QUORUMLOCK_ROLE', 'NOSCRIPT No matching script.'];
    texts.push('ERR some text', 'LOADING x', 'READONLY y', 'NOPERM z', 'WRONGTYPE Operation', 'FOO: bar', 'X  two  spaces');
    for (const message of texts) {
      const error = await client.customCommand(['EVAL', 'return redis.error_reply(ARGV[1])', '0', message]).catch((e: Error) => e);
      expect(serverError(error as Error).message).toBe(message);
    }
    const connection = glideConnection(client);
    const [id] = (await connection.script('quorumlockEpoch', [EPOCH_KEY], [])) as string[];
    const refused = await outcome(connection, 'quorumlockTrust', [EPOCH_KEY], ['not-the-epoch', 'new', '0']);
    expect(refused).toEqual({ error: `QUORUMLOCK_EPOCH ${id}` });
  });

  it('answers every script as ioredis does, under RESP3 and RESP2', async () => {
    const reference = await everyScript(ioredisConnection(ioredis({ protocol: 2 })), fresh('shapes'));
    expect(await everyScript(ioredisConnection(ioredis({ protocol: 3 })), fresh('shapes'))).toEqual(reference);
    expect(await everyScript(glideConnection(await glide()), fresh('shapes'))).toEqual(reference);
    expect(await everyScript(glideConnection(await glide({ protocol: ProtocolVersion.RESP2 })), fresh('shapes'))).toEqual(reference);
  });

  it('never re-sends a command written before the server died (resends: false)', async () => {
    const connection = glideConnection(await glide({ requestTimeout: 10_000 }));
    await connection.script('quorumlockPermits', resourceKeys([fresh('warm')]), []);
    await master().pause();
    // epoch.lua begins an epoch where there is none: a re-sent copy would leave the hash behind.
    const call = outcome(connection, 'quorumlockEpoch', [EPOCH_KEY], []);
    await sleep(300);
    await master().kill();
    await master().restart();
    expect(await call).toHaveProperty('error');
    await sleep(1_000);
    expect(await ioredis().exists(EPOCH_KEY)).toBe(0);
  });

  it('subscribes on a connection of its own, and hears messages after a restart', async () => {
    const connection = glideConnection(await glide());
    const subscription = connection.subscriber(() => true);
    opened.push(subscription);
    await eventually(async () => expect(subscription.state).toBe('ready'));
    const heard: [string, string][] = [];
    subscription.onMessage((channel, message) => heard.push([channel, message]));
    await subscription.subscribe('chan-a', 'chan-b');
    const publisher = ioredis();
    await publisher.publish('chan-b', 'one');
    await eventually(async () => expect(heard).toEqual([['chan-b', 'one']]));
    // Subscribe and unsubscribe made in one tick keep their order.
    void subscription.subscribe('chan-c');
    await subscription.unsubscribe('chan-c');
    expect(await publisher.publish('chan-c', 'nobody')).toBe(0);
    await master().restart();
    // GLIDE reconnects and subscribes again by itself.
    await eventually(async () => {
      await publisher.publish('chan-a', 'two');
      expect(heard).toContainEqual(['chan-a', 'two']);
    }, 10_000);
    subscription.close();
    expect(subscription.state).toBe('ended');
  });

  it('gives up a SUBSCRIBE the server does not confirm (its member down), so the next goes out when it is back', async () => {
    const connection = glideConnection(await glide());
    const subscription = connection.subscriber(() => true);
    opened.push(subscription);
    await eventually(async () => expect(subscription.state).toBe('ready'));
    await subscription.subscribe('chan-up');
    await master().kill();
    const started = performance.now();
    // GLIDE's own wait with 0 lasts until the server answers; ours ends (SUBSCRIBE_MS, src/clients/glide.ts).
    await expect(subscription.subscribe('chan-down')).rejects.toThrow();
    expect(performance.now() - started).toBeLessThan(10_000);
    await master().restart();
    const heard: string[] = [];
    subscription.onMessage((channel) => heard.push(channel));
    await eventually(async () => {
      await subscription.subscribe('chan-back');
      await ioredis().publish('chan-back', 'hello');
      expect(heard).toContain('chan-back');
    }, 10_000);
  });

  it("says 'end' and 'ended' once the client is closed, and rejects calls", async () => {
    const client = await glide();
    const connection = glideConnection(client);
    let ended = 0;
    connection.on('end', () => ended++);
    client.close();
    await eventually(async () => expect(ended).toBe(1));
    expect(connection.state).toBe('ended');
    await expect(connection.script('quorumlockEpoch', [EPOCH_KEY], [])).rejects.toThrow();
  });
});

describe('the GLIDE adapter on a Cluster', () => {
  it('sends each call to the primary of its first key, and reads INFO of every primary', async () => {
    const cluster = await startCluster(3);
    const client = await GlideClusterClient.createClient({ addresses: cluster.startupNodes.slice(0, 1) });
    try {
      const connection = glideConnection(client);
      expect([connection.isCluster, connection.id]).toEqual([true, `cluster:127.0.0.1:${cluster.startupNodes[0]!.port}`]);
      const slots = [0, 8_000, 16_000];
      const keys = slots.map((slot) => `{${tagOfSlot(slot)}}epoch`);
      // One tick: one ClusterBatch, split by GLIDE over the nodes.
      const replies = await Promise.all(keys.map((key) => connection.script('quorumlockEpoch', [key], [])));
      expect(replies.map((reply) => typeof (reply as unknown[])[0])).toEqual(['string', 'string', 'string']);
      for (const [index, slot] of slots.entries()) {
        const owner = await cluster.masterOfSlot(slot);
        const direct = new Redis({ host: owner.host, port: owner.port });
        expect(await direct.exists(keys[index]!)).toBe(1);
        direct.disconnect();
      }
      const infos = await connection.masters!('server');
      expect(infos.map((info) => /tcp_port:(\d+)/.exec(info)![1]).sort()).toEqual(cluster.nodes.map((node) => String(node.port)).sort());
      expect(await connection.info!('server')).toMatch(/run_id:/);
    } finally {
      client.close();
      await cluster.stop();
    }
  });
});
