/**
 * The CLI with Sentinel-managed groups and Redis Clusters as members: member URL parsing, and
 * `trust`, `members`, `status` and `run` against a real cluster (3 masters), a real Sentinel
 * group (master, replica, sentinel) and one plain master, as the three members of one quorum.
 */
import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/errors.js';
import { client, parseMembers, redact } from '../../src/cli/members.js';
import { memberIdOf as memberId } from '../../src/clients/id.js';
import { slotOf } from '../../src/store/keys.js';
import { startCluster, startSentinelGroup, type TestCluster, type TestSentinelGroup } from '../harness/topologies.js';
import { startTestMasters, type TestMasters } from '../integration/masters.js';
import { cli, killRunning, nodeCommand, runCli } from './spawn.js';

/** The UsageError message parseMembers throws for `text`. */
function refusal(text: string): string {
  try {
    parseMembers(text, {});
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).flag).toBe('--members');
    return (error as Error).message;
  }
  throw new Error(`parsed: ${text}`);
}

describe('member URLs for Sentinel groups and Clusters', () => {
  it('reads redis+sentinel:// URLs: sentinels joined by +, the master name, db, auth for the data nodes, TLS', () => {
    const [a, b, c] = parseMembers(
      'redis+sentinel://s2:26380+s1/mymaster/3, rediss+sentinel://user:p%40ss@[::1]:5000/other, redis+sentinel://:se@cr/et@s1:26379/mymaster',
      {},
    );
    expect(a).toEqual({
      url: 'redis+sentinel://s2:26380+s1/mymaster/3',
      name: 'sentinel:mymaster@s1:26379,s2:26380/3',
      topology: {
        kind: 'sentinel',
        sentinels: [
          { host: 's2', port: 26380 },
          { host: 's1', port: 26379 },
        ],
        masterName: 'mymaster',
        db: 3,
        tls: false,
      },
    });
    expect(b!.name).toBe('sentinel:other@::1:5000/0');
    expect(b!.topology).toEqual({
      kind: 'sentinel',
      sentinels: [{ host: '::1', port: 5000 }],
      masterName: 'other',
      db: 0,
      tls: true,
      username: 'user',
      password: 'p@ss',
    });
    // The user info ends at the last @: a password may hold @ and /.
    expect(c!.topology).toEqual({
      kind: 'sentinel',
      sentinels: [{ host: 's1', port: 26379 }],
      masterName: 'mymaster',
      db: 0,
      tls: false,
      password: 'se@cr/et',
    });
  });

  it('reads redis+cluster:// URLs: seed nodes joined by +, named in sorted order', () => {
    const [a, b] = parseMembers('redis+cluster://n3:7002+n1:7000+n2:7001,rediss+cluster://admin:pw@10.0.0.1/', {});
    expect(a).toEqual({
      url: 'redis+cluster://n3:7002+n1:7000+n2:7001',
      name: 'cluster:n1:7000,n2:7001,n3:7002',
      topology: {
        kind: 'cluster',
        nodes: [
          { host: 'n3', port: 7002 },
          { host: 'n1', port: 7000 },
          { host: 'n2', port: 7001 },
        ],
        tls: false,
      },
    });
    expect(b).toMatchObject({
      name: 'cluster:10.0.0.1:6379',
      topology: { kind: 'cluster', nodes: [{ host: '10.0.0.1', port: 6379 }], tls: true, username: 'admin', password: 'pw' },
    });
  });

  it("names each member exactly as the library's memberId() names the client the CLI builds for it", () => {
    const parsed = parseMembers(
      'redis+sentinel://s2:26380+s1/mymaster/3,redis+cluster://n3:7002+n1:7000,rediss+cluster://[::1]:7000,redis://:pw@h1:7000/2,redis://[::1]:7001',
      {},
    );
    for (const member of parsed) {
      const built = client(member, { commandTimeoutMs: 1000, connectTimeoutMs: 1000 }, { lazyConnect: true });
      try {
        expect(memberId(built as never), member.url).toBe(member.name);
        expect(built instanceof Cluster).toBe(member.topology?.kind === 'cluster');
      } finally {
        built.disconnect();
      }
    }
    const sentinel = client(parsed[0]!, { commandTimeoutMs: 1000, connectTimeoutMs: 1000 }, { lazyConnect: true }) as Redis;
    expect(sentinel.options).toMatchObject({
      name: 'mymaster',
      db: 3,
      sentinels: [
        { host: 's2', port: 26380 },
        { host: 's1', port: 26379 },
      ],
    });
    sentinel.disconnect();
  });

  it('refuses bad URLs with a message that says what is wrong, and never echoes a password', () => {
    expect(refusal('redis+sentinel://')).toMatch(/no sentinels/);
    expect(refusal('redis+sentinel://:pw@/mymaster')).toMatch(/no sentinels/);
    expect(refusal('redis+sentinel://s1:26379')).toMatch(/no master name/);
    expect(refusal('redis+sentinel://s1:26379/')).toMatch(/no master name/);
    expect(refusal('redis+sentinel://s1:0/m')).toMatch(/sentinel "s1:0": port must be a number from 1 to 65535/);
    expect(refusal('redis+sentinel://s1:70000/m')).toMatch(/port must be a number/);
    expect(refusal('redis+cluster://n1:abc')).toMatch(/seed node "n1:abc": port must be a number/);
    expect(refusal('redis+sentinel://s1+/m')).toMatch(/empty sentinel address/);
    expect(refusal('redis+sentinel://s1/m/x')).toMatch(/database must be a number/);
    expect(refusal('redis+sentinel://s1/m/1/2')).toMatch(/database must be a number/);
    expect(refusal('redis+sentinel://s1+s1:26379/m')).toMatch(/sentinel s1:26379 is listed twice/);
    expect(refusal('redis+cluster://n1:7000/0')).toMatch(/a cluster has only database 0, so a cluster URL takes no \/db/);
    expect(refusal('redis+cluster://')).toMatch(/no seed nodes/);
    expect(refusal('redis+cluster://n1:7000?tls=1')).toMatch(/query strings/);
    expect(refusal('redis+cluster://::1:7000')).toMatch(/IPv6 address goes in brackets/);
    expect(refusal('redis+cluster://:%zz@n1')).toMatch(/password is not validly percent-encoded/);
    expect(refusal('sentinel://s1/m')).toMatch(/scheme must be .*redis\+sentinel:\/\//);
    // The same cluster or group, listed twice in another order.
    expect(refusal('redis+cluster://a:1+b:2,redis+cluster://b:2+a:1')).toMatch(/cluster:a:1,b:2 is listed twice/);
    expect(refusal('redis+sentinel://s1+s2/m,redis+sentinel://s2+s1/m')).toMatch(/sentinel:m@s1:26379,s2:26379\/0 is listed twice/);

    for (const text of [
      'rediss+cluster://admin:hunter2@n1:7000/0',
      'redis+sentinel://:hunter2@s1:70000/m',
      'redis+sentinel://u:hun@ter2@s1',
      'redis+cluster://:hunter2%zz@n1',
    ]) {
      const message = refusal(text);
      expect(message).toContain('***');
      expect(message).not.toContain('hunter2');
      expect(message).not.toContain('ter2');
    }
    expect(redact('redis+sentinel://u:hun@ter2@s1+s2/m')).toBe('redis+sentinel://u:***@s1+s2/m');
    expect(redact('rediss+cluster://:pw@n1:7000')).toBe('rediss+cluster://:***@n1:7000');
  });

  it('a bad member URL exits 64 and names --members', async () => {
    const { code, stderr, stdout } = await cli(['members', '--members', 'redis+cluster://127.0.0.1:7000/1']).done;
    expect(code).toBe(64);
    expect(stderr).toMatch(/--members: .*a cluster has only database 0/);
    expect(stdout).toBe('');
  });
});

describe('a Sentinel group, a Cluster and a plain master as the members', () => {
  let cluster: TestCluster;
  let group: TestSentinelGroup;
  let plain: TestMasters;
  let members: string;
  let names: string[];
  const opened: (Redis | Cluster)[] = [];

  const address = (node: { host: string; port: number }) => `${node.host}:${node.port}`;
  const sorted = (nodes: { host: string; port: number }[]) => nodes.map(address).sort().join(',');

  beforeAll(async () => {
    [cluster, group, plain] = await Promise.all([startCluster(), startSentinelGroup(), startTestMasters(1)]);
    members = [
      `redis+sentinel://${group.sentinels.map(address).join('+')}/${group.name}`,
      `redis+cluster://${cluster.startupNodes.map(address).join('+')}`,
      `redis://${address(plain.masters[0]!)}`,
    ].join(',');
    names = [`sentinel:${group.name}@${sorted(group.sentinels)}/0`, `cluster:${sorted(cluster.startupNodes)}`, `${address(plain.masters[0]!)}/0`];

    // Brand new: the group and the cluster have no epochs yet (the plain master was trusted).
    // The cluster's trust is 32,768 calls: past the default 10 s on two loaded cores once.
    const trusted = await cli(['trust', '--yes', '--json', '--timeout', '25s', '--members', members]).done;
    expect(trusted.stderr).toBe('');
    expect(trusted.code).toBe(0);
    const results = (JSON.parse(trusted.stdout) as { members: { member: string; trusted: boolean }[] }).members;
    expect(results.map((result) => [result.member, result.trusted])).toEqual(names.map((name) => [name, true]));
  }, 60_000);

  afterEach(() => killRunning());

  afterAll(async () => {
    for (const connection of opened) connection.disconnect();
    await Promise.all([cluster?.stop(), group?.stop(), plain?.close()]);
  });

  /** The lock value of `key` on each member: via the group's sentinel, through the cluster, on the plain master. */
  async function valuesOf(key: string): Promise<(string | null)[]> {
    const viaSentinel = new Redis({ sentinels: group.sentinels, name: group.name });
    const viaCluster = new Cluster(cluster.startupNodes);
    opened.push(viaSentinel, viaCluster);
    return Promise.all([viaSentinel.get(key), viaCluster.get(key), plain.clients[0]!.get(key)]);
  }

  interface Probe {
    member: string;
    healthy: boolean;
    reachable: boolean;
    role: string;
    version: string;
    latencyMs: number;
    error?: string;
    epoch: { state: string; ageMs: number; genesis: boolean; slot?: number; slots?: Record<string, number> };
    lock: { held: boolean; pttlMs: number; owner: string };
  }

  it('members --json: all three healthy masters, trusted; the cluster judged on all 16384 slot epochs', async () => {
    // 3 s per command, not 1: the cluster's 16,384 slot epochs are read in one pipeline per node,
    // and on loaded cores the last replies once came after 1 s (the claim is the judgement).
    const { code, stdout } = await cli(['members', '--json', '--timeout', '3s', '--members', members]).done;
    expect(code).toBe(0);
    const parsed = JSON.parse(stdout) as { quorum: number; healthy: number; trusted: number; ok: boolean; members: Probe[] };
    expect(parsed).toMatchObject({ quorum: 2, healthy: 3, trusted: 3, ok: true });
    expect(parsed.members.map((member) => member.member)).toEqual(names);
    for (const member of parsed.members) {
      expect(member, member.member).toMatchObject({ healthy: true, reachable: true, role: 'master', epoch: { state: 'trusted', genesis: true } });
      expect(member.error).toBeUndefined();
      expect(member.version).toMatch(/^\d+\.\d+/);
      expect(member.latencyMs).toBeGreaterThanOrEqual(0);
      expect(member.epoch.ageMs).toBeGreaterThan(0);
    }
    expect(parsed.members[1]!.epoch.slots).toEqual({ trusted: 16384, quarantined: 0, stale: 0, none: 0, unreadable: 0 });
    expect(parsed.members[0]!.epoch.slots).toBeUndefined();

    const table = await cli(['members', '--timeout', '3s', '--members', members]).done;
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/3 of 3 healthy masters, quorum 2: OK/);
    for (const name of names) expect(table.stdout).toContain(name);
  });

  it('status <resource> while a run holds it: held on every member by the same owner fingerprint; free after', async () => {
    const resource = 'topologies-report';
    const holder = runCli(members, resource, '10s', 'console.log("holding"); setTimeout(() => {}, 20000)');
    await holder.waitFor('holding');
    const values = await valuesOf(resource);
    expect(values[0]).toBeTruthy();
    expect(values).toEqual([values[0], values[0], values[0]]);
    const owner = createHash('sha256').update(values[0]!).digest('hex').slice(0, 8);

    const json = await cli(['status', resource, '--json', '--members', members]).done;
    expect(json.code).toBe(0);
    expect(json.stdout).not.toContain(values[0]);
    const parsed = JSON.parse(json.stdout) as { held: boolean; owner: string; heldOn: number; members: Probe[] };
    expect(parsed).toMatchObject({ held: true, owner, heldOn: 3 });
    expect(parsed.members.map((member) => member.member)).toEqual(names);
    for (const member of parsed.members) {
      expect(member, member.member).toMatchObject({ reachable: true, role: 'master', lock: { held: true, owner }, epoch: { state: 'trusted' } });
      expect(member.lock.pttlMs).toBeGreaterThan(0);
      expect(member.lock.pttlMs).toBeLessThanOrEqual(10_000);
    }
    // On the cluster: the epoch of the resource's slot.
    expect(parsed.members[1]!.epoch.slot).toBe(slotOf(resource));

    const text = await cli(['status', resource, '--members', members]).done;
    expect(text.stdout).toMatch(new RegExp(`${resource}: held by owner ${owner} on 3 of 3 members`));
    expect(text.stdout).toContain(`slot ${slotOf(resource)}: trusted`);

    holder.child.kill('SIGTERM');
    // The command died of the forwarded SIGTERM: run, after releasing, dies by it too (ending.ts).
    expect(await holder.done).toMatchObject({ code: null, signal: 'SIGTERM' });
    const free = JSON.parse((await cli(['status', resource, '--json', '--members', members]).done).stdout) as { held: boolean; members: Probe[] };
    expect(free.held).toBe(false);
    expect(free.members.map((member) => member.lock.held)).toEqual([false, false, false]);
  });

  it('run locks on all three, extends while the command runs, passes the fence, releases, and exits promptly', async () => {
    const resource = 'topologies-run';
    const print = nodeCommand('setTimeout(() => console.log(JSON.stringify({ fence: process.env.QUORUMLOCK_FENCE })), 1500)');
    // A 1 s ttl outlived by the 1.5 s command: extended at least once.
    const first = await cli(['run', '--members', members, '--resource', resource, '--ttl', '1s', '--fencing', '--json', ...print]).done;
    expect(
      first.stderr
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { event: string }).event),
    ).toEqual(['acquired', 'exit']);
    expect(first.code).toBe(0);
    const second = await cli(['run', '--members', members, '--resource', resource, '--ttl', '1s', '--fencing', ...print]).done;
    expect(second.code).toBe(0);
    const [a, b] = [first, second].map((run) => Number((JSON.parse(run.stdout) as { fence: string }).fence));
    expect(a).toBeGreaterThan(0);
    expect(b).toBeGreaterThan(a!);
    // Start-up plus the 1.5 s command: the CLI's 5 s fallback exit would show here.
    expect(second.ms).toBeLessThan(4500);
    expect(await valuesOf(resource)).toEqual([null, null, null]);
  });

  it('a paused cluster node: the cluster member is unhealthy, naming the node and its unreadable slots, within a bounded time', async () => {
    const node = cluster.nodes[0]!;
    await node.pause();
    try {
      // 1 s per command: the healthy members must answer within it on a busy machine too (the
      // paused node's commands time out after it, which bounds the run).
      const { code, stdout, ms } = await cli(['members', '--json', '--timeout', '1s', '--members', members]).done;
      const parsed = JSON.parse(stdout) as { healthy: number; members: Probe[] };
      // Still 2 of 3 healthy: the quorum holds (checked first, so a failure shows which member fell).
      expect(parsed.members.map((probe) => probe.healthy)).toEqual([true, false, true]);
      expect(parsed.healthy).toBe(2);
      expect(code).toBe(0);
      const member = parsed.members[1]!;
      expect(member).toMatchObject({ healthy: false, reachable: true });
      expect(member.error).toContain(`node ${address(node)}`);
      const slots = member.epoch.slots!;
      expect(slots.unreadable).toBeGreaterThan(0);
      expect(slots.trusted! + slots.unreadable!).toBe(16384);
      expect(ms).toBeLessThan(8000);
    } finally {
      await node.resume();
      await cluster.waitForOk();
    }
  });

  it('unreachable sentinels and seed nodes: reported as such by members and trust (which must not wait for ever), exit 69', async () => {
    const unreachable = ['--timeout', '300ms', '--members', 'redis+cluster://127.0.0.1:1+127.0.0.1:2,redis+sentinel://127.0.0.1:3/mymaster'];
    const [listed, trusted] = await Promise.all([cli(['members', '--json', ...unreachable]).done, cli(['trust', '--yes', '--json', ...unreachable]).done]);
    expect(listed.code).toBe(69);
    const parsed = JSON.parse(listed.stdout) as { healthy: number; members: Probe[] };
    expect(parsed.healthy).toBe(0);
    expect(parsed.members[0]).toMatchObject({ reachable: false, error: expect.stringMatching(/no seed node answered CLUSTER SLOTS/) });
    expect(parsed.members[1]).toMatchObject({ reachable: false, error: expect.stringMatching(/All sentinels are unreachable/) });
    // A Cluster that never connects queues its calls for ever: trust gives up on it by itself.
    expect(trusted.code).toBe(69);
    expect((JSON.parse(trusted.stdout) as { members: { trusted: boolean; error: string }[] }).members).toEqual([
      { member: 'cluster:127.0.0.1:1,127.0.0.1:2', trusted: false, error: expect.stringMatching(/no seed node answered CLUSTER SLOTS/) },
      { member: 'sentinel:mymaster@127.0.0.1:3/0', trusted: false, error: expect.stringMatching(/All sentinels are unreachable/) },
    ]);
    expect(trusted.ms).toBeLessThan(8000);
  });
});
