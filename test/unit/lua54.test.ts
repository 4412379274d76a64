/**
 * Every script in src/lua, as shipped (src/lua/sources.ts: after the #include expansion), run by
 * a real Lua 5.4 interpreter (`lua5.4`, Debian package lua5.4), which is what Dragonfly embeds.
 * redis.call / redis.pcall go from the interpreter (test/unit/lua54/driver.lua) to this test,
 * which answers them from the fake Redis of test/model (fake-redis.ts). For representative calls
 * of each script it checks what an engine stricter than Redis would refuse:
 * - the script loads and runs (no syntax error, no global Lua 5.4 lacks, such as `unpack`);
 * - every number it returns, and every number it passes to a command, is an integer (Lua 5.4's
 *   `/` yields a float: 2.0 would reach a reply or a command as "2.0");
 * - every key a command touches is one of the script's KEYS (Dragonfly refuses undeclared keys;
 *   channels, INFO and TIME are not keys);
 * and that the replies are the ones the protocol expects. Every script that writes is called as the
 * client calls it (src/members/epochs.ts, src/lua/_bound.lua): the epoch read first (epoch.lua),
 * its hash last in KEYS, its id first in ARGV (`bound` below); a call bound to any other epoch
 * writes nothing and fails with QUORUMLOCK_EPOCH.
 * Skipped, with the reason printed, only when lua5.4 is not installed.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/clock.js';
import {
  acquireLua,
  acquireSharedLua,
  epochLua,
  extendLua,
  extendSharedLua,
  fenceLua,
  guardLua,
  leaveLua,
  permitsLua,
  releaseLua,
  trustLua,
} from '../../src/lua/sources.js';
import { EPOCH_KEY, resourceKeys, waiterChannel } from '../../src/store/keys.js';
import {
  acquireArgs,
  extendArgs,
  fenceArgs,
  leaveArgs,
  releaseArgs,
  SHARED_MARK,
  sharedName,
  trustArgs,
  type AcquireRequest,
} from '../../src/store/protocol.js';
import { boundLua } from '../../src/store/scripts.js';
import { ErrorReply, FakeRedisServer, StatusReply, type Reply } from '../model/fake-redis.js';

const LUA = process.env.QUORUMLOCK_LUA54 ?? 'lua5.4';
const found = spawnSync(LUA, ['-v'], { encoding: 'utf8' });
const luaVersion = found.status === 0 ? `${found.stdout}${found.stderr}`.trim() : undefined;
if (luaVersion === undefined) console.warn(`test/unit/lua54.test.ts skipped: no ${LUA} on the PATH (Debian: apt-get install -y lua5.4)`);

const DRIVER = fileURLToPath(new URL('./lua54/driver.lua', import.meta.url));

/** A value as the driver reports it; a float stays visible as { float }. */
type Value = number | string | null | Value[] | { err: string } | { ok: string } | { float: string } | { other: string };

const hex = (text: string) => Buffer.from(text, 'utf8').toString('hex');
const unhex = (text: string) => Buffer.from(text, 'hex').toString('utf8');

function decode(tokens: string[], at = 0): [Value, number] {
  const token = tokens[at]!;
  const [tag, rest] = [token[0], token.slice(1)];
  switch (tag) {
    case 's':
      return [unhex(rest), at + 1];
    case 'i':
      return [Number(rest), at + 1];
    case 'f':
      return [{ float: rest }, at + 1];
    case 'n':
      return [null, at + 1];
    case 'e':
      return [{ err: unhex(rest) }, at + 1];
    case 't':
      return [{ ok: unhex(rest) }, at + 1];
    case 'a': {
      const items: Value[] = [];
      let next = at + 1;
      for (let i = 0; i < Number(rest); i++) [items[i], next] = decode(tokens, next);
      return [items, next];
    }
    default:
      return [{ other: rest }, at + 1];
  }
}

function encodeReply(reply: Reply): string {
  if (reply === null) return 'n';
  if (typeof reply === 'number') return `i${reply}`;
  if (typeof reply === 'string') return `s${hex(reply)}`;
  if (reply instanceof ErrorReply) return `e${hex(reply.message)}`;
  if (reply instanceof StatusReply) return `t${hex(reply.status)}`;
  return [`a${reply.length}`, ...reply.map(encodeReply)].join(' ');
}

function hasFloat(value: Value): boolean {
  if (Array.isArray(value)) return value.some(hasFloat);
  return typeof value === 'object' && value !== null && 'float' in value;
}

/** Where a command's keys are among its arguments (after the name). Not listed: refused. */
const KEYS_OF: Record<string, 'first' | 'all' | 'none'> = {
  GET: 'first',
  SET: 'first',
  DEL: 'all',
  EXISTS: 'all',
  PTTL: 'first',
  PEXPIRE: 'first',
  ZADD: 'first',
  ZREM: 'first',
  ZRANGE: 'first',
  ZRANGEBYSCORE: 'first',
  ZREMRANGEBYSCORE: 'first',
  ZCARD: 'first',
  ZSCORE: 'first',
  ZRANK: 'first',
  HGET: 'first',
  HMGET: 'first',
  HSET: 'first',
  HDEL: 'first',
  TIME: 'none',
  INFO: 'none',
  PUBLISH: 'none', // a channel, not a key
};

interface Run {
  reply: Value;
  /** The commands the script ran, as strings. */
  calls: string[][];
  /** What a stricter engine would refuse: floats, undeclared keys, unknown commands. */
  problems: string[];
}

/** One lua5.4 process running the driver; one script run at a time. */
class Lua54 {
  readonly #child: ChildProcessWithoutNullStreams;
  #pending: { run: Run; keys: Set<string>; done: (run: Run) => void; fail: (error: Error) => void } | undefined;
  /** Rewrites what a command answers (e.g. INFO of another engine); default: the fake's reply. */
  answer: (args: string[]) => Reply;

  constructor(readonly server: FakeRedisServer) {
    this.answer = (args) => server.execute(args);
    this.#child = spawn(LUA, [DRIVER]);
    this.#child.stderr.on('data', (chunk: Buffer) => this.#pending?.fail(new Error(`lua5.4: ${chunk.toString()}`)));
    createInterface({ input: this.#child.stdout }).on('line', (line) => this.#line(line));
  }

  #line(line: string): void {
    const pending = this.#pending;
    if (!pending) throw new Error(`driver said ${line} between runs`);
    const [kind, ...tokens] = line.split(' ');
    if (kind === 'CALL') {
      const values = tokens.slice(1).map((token) => decode([token])[0]);
      const args = values.map((value) => {
        if (typeof value === 'string' || typeof value === 'number') return String(value);
        pending.run.problems.push(`non-string, non-integer argument ${JSON.stringify(value)} in ${JSON.stringify(values)}`);
        return typeof value === 'object' && value !== null && 'float' in value ? value.float : String(value);
      });
      pending.run.calls.push(args);
      const name = (args[0] ?? '').toUpperCase();
      const where = KEYS_OF[name];
      if (where === undefined) pending.run.problems.push(`command ${name} is not in this test's key table: add where its keys are`);
      const touched = where === 'all' ? args.slice(1) : where === 'first' ? args.slice(1, 2) : [];
      for (const key of touched) if (!pending.keys.has(key)) pending.run.problems.push(`${name} touches ${key}, which is not in KEYS`);
      this.#child.stdin.write(`${encodeReply(this.answer(args))}\n`);
      return;
    }
    this.#pending = undefined;
    if (kind === 'DONE') {
      const [reply] = decode(tokens);
      if (hasFloat(reply)) pending.run.problems.push(`a float in the reply ${JSON.stringify(reply)}`);
      pending.run.reply = reply;
      // A run outside the fake's EVAL: counted as Redis counts a script call (INFO commandstats).
      this.server.countCall('evalsha', typeof reply === 'object' && reply !== null && 'err' in reply);
      pending.done(pending.run);
    } else pending.fail(new Error(`script failed: ${unhex(tokens[0] ?? '')}`));
  }

  run(name: string, script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<Run> {
    if (this.#pending) throw new Error('one run at a time');
    return new Promise<Run>((done, fail) => {
      this.#pending = { run: { reply: null, calls: [], problems: [] }, keys: new Set(keys), done, fail };
      const words = ['RUN', hex(name), hex(script), String(keys.length), ...[...keys, ...args.map(String)].map(hex)];
      this.#child.stdin.write(`${words.join(' ')}\n`);
    });
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}

const request = (value: string, overrides: Partial<AcquireRequest> = {}): AcquireRequest => ({
  value,
  ttlMs: 10_000,
  waiter: { id: `waiter-${value}`, ticket: 1, leaseMs: 0 },
  quarantineMs: 60_000,
  fencing: true,
  ...overrides,
});

/** Where a bound call goes: which epoch hash, and (`to`) an id to bind it to other than the one last read. */
interface Binding {
  epochKey?: string;
  to?: string;
}

/** Commands that write (what a refused call must not run). */
const WRITES = new Set(['SET', 'DEL', 'PEXPIRE', 'ZADD', 'ZREM', 'ZREMRANGEBYSCORE', 'HSET', 'HDEL', 'PUBLISH']);
const writesOf = (run: Run) => run.calls.filter((call) => WRITES.has((call[0] ?? '').toUpperCase()));

describe.skipIf(luaVersion === undefined)(`every script under Lua 5.4 (${luaVersion ?? 'absent'})`, () => {
  let clock: ManualClock;
  let server: FakeRedisServer;
  let lua: Lua54;

  beforeAll(() => {
    clock = new ManualClock();
    server = new FakeRedisServer({ clock, port: 7001 });
    lua = new Lua54(server);
  });
  afterAll(() => lua?.close());

  /** The epoch id last read per epoch hash, as the client's EpochBook keeps it; each test reads its own. */
  const known = new Map<string, string>();
  beforeEach(() => known.clear());

  /** Runs `script` and requires a clean run: no floats, no undeclared key, no unknown command. */
  async function clean(name: string, script: string, keys: readonly string[], args: readonly (string | number)[]): Promise<Run> {
    const run = await lua.run(name, script, keys, args);
    expect(run.problems, `${name}: ${run.calls.map((call) => call.join(' ')).join(' | ')}`).toEqual([]);
    return run;
  }

  /** epoch.lua on `epochKey` (it begins an epoch where there is none): the id, remembered for the bound calls after it. */
  async function readEpoch(epochKey = EPOCH_KEY): Promise<string> {
    const run = await clean('epoch.lua', epochLua, [epochKey], []);
    expect(run.reply).toEqual([expect.stringMatching(/^\d{16}$/), expect.any(Number), expect.any(Number), expect.any(String), expect.any(String)]);
    const id = (run.reply as Value[])[0] as string;
    known.set(epochKey, id);
    return id;
  }

  /**
   * A write as the client sends it (members/epochs.ts): its KEYS then the epoch hash, the id of the
   * epoch last read there (read first when none is; `to`: another id) then its ARGV.
   */
  async function bound(
    name: string,
    script: string,
    keys: readonly string[],
    args: readonly string[],
    { epochKey = EPOCH_KEY, to }: Binding = {},
  ): Promise<Run> {
    const id = to ?? known.get(epochKey) ?? (await readEpoch(epochKey));
    return clean(name, script, [...keys, epochKey], [id, ...args]);
  }

  const acquire = (
    resources: string[],
    req: AcquireRequest,
    { settled = '', script = acquireLua, ...binding }: Binding & { settled?: string; script?: string } = {},
  ) => bound('acquire.lua', script, resourceKeys(resources), acquireArgs(req, settled), binding);
  const extend = (keys: string[], value: string, binding?: Binding) => bound('extend.lua', extendLua, keys, extendArgs({ value, ttlMs: 10_000 }), binding);

  it('the interpreter is Lua 5.4, and it refuses what Redis 7 refuses (unknown globals, `unpack`)', async () => {
    expect(luaVersion).toMatch(/Lua 5\.4/);
    await expect(lua.run('probe', 'return unpack({1})', [], [])).rejects.toThrow(/nonexistent global variable 'unpack'/);
    await expect(lua.run('probe', 'x = 1', [], [])).rejects.toThrow(/create global/);
    const run = await lua.run('probe', 'return 5 / 2', [], []);
    expect(run.problems).toEqual([expect.stringMatching(/a float in the reply/)]);
  });

  it('acquire, trust, fence, extend, permits, release, leave and guard run clean and reply as the protocol says', async () => {
    // A brand-new epoch, begun by the first read (fresh: no hash before): 0 ms old; then quarantined, the fence counter untrusted.
    const epoch = await clean('epoch.lua', epochLua, [EPOCH_KEY], []);
    expect(epoch.reply).toEqual([expect.any(String), 0, 1, server.runId, expect.any(String)]);
    const epochId = (epoch.reply as Value[])[0] as string;
    known.set(EPOCH_KEY, epochId);
    const first = await acquire(['lua54:a'], request('owner-a'));
    expect(first.reply).toEqual([3, 60_000, 0, 0, epochId]);

    // trust 'new': the quarantine left before (an integer), then genesis.
    expect((await bound('trust.lua', trustLua, [], trustArgs('new', 60_000))).reply).toBe(60_000);

    // A free key in a trusted epoch: locked, counter 0 and trusted.
    expect((await acquire(['lua54:b'], request('owner-b'))).reply).toEqual([1, 0, 0, 1, epochId]);
    // The epoch already seen settled, no fencing: the short reply.
    expect((await acquire(['lua54:c'], request('owner-c', { fencing: false }), { settled: epochId })).reply).toBe(1);
    // Two resources at once (10 keys + the epoch: resourceCount's arithmetic).
    expect((await acquire(['lua54:d1', 'lua54:d2'], request('owner-d'))).reply).toEqual([1, 0, 0, 1, epochId]);

    // A held key: refused, and the caller joins the line (place 0).
    clock.advance(1_000);
    const held = await acquire(['lua54:a'], request('other', { waiter: { id: 'proc.1.w1', ticket: 2, leaseMs: 5_000 } }));
    expect(held.reply).toEqual([0, 9_000, 0, epochId, 0, 0]);

    // The epoch's age, on the member's clock; fresh: it began on a member with no epoch hash.
    expect((await clean('epoch.lua', epochLua, [EPOCH_KEY], [])).reply).toEqual([epochId, 1_000, 1, server.runId, expect.any(String)]);

    // extend: held by us, by another, gone.
    expect((await extend(['lua54:a'], 'owner-a')).reply).toBe(1);
    expect((await extend(['lua54:a'], 'other')).reply).toBe(-1);
    expect((await extend(['lua54:none'], 'owner-a')).reply).toBe(0);

    // fence: a propose while holding, then a sync with a floor, in the epoch named.
    const propose = await bound('fence.lua', fenceLua, ['lua54:a'], fenceArgs({ value: 'owner-a', token: 5, mode: 'propose', epoch: epochId }));
    expect(propose.reply).toEqual([1, 0, 1, epochId, 5, 1]);
    const sync = await bound('fence.lua', fenceLua, ['lua54:b'], fenceArgs({ value: 'owner-b', token: 7, mode: 'sync', epoch: epochId, floor: 3 }));
    expect(sync.reply).toEqual([1, 0, 1, epochId, 7, 1]);
    // Another epoch named by the attempt (fence.lua's own argument): refused.
    expect((await bound('fence.lua', fenceLua, ['lua54:a'], fenceArgs({ value: 'owner-a', token: 9, mode: 'sync', epoch: 'other', floor: 3 }))).reply).toEqual([
      0,
      0,
      0,
      '',
      0,
      0,
    ]);

    // trust 'floor': the floor now.
    expect((await bound('trust.lua', trustLua, [], trustArgs('floor', 10))).reply).toBe(10);

    // permits (a read: unbound): each lock key's PTTL (-2: absent), then each line's length.
    expect((await clean('permits.lua', permitsLua, resourceKeys(['lua54:a', 'lua54:none']), [])).reply).toEqual([
      [10_000, -2],
      [1, 0],
    ]);

    // release by the owner: one key deleted, the first waiter told on its channel.
    const release = await bound('release.lua', releaseLua, resourceKeys(['lua54:a']), releaseArgs({ value: 'owner-a' }));
    expect(release.reply).toBe(1);
    expect(release.calls).toContainEqual(['PUBLISH', waiterChannel('proc.1.w1'), 'proc.1.w1']);
    expect(waiterChannel('proc.1.w1')).toBe('quorumlock:waiter:proc.1');

    // leave: the waiter gives up its place.
    expect((await bound('leave.lua', leaveLua, resourceKeys(['lua54:a']), leaveArgs({ waiterId: 'proc.1.w1' }))).reply).toBe(1);

    // guard (not a script of the members' epochs: unbound): a current token writes, an older one is turned away.
    expect((await clean('guard.lua', guardLua, ['lua54:data', 'lua54:data:fence'], ['v1', 3])).reply).toBe(1);
    expect((await clean('guard.lua', guardLua, ['lua54:data', 'lua54:data:fence'], ['v0', 2])).reply).toBe(0);
  });

  it('a write bound to another epoch writes nothing and names the epoch it found (QUORUMLOCK_EPOCH), whatever the script', async () => {
    const epochKey = `${EPOCH_KEY}:stale`;
    const at = { epochKey };
    const current = await readEpoch(epochKey);
    expect((await bound('trust.lua', trustLua, [], trustArgs('new', 60_000), at)).reply).toBe(60_000);
    // Something for each script to act on: a held lock, a waiter in line, a reader, a fence counter.
    await acquire(['lua54:st'], request('holder', { fencing: false }), at);
    await acquire(['lua54:st'], request('waiting', { fencing: false, waiter: { id: 'proc.3.w', ticket: 2, leaseMs: 5_000 } }), at);
    const reader = request(sharedName('reader'), { fencing: false, waiter: { id: sharedName('w-reader'), ticket: 3, leaseMs: 0 } });
    expect(((await bound('acquireShared.lua', acquireSharedLua, resourceKeys(['lua54:st-r']), acquireArgs(reader, ''), at)).reply as Value[])[0]).toBe(1);
    await bound('fence.lua', fenceLua, ['lua54:st'], fenceArgs({ value: 'holder', token: 4, mode: 'sync', epoch: current }), at);
    const before = server.dump();

    // An older epoch of this member (a call ioredis re-sent after a restart, a late copy), and one it never had.
    for (const to of [String(BigInt(current) - 1n), '']) {
      const stale = { epochKey, to };
      const runs = [
        await acquire(['lua54:st-free'], request('late'), stale),
        await acquire(['lua54:st'], request('waiting', { fencing: false, waiter: { id: 'proc.3.w', ticket: 2, leaseMs: 5_000 } }), stale),
        await bound(
          'acquireShared.lua',
          acquireSharedLua,
          resourceKeys(['lua54:st-free']),
          acquireArgs(request(sharedName('late'), { fencing: false, waiter: { id: sharedName('w-late'), ticket: 4, leaseMs: 0 } }), ''),
          stale,
        ),
        await extend(['lua54:st'], 'holder', stale),
        await bound('extendShared.lua', extendSharedLua, resourceKeys(['lua54:st-r']), extendArgs({ value: sharedName('reader'), ttlMs: 20_000 }), stale),
        await bound('release.lua', releaseLua, resourceKeys(['lua54:st']), releaseArgs({ value: 'holder' }), stale),
        await bound('leave.lua', leaveLua, resourceKeys(['lua54:st']), leaveArgs({ waiterId: 'proc.3.w' }), stale),
        await bound('fence.lua', fenceLua, ['lua54:st'], fenceArgs({ value: 'holder', token: 9, mode: 'propose', epoch: current }), stale),
        await bound('trust.lua', trustLua, [], trustArgs('new', 60_000), stale),
        await bound('trust.lua', trustLua, [], trustArgs('floor', 100), stale),
      ];
      for (const run of runs) {
        expect(run.reply).toEqual({ err: `QUORUMLOCK_EPOCH ${current}` });
        expect(writesOf(run)).toEqual([]);
      }
    }
    expect(server.dump()).toEqual(before);
    // Bound to the epoch it is in, the same call acts.
    expect((await extend(['lua54:st'], 'holder', at)).reply).toBe(1);
  });

  it('stale waiters are dropped by acquire and release (unpack of the stale list)', async () => {
    await acquire(['lua54:s'], request('holder', { fencing: false }));
    // One waiter that stays (the line outlives the stale ones), two whose leases lapse.
    await acquire(['lua54:s'], request('long', { fencing: false, waiter: { id: 'oldproc.5', ticket: 3, leaseMs: 60_000 } }));
    await acquire(['lua54:s'], request('late-1', { fencing: false, waiter: { id: 'late-1', ticket: 4, leaseMs: 1_000 } }));
    await acquire(['lua54:s'], request('late-2', { fencing: false, waiter: { id: 'late-2', ticket: 5, leaseMs: 1_000 } }));
    clock.advance(1_500);
    const again = await acquire(['lua54:s'], request('late-3', { fencing: false, waiter: { id: 'late-3', ticket: 6, leaseMs: 60_000 } }));
    expect(again.calls).toContainEqual(['ZREM', resourceKeys(['lua54:s'])[1], 'late-1', 'late-2']);
    expect((again.reply as Value[])[2]).toBe(1); // behind 'oldproc.5' only
    await acquire(['lua54:s'], request('late-4', { fencing: false, waiter: { id: 'late-4', ticket: 7, leaseMs: 1_000 } }));
    clock.advance(1_500);
    const release = await bound('release.lua', releaseLua, resourceKeys(['lua54:s']), releaseArgs({ value: 'holder' }));
    expect(release.reply).toBe(1);
    expect(release.calls).toContainEqual(['ZREM', resourceKeys(['lua54:s'])[1], 'late-4']);
    // An id of quorumlock 0.1.0 (one '.'): its own channel, the lock key as the message.
    expect(release.calls).toContainEqual(['PUBLISH', 'quorumlock:waiter:oldproc.5', 'lua54:s']);
  });

  it('shared locks: acquireShared, extendShared, fence and release of a reader, and the writer they keep out, run clean', async () => {
    // The mark the Lua spells is protocol.ts's.
    for (const script of [acquireSharedLua, releaseLua, fenceLua]) expect(script).toContain(`'${SHARED_MARK}'`);
    const shared = (id: string, overrides: Partial<AcquireRequest> = {}) =>
      request(sharedName(id), { fencing: false, waiter: { id: sharedName(`w-${id}`), ticket: 10, leaseMs: 0 }, ...overrides });
    const acquireShared = (resources: string[], req: AcquireRequest) =>
      bound('acquireShared.lua', acquireSharedLua, resourceKeys(resources), acquireArgs(req, ''));
    const extendShared = (value: string) => bound('extendShared.lua', extendSharedLua, resourceKeys(['lua54:r']), extendArgs({ value, ttlMs: 20_000 }));
    const release = (value: string) => bound('release.lua', releaseLua, resourceKeys(['lua54:r']), releaseArgs({ value }));
    const [, , , readers] = resourceKeys(['lua54:r']);
    // Two readers at once; then a writer is refused (taken, for as long as the later reader lives).
    expect(((await acquireShared(['lua54:r'], shared('r1'))).reply as Value[])[0]).toBe(1);
    clock.advance(100);
    const second = await acquireShared(['lua54:r'], shared('r2', { fencing: true }));
    expect(second.reply).toEqual([1, 0, expect.any(Number), expect.any(Number), expect.any(String)]);
    const writer = await acquire(['lua54:r'], request('writer', { fencing: false, waiter: { id: 'proc.2.ww', ticket: 11, leaseMs: 5_000 } }));
    expect(writer.reply).toEqual([0, 10_000, 0, expect.any(String), -1, 0]);
    // A reader arriving after the waiting writer is kept behind it (queued: free of writers, not of the line).
    const late = await acquireShared(['lua54:r'], shared('r3', { waiter: { id: sharedName('listener.7.r3'), ticket: 12, leaseMs: 5_000 } }));
    expect(late.reply).toEqual([2, -1, 1, expect.any(String), -1, 0]);
    // extendShared: alive → extended; unknown → gone. A reader's propose checks its entry.
    expect((await extendShared(sharedName('r1'))).reply).toBe(1);
    expect((await extendShared(sharedName('nobody'))).reply).toBe(0);
    const epochId = (second.reply as Value[])[4] as string;
    const propose = await bound(
      'fence.lua',
      fenceLua,
      ['lua54:r', readers!],
      fenceArgs({ value: sharedName('r2'), token: 50, mode: 'propose', epoch: epochId }),
    );
    expect((propose.reply as Value[])[0]).toBe(1);
    const stranger = await bound(
      'fence.lua',
      fenceLua,
      ['lua54:r', readers!],
      fenceArgs({ value: sharedName('nobody'), token: 60, mode: 'propose', epoch: epochId }),
    );
    expect((stranger.reply as Value[])[0]).toBe(0);
    // Releases touch only their own entry; the last one wakes the writer at the head.
    const first = await release(sharedName('r1'));
    expect(first.reply).toBe(1);
    expect(first.calls.some((call) => call[0] === 'PUBLISH')).toBe(false);
    const last = await release(sharedName('r2'));
    expect(last.reply).toBe(1);
    expect(last.calls).toContainEqual(['PUBLISH', waiterChannel('proc.2.ww'), 'proc.2.ww']);
    // The writer enters; its release wakes the reader that waited behind it.
    expect(
      ((await acquire(['lua54:r'], request('writer', { fencing: false, waiter: { id: 'proc.2.ww', ticket: 11, leaseMs: 5_000 } }))).reply as Value[])[0],
    ).toBe(1);
    await bound('leave.lua', leaveLua, resourceKeys(['lua54:r']), leaveArgs({ waiterId: 'proc.2.ww' }));
    const handover = await release('writer');
    expect(handover.calls).toContainEqual(['PUBLISH', 'quorumlock:waiter:listener.7', sharedName('listener.7.r3')]);
    // An expired reader no longer keeps a writer out.
    expect(((await acquireShared(['lua54:r2'], shared('short', { ttlMs: 1_000 }))).reply as Value[])[0]).toBe(1);
    clock.advance(1_001);
    expect(((await acquire(['lua54:r2'], request('w2', { fencing: false }))).reply as Value[])[0]).toBe(1);
  });

  it('a bound copy of acquire and of epoch.lua (binding.ts) runs too', async () => {
    const read = await clean('epoch.lua', boundLua(epochLua, server.runId!, 'abc123'), [EPOCH_KEY], []);
    expect(read.calls.some((call) => call[0] === 'INFO' && call[1] === 'server')).toBe(false);
    known.set(EPOCH_KEY, (read.reply as Value[])[0] as string);
    const run = await acquire(['lua54:bound'], request('owner-bound'), { script: boundLua(acquireLua, server.runId!, 'abc123') });
    expect((run.reply as Value[])[0]).toBe(1);
    expect(run.calls.some((call) => call[0] === 'INFO' && call[1] === 'server')).toBe(false);
  });

  it('a malformed call is refused with an error reply, not a float or a crash', async () => {
    const run = await bound('acquire.lua', acquireLua, ['lua54:x', 'lua54:y'], acquireArgs(request('v'), ''));
    expect(run.reply).toEqual({ err: expect.stringMatching(/expected 5 keys per resource/) });
    const release = await bound('release.lua', releaseLua, ['lua54:x', 'lua54:y'], releaseArgs({ value: 'v' }));
    expect(release.reply).toEqual({ err: expect.stringMatching(/expected 5 keys per resource/) });
    const shared = await bound('acquireShared.lua', acquireSharedLua, ['lua54:x', 'lua54:y'], acquireArgs(request(sharedName('v')), ''));
    expect(shared.reply).toEqual({ err: expect.stringMatching(/expected 5 keys per resource/) });
    const fence = await bound('fence.lua', fenceLua, [], fenceArgs({ value: 'v', token: 1, mode: 'propose', epoch: '' }));
    expect(fence.reply).toEqual({ err: expect.stringMatching(/expected the lock keys/) });
    for (const reply of [run, release, shared, fence]) expect(writesOf(reply)).toEqual([]);
  });

  it('without a run id in INFO (Dragonfly), the epoch is kept from call to call, and a new replication id starts a new one', async () => {
    // INFO server without run_id, and the replication section's last line without its \r\n.
    lua.answer = (args) => {
      const reply = server.execute(args);
      if (args[0] !== 'INFO' || typeof reply !== 'string') return reply;
      return reply.replace(/run_id:[0-9a-f]+\r\n/, '').replace(/\r\n$/, '');
    };
    try {
      const epochKey = `${EPOCH_KEY}:df`;
      const call = (resource: string) => acquire([resource], request(resource), { epochKey });
      const first = (await call('lua54:df1')).reply as Value[];
      clock.advance(10);
      const second = (await call('lua54:df2')).reply as Value[];
      expect(second[4]).toBe(first[4]); // the same epoch: '' == '' is not a new process
      expect(second[1]).toBe(60_000 - 10); // its quarantine runs on
      expect(server.execute(['HGET', epochKey, 'run_id'])).toBe('');
      server.failover(); // a new master_replid
      const refused = (await call('lua54:df3')).reply as { err: string };
      expect(refused.err).toMatch(/^QUORUMLOCK_EPOCH \d+$/);
      const third = (await acquire(['lua54:df3'], request('lua54:df3'), { epochKey, to: refused.err.split(' ')[1] })).reply as Value[];
      expect(third[4]).not.toBe(first[4]);
      expect(third[1]).toBe(60_000); // a new epoch: a whole quarantine
    } finally {
      lua.answer = (args) => server.execute(args);
    }
  });

  it('a write sent into a new epoch (a failover, a restart) sets none of its keys, whatever the script; the epoch it names is the one to bind to next', async () => {
    // One epoch hash per script, each read and held in before the failover, so that each script is the first to run in the new epoch.
    const scripts = ['acquire', 'acquireShared', 'extend', 'extendShared', 'release', 'leave', 'fence', 'trust'] as const;
    const epochKeyOf = (script: string) => `${EPOCH_KEY}:new:${script}`;
    const old = new Map<string, string>();
    for (const script of scripts) {
      const epochKey = epochKeyOf(script);
      old.set(script, await readEpoch(epochKey));
      expect(((await acquire([`lua54:fo:${script}`], request('holder', { fencing: false }), { epochKey })).reply as Value[])[0]).toBe(3);
    }
    const reader = request(sharedName('reader'), { fencing: false, waiter: { id: sharedName('w-reader'), ticket: 3, leaseMs: 0 } });
    const sends: Record<(typeof scripts)[number], (epochKey: string) => Promise<Run>> = {
      acquire: (epochKey) => acquire(['lua54:fo2'], request('late', { fencing: false }), { epochKey }),
      acquireShared: (epochKey) => bound('acquireShared.lua', acquireSharedLua, resourceKeys(['lua54:fo2']), acquireArgs(reader, ''), { epochKey }),
      extend: (epochKey) => extend(['lua54:fo:extend'], 'holder', { epochKey }),
      extendShared: (epochKey) =>
        bound('extendShared.lua', extendSharedLua, resourceKeys(['lua54:fo2']), extendArgs({ value: sharedName('reader'), ttlMs: 1_000 }), { epochKey }),
      release: (epochKey) => bound('release.lua', releaseLua, resourceKeys(['lua54:fo:release']), releaseArgs({ value: 'holder' }), { epochKey }),
      leave: (epochKey) => bound('leave.lua', leaveLua, resourceKeys(['lua54:fo:leave']), leaveArgs({ waiterId: 'waiter-holder' }), { epochKey }),
      fence: (epochKey) =>
        bound('fence.lua', fenceLua, ['lua54:fo:fence'], fenceArgs({ value: 'holder', token: 3, mode: 'sync', epoch: old.get('fence')!, floor: 1 }), {
          epochKey,
        }),
      trust: (epochKey) => bound('trust.lua', trustLua, [], trustArgs('new', 60_000), { epochKey }),
    };
    // An epoch id is the member's TIME in µs when it began: a later epoch has another.
    clock.advance(1);
    server.failover(); // a new master_replid: the data's lineage changed
    const data = () => Object.fromEntries(Object.entries(server.dump()).filter(([key]) => !key.startsWith(`${EPOCH_KEY}:new:`)));
    const before = data();
    for (const script of scripts) {
      const epochKey = epochKeyOf(script);
      const late = await sends[script](epochKey);
      const found = /^QUORUMLOCK_EPOCH (\d+)$/.exec((late.reply as { err?: string }).err ?? '')?.[1];
      expect(found, `${script}: ${JSON.stringify(late.reply)}`).toBeDefined();
      expect(found).not.toBe(old.get(script));
      // The only write is the new epoch's hash (currentEpoch): no lock key, no line, no entry.
      expect(writesOf(late).every((call) => call[1] === epochKey)).toBe(true);
      expect(server.execute(['HGET', epochKey, 'id'])).toBe(found);
      // A second call bound to the old epoch is refused as well, naming the same new epoch.
      expect((await sends[script](epochKey)).reply).toEqual({ err: `QUORUMLOCK_EPOCH ${found}` });
      known.set(epochKey, found!);
    }
    expect(data()).toEqual(before);
    // Bound to the epoch found, the acquire runs: quarantined, a new epoch is not trusted.
    const again = await sends.acquire(epochKeyOf('acquire'));
    expect(again.reply).toEqual([3, 60_000, 0, 0, known.get(epochKeyOf('acquire'))]);
    // epoch.lua says it replaced another (not fresh): an operator's trust begun before it refuses it.
    expect((await clean('epoch.lua', epochLua, [epochKeyOf('trust')], [])).reply).toEqual([
      known.get(epochKeyOf('trust')),
      0,
      0,
      server.runId,
      expect.any(String),
    ]);
  });

  it('on a server that is not a plain master, epoch.lua and every write fail with QUORUMLOCK_ROLE and write nothing', async () => {
    const epochKey = `${EPOCH_KEY}:role`;
    const id = await readEpoch(epochKey);
    server.role = 'slave';
    try {
      const read = await clean('epoch.lua', epochLua, [epochKey], []);
      expect(read.reply).toEqual({ err: expect.stringMatching(/^QUORUMLOCK_ROLE /) });
      const write = await acquire(['lua54:role'], request('v'), { epochKey, to: id });
      expect(write.reply).toEqual({ err: expect.stringMatching(/^QUORUMLOCK_ROLE /) });
      expect(writesOf(read)).toEqual([]);
      expect(writesOf(write)).toEqual([]);
    } finally {
      server.role = 'master';
    }
  });

  it('an eviction ends the epoch for acquire (a yes there rests on a key being absent), not for extend (it rests on our key being present)', async () => {
    const epochKey = `${EPOCH_KEY}:ev`;
    const at = { epochKey };
    const before = await readEpoch(epochKey);
    const evictedKeys = () => /\r\nevicted_keys:(\d+)\r\n/.exec(String(server.execute(['INFO', 'stats'])))![1];
    expect(server.execute(['HGET', epochKey, 'evicted'])).toBe(evictedKeys());
    expect(((await acquire(['lua54:ev1'], request('holder', { fencing: false }), at)).reply as Value[])[0]).toBe(3);
    expect(((await acquire(['lua54:ev2'], request('victim', { fencing: false }), at)).reply as Value[])[0]).toBe(3);

    // The server evicts the victim's key (an eviction policy switched on at runtime: INFO stats counts it).
    clock.advance(1);
    expect(server.evict(resourceKeys(['lua54:ev2'])[0]!)).toBe(true);
    expect(server.execute(['HGET', epochKey, 'evicted'])).not.toBe(evictedKeys());

    // extend skips the check: the holder's key is there, still in this epoch; the evicted one reads gone, and is not set again.
    expect((await extend(['lua54:ev1'], 'holder', at)).reply).toBe(1);
    expect((await extend(['lua54:ev2'], 'victim', at)).reply).toBe(0);
    expect(server.execute(['HGET', epochKey, 'id'])).toBe(before);

    // An acquire of the evicted resource, in the same epoch as far as the client knows: the epoch ends, nothing is set.
    const intruder = await acquire(['lua54:ev2'], request('intruder', { fencing: false }), at);
    const after = /^QUORUMLOCK_EPOCH (\d+)$/.exec((intruder.reply as { err?: string }).err ?? '')?.[1];
    expect(after).toBeDefined();
    expect(after).not.toBe(before);
    expect(server.execute(['EXISTS', resourceKeys(['lua54:ev2'])[0]!])).toBe(0);
    expect(server.execute(['HGET', epochKey, 'evicted'])).toBe(evictedKeys());
    // From now on the old epoch's writes are refused (the holder's extend too), and the new one starts its quarantine.
    expect((await extend(['lua54:ev1'], 'holder', at)).reply).toEqual({ err: `QUORUMLOCK_EPOCH ${after}` });
    expect((await acquire(['lua54:ev2'], request('intruder', { fencing: false }), { epochKey, to: after })).reply).toEqual([3, 60_000, 0, 0, after]);

    // acquireShared grants on the absence of a writer: an eviction ends its epoch as well.
    clock.advance(1);
    expect(server.evict(resourceKeys(['lua54:ev1'])[0]!)).toBe(true);
    const reader = request(sharedName('r'), { fencing: false, waiter: { id: sharedName('w-r'), ticket: 5, leaseMs: 0 } });
    const shared = await bound('acquireShared.lua', acquireSharedLua, resourceKeys(['lua54:ev1']), acquireArgs(reader, ''), { epochKey, to: after });
    expect(shared.reply).toEqual({ err: expect.stringMatching(/^QUORUMLOCK_EPOCH \d+$/) });
    expect((shared.reply as { err: string }).err).not.toBe(`QUORUMLOCK_EPOCH ${after}`);
    expect(server.execute(['EXISTS', resourceKeys(['lua54:ev1'])[3]!])).toBe(0);
  });
});
