/**
 * The fake member and client of the interleaving exploration (test/model/): that they answer as
 * Redis and ioredis do where our scripts and quorumlock can tell, and refuse loudly elsewhere.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/index.js';
import { FakeRedis, Network } from './fake-client.js';
import { ErrorReply, FakeRedisServer, StatusReply } from './fake-redis.js';
import { EPOCH_KEY } from '../../src/store/keys.js';
import { decodeEpoch, extendArgs } from '../../src/store/protocol.js';
import { registerScripts, scriptCommand } from '../../src/clients/ioredis.js';

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function world() {
  const clock = new ManualClock(0);
  const network = new Network(clock, () => 1);
  network.trace = [];
  const server = new FakeRedisServer({ clock, port: 7001 });
  const run = async (ms: number) => {
    const end = clock.now() + ms;
    for (;;) {
      await settle();
      const next = clock.nextTimerAt();
      if (next === undefined || next > end) break;
      clock.advance(next - clock.now());
    }
    clock.advance(end - clock.now());
    await settle();
  };
  return { clock, network, server, run };
}

const evalLua = (server: FakeRedisServer, lua: string, keys: string[] = [], args: string[] = []) =>
  server.execute(['EVAL', lua, String(keys.length), ...keys, ...args]);

describe('fake Redis: the real Lua, as Redis runs it', () => {
  it('converts Lua values to replies as Redis does', () => {
    const { server } = world();
    // number → integer (truncated), true → 1, false → nil, a table stops at its first nil.
    expect(evalLua(server, "return {1, 2.9, -2.9, 'x', true, false, nil, 3}")).toEqual([1, 2, -2, 'x', 1, null]);
    expect(evalLua(server, 'return 7.99')).toBe(7);
    expect(evalLua(server, 'return false')).toBeNull();
    expect(evalLua(server, 'return nil')).toBeNull();
    expect(evalLua(server, "return {err = 'boom'}")).toEqual(new ErrorReply('boom'));
    expect(evalLua(server, "return redis.error_reply('no')")).toEqual(new ErrorReply('no'));
    expect(evalLua(server, "return redis.status_reply('FINE')")).toEqual(new StatusReply('FINE'));
  });

  it('converts replies to Lua values as Redis does: nil is false, status is {ok=}, errors raise from call and return from pcall', () => {
    const { server } = world();
    expect(evalLua(server, "return redis.call('GET', 'missing') == false")).toBe(1);
    expect(evalLua(server, "return redis.call('SET', 'k', 'v').ok")).toBe('OK');
    expect(evalLua(server, "return type(redis.call('EXISTS', 'k'))")).toBe('number');
    expect(evalLua(server, "redis.call('HSET', 'h', 'f', 'v'); return redis.call('GET', 'h')")).toMatchObject({
      message: expect.stringContaining('WRONGTYPE'),
    });
    expect(evalLua(server, "return redis.pcall('GET', 'h').err")).toMatch(/^WRONGTYPE/);
    expect(evalLua(server, "return redis.call('GET', {})")).toMatchObject({ message: expect.stringContaining('must be strings or integers') });
  });

  it('computes like Lua 5.1 (one number type): ms timestamps neither wrap at 32 bits nor print as floats', () => {
    const { clock, server } = world();
    clock.advance(1234.5678);
    const lua =
      "local t = redis.call('TIME'); local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000); return {tostring(ms), t[1] .. string.format('%06d', tonumber(t[2])), ms}";
    expect(evalLua(server, lua)).toEqual(['1700000001234', '1700000001234567', 1_700_000_001_234]);
    // Numbers passed to redis.call are formatted as Redis does (integers in full).
    expect(
      evalLua(server, "redis.call('SET', 'n', 1700000001234 + 1); redis.call('SET', 'f', 0.5); return {redis.call('GET', 'n'), redis.call('GET', 'f')}"),
    ).toEqual(['1700000001235', '0.5']);
    expect(evalLua(server, 'return unpack({1, 2})')).toBe(1);
  });

  it('refuses global variables, as Redis 7 does', () => {
    const { server } = world();
    expect(evalLua(server, 'x = 1')).toMatchObject({ message: expect.stringContaining('Script attempted to create global variable') });
    expect(evalLua(server, 'return y')).toMatchObject({ message: expect.stringContaining('nonexistent global variable') });
  });

  it('expires keys on the server clock, when now is past the expiry (Redis: now > when)', () => {
    const { clock, server } = world();
    server.execute(['SET', 'k', 'v', 'PX', '100']);
    clock.advance(60);
    expect(server.execute(['PTTL', 'k'])).toBe(40);
    clock.advance(40);
    expect(server.execute(['GET', 'k'])).toBe('v');
    expect(server.execute(['PTTL', 'k'])).toBe(0);
    clock.advance(1);
    expect(server.execute(['GET', 'k'])).toBeNull();
    expect(server.execute(['PTTL', 'k'])).toBe(-2);
    server.execute(['SET', 'p', 'v']);
    expect(server.execute(['PTTL', 'p'])).toBe(-1);
    expect(server.execute(['PEXPIRE', 'missing', '10'])).toBe(0);
  });

  it('sorted sets and hashes as the scripts use them; empty ones vanish', () => {
    const { server } = world();
    server.execute(['ZADD', 'z', '3', 'c', '1', 'b', '1', 'a']);
    expect(server.execute(['ZRANGE', 'z', '0', '0'])).toEqual(['a']);
    expect(server.execute(['ZRANK', 'z', 'c'])).toBe(2);
    expect(server.execute(['ZRANGEBYSCORE', 'z', '-inf', '(3'])).toEqual(['a', 'b']);
    expect(server.execute(['ZREM', 'z', 'a', 'b', 'c', 'd'])).toBe(3);
    expect(server.execute(['EXISTS', 'z'])).toBe(0);
    expect(server.execute(['HSET', 'h', 'a', '1', 'b', '2'])).toBe(2);
    expect(server.execute(['HMGET', 'h', 'a', 'x', 'b'])).toEqual(['1', null, '2']);
    expect(server.execute(['HDEL', 'h', 'a', 'b'])).toBe(2);
    expect(server.execute(['EXISTS', 'h'])).toBe(0);
  });

  it('refuses, loudly, what it does not implement', () => {
    const { server } = world();
    expect(server.execute(['OBJECT', 'ENCODING', 'k'])).toBeInstanceOf(ErrorReply);
    expect(server.execute(['ZADD', 'z', 'GT', '1', 'a'])).toBeInstanceOf(ErrorReply);
    expect(evalLua(server, "return redis.call('XADD', 's', '*', 'f', 'v')")).toBeInstanceOf(ErrorReply);
    expect(server.problems).toHaveLength(3);
  });

  it('INFO names the process (run_id) and the data lineage (master_replid): a restart changes both, a failover the replid, a resync the data and replid', () => {
    const { server } = world();
    const info = () => {
      const text = String(server.execute(['INFO', 'server', 'replication']));
      return {
        runId: /\nrun_id:([0-9a-f]{40})\r\n/.exec(text)?.[1],
        replid: /\nmaster_replid:([0-9a-f]{40})\r\n/.exec(text)?.[1],
        role: /\nrole:(\w+)\r\n/.exec(text)?.[1],
      };
    };
    const first = info();
    expect(first.runId).toMatch(/^[0-9a-f]{40}$/);
    expect(first.role).toBe('master');
    expect(String(server.execute(['INFO']))).toContain('maxmemory_policy:noeviction');
    server.execute(['SET', 'k', 'v']);
    server.failover();
    expect(info()).toMatchObject({ runId: first.runId });
    expect(info().replid).not.toBe(first.replid);
    server.restart({ keepData: true });
    expect(server.execute(['GET', 'k'])).toBe('v');
    const second = info();
    expect(second.runId).not.toBe(first.runId);
    server.resync(undefined);
    expect(server.execute(['GET', 'k'])).toBeNull();
    expect(info().runId).toBe(second.runId);
    server.restart({ keepData: false });
    expect(server.execute(['DBSIZE'])).toBe(0);
  });

  it('KEYS and ARGV are plain tables: a script may pop them (_bound.lua takes the epoch hash and id off)', () => {
    const { server } = world();
    const lua = 'local last = table.remove(KEYS); local first = table.remove(ARGV, 1); return {last, first, #KEYS, #ARGV, KEYS[1], ARGV[1]}';
    expect(evalLua(server, lua, ['k1', 'k2', 'epoch'], ['id', 'a1'])).toEqual(['epoch', 'id', 2, 1, 'k1', 'a1']);
    // Each run starts from its own KEYS and ARGV.
    expect(evalLua(server, 'return {#KEYS, #ARGV}', ['k'], ['a'])).toEqual([1, 1]);
  });

  it('evict(): the key is gone and INFO stats counts it in evicted_keys, per process (a restart starts from 0)', () => {
    const { server } = world();
    const evicted = () => /\r\nevicted_keys:(\d+)\r\n/.exec(String(server.execute(['INFO', 'stats'])))?.[1];
    expect(evicted()).toBe('0');
    server.execute(['SET', 'k', 'v', 'PX', '1000']);
    expect(server.evict('k')).toBe(true);
    expect(server.execute(['GET', 'k'])).toBeNull();
    expect(server.evict('k')).toBe(false);
    expect(evicted()).toBe('1');
    // What the scripts read (_epoch.lua: infoField over INFO stats).
    expect(evalLua(server, "return redis.call('INFO', 'stats')")).toContain('\r\nevicted_keys:1\r\n');
    server.restart({ keepData: true });
    expect(evicted()).toBe('0');
  });

  it('EVALSHA of a script this process has not seen: NOSCRIPT', () => {
    const { server } = world();
    const lua = 'return 1';
    expect(server.execute(['EVAL', lua, '0'])).toBe(1);
    const sha = String(server.execute(['SCRIPT', 'LOAD', lua]));
    expect(server.execute(['EVALSHA', sha, '0'])).toBe(1);
    server.restart({ keepData: true });
    expect(server.execute(['EVALSHA', sha, '0'])).toEqual(new ErrorReply('NOSCRIPT No matching script. Please use EVAL.'));
  });
});

describe('fake client: ioredis connection semantics', () => {
  it('re-sends what was written and not answered to the next process, then the offline queue, then what the ready listeners send', async () => {
    const { clock, network, server, run } = world();
    const client = new FakeRedis(server, network, { name: 'c', connected: true });
    network.hold('c', 7001, 'reply', Infinity);
    const first = client.call('SET', 'a', '1');
    await run(5); // ran on process 1; its reply is held
    expect(server.execute(['GET', 'a'])).toBe('1');
    server.kill();
    network.hold('c', 7001, 'reply', -Infinity);
    const offline = client.call('SET', 'b', '2');
    let ready: Promise<unknown> | undefined;
    client.on('ready', () => {
      ready = client.call('GET', 'a');
    });
    clock.setTimer(() => server.start({ keepData: false }), 120);
    await run(400);
    expect(await first).toBe('OK');
    expect(await offline).toBe('OK');
    expect(await ready).toBe('1');
    const order = network.trace!.filter((event) => event.what === 'run' && event.incarnation === 2).map((event) => `${event.command} ${event.args?.join(' ')}`);
    expect(order).toEqual(['INFO ', 'SET a 1', 'SET b 2', 'GET a']);
    client.disconnect();
  });

  it('FIFO per connection: a held request direction delays everything behind it, in order', async () => {
    const { network, server, run } = world();
    const client = new FakeRedis(server, network, { name: 'c', connected: true });
    network.hold('c', 7001, 'request', 50);
    const replies: string[] = [];
    void client.call('SET', 'k', '1').then(() => replies.push('set'));
    void client.call('GET', 'k').then((value) => replies.push(`get ${value}`));
    await run(40);
    expect(replies).toEqual([]);
    await run(20);
    expect(replies).toEqual(['set', 'get 1']);
    client.disconnect();
  });

  it('epoch.lua (quorumlockEpoch) through the client: EVAL, then EVALSHA; a bound write after it runs in that epoch, and is refused in another', async () => {
    const { clock, network, server, run } = world();
    const client = new FakeRedis(server, network, { name: 'c', connected: true });
    server.record = true;
    registerScripts(client as never);
    const epoch = scriptCommand(client, 'quorumlockEpoch');
    const extend = scriptCommand(client, 'quorumlockExtend');
    const first = epoch(1, EPOCH_KEY);
    const again = epoch(1, EPOCH_KEY);
    await run(10);
    const { id } = decodeEpoch(await first);
    expect(decodeEpoch(await again).id).toBe(id);
    server.execute(['SET', 'lock', 'v', 'PX', '1000']);
    const extended = extend(2, 'lock', EPOCH_KEY, id, ...extendArgs({ value: 'v', ttlMs: 5_000 }));
    await run(10);
    expect(await extended).toBe(1);
    clock.advance(1);
    server.restart({ keepData: true }); // a new run_id: a new epoch
    await run(500);
    const refused = extend(2, 'lock', EPOCH_KEY, id, ...extendArgs({ value: 'v', ttlMs: 5_000 })).catch((error: Error) => error.message);
    await run(10);
    expect(await refused).toMatch(/^QUORUMLOCK_EPOCH \d+$/);
    expect(await refused).not.toBe(`QUORUMLOCK_EPOCH ${id}`);
    const scripts = server.log.filter((entry) => entry.args[0] === 'EVAL' || entry.args[0] === 'EVALSHA').map((entry) => entry.args[0]);
    expect(scripts).toEqual(['EVAL', 'EVALSHA', 'EVAL', 'EVAL']);
    client.disconnect();
  });

  it('scripts: EVAL the first time on a socket, EVALSHA after; NOSCRIPT re-issues the command', async () => {
    const { network, server, run } = world();
    const client = new FakeRedis(server, network, { name: 'c', connected: true });
    server.record = true;
    client.defineCommand('answer', { lua: 'return ARGV[1]' });
    const call = (value: string) => (client.answer as (...args: unknown[]) => Promise<unknown>)(0, value);
    const first = call('a');
    const second = call('b');
    await run(10);
    expect([await first, await second]).toEqual(['a', 'b']);
    server.execute(['SCRIPT', 'FLUSH']);
    const third = call('c');
    await run(10);
    expect(await third).toBe('c');
    expect(server.log.map((entry) => entry.args[0])).toEqual(['EVAL', 'EVALSHA', 'SCRIPT', 'EVALSHA', 'EVAL']);
    client.disconnect();
  });
});
