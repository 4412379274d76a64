/**
 * The bad-input table: every invalid setting, member list, resource list, ttl and per-call option
 * fails in src/options/check.ts with the right error class, `error.parameter` set, and a message that
 * names the parameter and what it accepts. Pure: the ioredis clients here are lazyConnect and
 * never connect.
 */
import Redis from 'ioredis';
import pino from 'pino';
import { createClient, createCluster, createSentinel } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock/index.js';
import { memberIdOf as memberId } from '../../src/clients/id.js';
import { describeClient } from '../../src/clients/index.js';
import { retryDelayMs } from '../../src/quorum/wait.js';
import { ArgumentRangeError, ArgumentTypeError, QuorumlockError, type ArgumentError } from '../../src/errors.js';
import { checkAcquireOptions, checkMembers, checkResources, checkSettings, checkTtl, minTtl } from '../../src/options/check.js';
import { defaults, MAX_TTL_MS, type RedlockOptions, type Settings } from '../../src/options/settings.js';

const lazy: Redis[] = [];
function lazyClient(options: { host?: string; port?: number; db?: number; stringNumbers?: boolean } = {}): Redis {
  const client = new Redis({ ...options, lazyConnect: true });
  lazy.push(client);
  return client;
}
afterAll(() => {
  for (const client of lazy) {
    expect(client.status).toBe('wait'); // nothing in this file ever connects
    client.disconnect();
  }
});

interface BadRow {
  label: string;
  run: () => unknown;
  kind: typeof TypeError | typeof RangeError;
  parameter: string;
  /** What the message must also say: the allowed range, or why the value is refused. */
  says: string[];
}

function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, but the call returned');
}

function expectRejected({ run, kind, parameter, says }: BadRow): ArgumentError {
  const error = thrownBy(run) as ArgumentError;
  expect(error).toBeInstanceOf(kind);
  expect(error).not.toBeInstanceOf(kind === TypeError ? RangeError : TypeError); // a TypeError is not a RangeError, nor the reverse
  expect(error.constructor).toBe(kind === TypeError ? ArgumentTypeError : ArgumentRangeError);
  expect(error).toBeInstanceOf(QuorumlockError);
  expect(error.parameter).toBe(parameter);
  // A stable code per class (errors.ts): what callers branch on, rather than the message.
  expect(error.code).toBe(kind === TypeError ? 'QUORUMLOCK_ERR_INVALID_ARG_TYPE' : 'QUORUMLOCK_ERR_OUT_OF_RANGE');
  expect(error.message.startsWith(`quorumlock: ${parameter} `)).toBe(true);
  for (const text of says) expect(error.message).toContain(text);
  return error;
}

/** Settings as Redlock builds them: the checks take whatever a caller passes at runtime. */
const settingsWith = (options: Record<string, unknown>) => () => checkSettings(options as RedlockOptions);
const defaultSettings: Settings = checkSettings();
const silent = () => {};

describe('constructor settings (checkSettings)', () => {
  const drift = ['driftFactor', 'in [0, 0.5)'];
  const retryCount = ['retryCount', 'an integer >= 0 (or Infinity)'];
  const nodeTimeout = ['nodeTimeout', 'a number > 0'];
  it.each<BadRow>([
    { label: 'options: null', run: settingsWith(null as never), kind: TypeError, parameter: 'options', says: ['must be an object', 'got null'] },
    { label: 'options: a string', run: () => checkSettings('fast' as never), kind: TypeError, parameter: 'options', says: ['must be an object'] },
    { label: 'driftFactor: -0.1', run: settingsWith({ driftFactor: -0.1 }), kind: RangeError, parameter: 'driftFactor', says: [...drift, 'got -0.1'] },
    { label: 'driftFactor: 0.5', run: settingsWith({ driftFactor: 0.5 }), kind: RangeError, parameter: 'driftFactor', says: [...drift, 'got 0.5'] },
    { label: 'driftFactor: 1', run: settingsWith({ driftFactor: 1 }), kind: RangeError, parameter: 'driftFactor', says: [...drift, 'got 1'] },
    { label: 'driftFactor: Infinity', run: settingsWith({ driftFactor: Infinity }), kind: RangeError, parameter: 'driftFactor', says: drift },
    { label: 'driftFactor: NaN', run: settingsWith({ driftFactor: Number.NaN }), kind: TypeError, parameter: 'driftFactor', says: [...drift, 'got NaN'] },
    { label: "driftFactor: '0.01'", run: settingsWith({ driftFactor: '0.01' }), kind: TypeError, parameter: 'driftFactor', says: [...drift, 'got "0.01"'] },
    { label: 'retryCount: -1', run: settingsWith({ retryCount: -1 }), kind: RangeError, parameter: 'retryCount', says: [...retryCount, 'got -1'] },
    { label: 'retryCount: 1.5', run: settingsWith({ retryCount: 1.5 }), kind: RangeError, parameter: 'retryCount', says: [...retryCount, 'got 1.5'] },
    { label: 'retryCount: NaN', run: settingsWith({ retryCount: Number.NaN }), kind: TypeError, parameter: 'retryCount', says: [...retryCount, 'got NaN'] },
    { label: 'retryCount: -Infinity', run: settingsWith({ retryCount: -Infinity }), kind: RangeError, parameter: 'retryCount', says: retryCount },
    { label: "retryCount: '3'", run: settingsWith({ retryCount: '3' }), kind: TypeError, parameter: 'retryCount', says: retryCount },
    { label: 'retryDelay: -1', run: settingsWith({ retryDelay: -1 }), kind: RangeError, parameter: 'retryDelay', says: ['a number >= 0', 'got -1'] },
    { label: 'retryDelay: Infinity', run: settingsWith({ retryDelay: Infinity }), kind: RangeError, parameter: 'retryDelay', says: ['a number >= 0'] },
    { label: 'retryJitter: -5', run: settingsWith({ retryJitter: -5 }), kind: RangeError, parameter: 'retryJitter', says: ['a number >= 0', 'got -5'] },
    { label: 'nodeTimeout: 0', run: settingsWith({ nodeTimeout: 0 }), kind: RangeError, parameter: 'nodeTimeout', says: [...nodeTimeout, 'got 0'] },
    { label: 'nodeTimeout: -1', run: settingsWith({ nodeTimeout: -1 }), kind: RangeError, parameter: 'nodeTimeout', says: [...nodeTimeout, 'got -1'] },
    { label: 'nodeTimeout: NaN', run: settingsWith({ nodeTimeout: Number.NaN }), kind: TypeError, parameter: 'nodeTimeout', says: [...nodeTimeout, 'got NaN'] },
    { label: 'nodeTimeout: Infinity', run: settingsWith({ nodeTimeout: Infinity }), kind: RangeError, parameter: 'nodeTimeout', says: nodeTimeout },
    {
      label: 'logger: missing warn and error',
      run: settingsWith({ logger: { debug: silent, info: silent } }),
      kind: TypeError,
      parameter: 'logger',
      says: ['must have debug, info, warn and error methods'],
    },
    {
      label: 'logger: console.log',
      run: settingsWith({ logger: silent }),
      kind: TypeError,
      parameter: 'logger',
      says: ['must have debug, info, warn and error methods'],
    },
    { label: 'logger: null', run: settingsWith({ logger: null }), kind: TypeError, parameter: 'logger', says: ['got null'] },
    {
      label: 'clock: no sleep',
      run: settingsWith({ clock: { now: () => 0 } }),
      kind: TypeError,
      parameter: 'clock',
      says: ['must have now(), sleep(ms, signal), epochMs(), setTimer(callback, ms) and clearTimer(handle) methods'],
    },
    {
      label: 'clock: no now',
      run: settingsWith({ clock: { sleep: async () => {} } }),
      kind: TypeError,
      parameter: 'clock',
      says: ['must have now(), sleep(ms, signal), epochMs(), setTimer(callback, ms) and clearTimer(handle) methods'],
    },
    { label: 'clock: a number', run: settingsWith({ clock: 0 }), kind: TypeError, parameter: 'clock', says: ['got 0'] },
  ])('$label', (row) => {
    expectRejected(row);
  });

  it.each([
    { label: 'nothing (defaults)', options: undefined, check: (s: Settings) => expect(s).toMatchObject(defaults) },
    { label: 'driftFactor 0', options: { driftFactor: 0 }, check: (s: Settings) => expect(s.driftFactor).toBe(0) },
    { label: 'driftFactor 0.49', options: { driftFactor: 0.49 }, check: (s: Settings) => expect(s.driftFactor).toBe(0.49) },
    { label: 'retryCount Infinity', options: { retryCount: Infinity }, check: (s: Settings) => expect(s.retryCount).toBe(Infinity) },
    {
      label: 'retryCount 0, retryDelay 0, retryJitter 0',
      options: { retryCount: 0, retryDelay: 0, retryJitter: 0 },
      check: (s: Settings) => expect([s.retryCount, s.retryDelay, s.retryJitter]).toEqual([0, 0, 0]),
    },
    { label: 'nodeTimeout 0.5', options: { nodeTimeout: 0.5 }, check: (s: Settings) => expect(s.nodeTimeout).toBe(0.5) },
    { label: 'a ManualClock', options: { clock: new ManualClock(7) }, check: (s: Settings) => expect(s.clock.now()).toBe(7) },
    {
      label: 'a logger with the four methods',
      options: { logger: { debug: silent, info: silent, warn: silent, error: silent } },
      check: (s: Settings) => expect(typeof s.logger.warn).toBe('function'),
    },
  ])('accepts $label', ({ options, check }) => {
    check(checkSettings(options));
  });

  it('debugging(): never for the default logger; a pino logger is asked per line, as its level changes', () => {
    expect(checkSettings().debugging()).toBe(false);
    const logger = pino({ level: 'info' }, { write: () => undefined });
    const settings = checkSettings({ logger });
    expect(settings.debugging()).toBe(false);
    logger.level = 'debug';
    expect(settings.debugging()).toBe(true);
    logger.level = 'warn';
    expect(settings.debugging()).toBe(false);
    // A logger that cannot say its level gets every line.
    expect(checkSettings({ logger: { debug: silent, info: silent, warn: silent, error: silent } }).debugging()).toBe(true);
  });

  it('the logger is guarded: what it throws or rejects with is dropped, its level still asked, and a guarded one is not wrapped again', async () => {
    const seen: string[] = [];
    const rejected: unknown[] = [];
    const onRejection = (reason: unknown) => rejected.push(reason);
    process.on('unhandledRejection', onRejection);
    try {
      const logger = {
        debug: () => {
          seen.push('debug');
          throw new Error('closed');
        },
        info: async () => {
          seen.push('info');
          throw new Error('closed later');
        },
        warn: () => seen.push('warn'),
        error: () => seen.push('error'),
        isLevelEnabled: () => {
          throw new Error('no level');
        },
      };
      const settings = checkSettings({ logger });
      settings.logger.debug({}, 'a');
      settings.logger.info({}, 'b');
      settings.logger.warn({}, 'c');
      settings.logger.error({}, 'd');
      expect(seen).toEqual(['debug', 'info', 'warn', 'error']);
      expect(settings.debugging()).toBe(false); // a logger whose level cannot be read gets no debug lines
      await new Promise((resolve) => setTimeout(resolve, 10)); // an unhandled rejection would be reported by now
      expect(rejected).toEqual([]);

      const pinoLogger = pino({ level: 'info' }, { write: () => undefined });
      const passedOn = checkSettings({ logger: checkSettings({ logger: pinoLogger }).logger });
      expect(checkSettings({ logger: passedOn.logger }).logger).toBe(passedOn.logger);
      expect(passedOn.debugging()).toBe(false);
      pinoLogger.level = 'debug';
      expect(passedOn.debugging()).toBe(true);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});

describe('members (checkMembers)', () => {
  const a = lazyClient({ host: '127.0.0.1', port: 7001 });
  const b = lazyClient({ host: '127.0.0.1', port: 7002 });
  const sameAsA = lazyClient({ host: '127.0.0.1', port: 7001 });
  const db2 = lazyClient({ host: '10.0.0.1', port: 7003, db: 2 });
  const db2Again = lazyClient({ host: '10.0.0.1', port: 7003, db: 2 });
  const clients = 'must be a non-empty array of clients (a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE)';

  it.each<BadRow>([
    { label: 'not an array: one client', run: () => checkMembers(a), kind: TypeError, parameter: 'members', says: [clients] },
    { label: 'not an array: undefined', run: () => checkMembers(undefined), kind: TypeError, parameter: 'members', says: [clients, 'got undefined'] },
    { label: 'an empty array', run: () => checkMembers([]), kind: RangeError, parameter: 'members', says: [clients, 'got an empty array'] },
    {
      label: 'a non-client object',
      run: () => checkMembers([{ host: '127.0.0.1', port: 6379 }]),
      kind: TypeError,
      parameter: 'members[0]',
      says: ['must be a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE'],
    },
    {
      label: 'a string among clients',
      run: () => checkMembers([a, 'redis://127.0.0.1:7009']),
      kind: TypeError,
      parameter: 'members[1]',
      says: ['must be a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE', 'got "redis://127.0.0.1:7009"'],
    },
    {
      label: 'null among clients',
      run: () => checkMembers([a, b, null]),
      kind: TypeError,
      parameter: 'members[2]',
      says: ['must be a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE', 'got null'],
    },
    {
      label: 'a node-redis Cluster twice, its root nodes in another order',
      run: () =>
        checkMembers([
          createCluster({ rootNodes: [{ url: 'redis://10.0.0.9:7000' }, { socket: { host: '10.0.0.8', port: 7000 } }] }),
          createCluster({ rootNodes: [{ socket: { host: '10.0.0.8', port: 7000 } }, { url: 'redis://10.0.0.9:7000' }] }),
        ]),
      kind: RangeError,
      parameter: 'members[1]',
      says: ['is the same server as members[0]', 'cluster:10.0.0.8:7000,10.0.0.9:7000'],
    },
    {
      label: 'a node-redis Cluster whose keyPrefix splits a hash tag',
      run: () => checkMembers([createCluster({ rootNodes: [{ url: 'redis://10.0.0.9:7000' }], keyPrefix: 'app{' })]),
      kind: RangeError,
      parameter: 'members[0]',
      says: ['complete hash tag'],
    },
    {
      label: 'a node-redis Sentinel client',
      run: () => checkMembers([a, createSentinel({ name: 'locks', sentinelRootNodes: [{ host: '10.0.0.9', port: 26379 }] })]),
      kind: TypeError,
      parameter: 'members[1]',
      says: ['is a node-redis Sentinel client (createSentinel)', 'use an ioredis, iovalkey or GLIDE client'],
    },
    {
      label: 'an ioredis client with stringNumbers (every integer reply a string)',
      run: () => checkMembers([a, lazyClient({ port: 7002, stringNumbers: true })]),
      kind: TypeError,
      parameter: 'members[1]',
      says: ["has ioredis' stringNumbers option on", 'a client without it'],
    },
    {
      label: 'a node-redis client and an ioredis client of one server',
      run: () => checkMembers([a, createClient({ socket: { host: '127.0.0.1', port: 7001 } })]),
      kind: RangeError,
      parameter: 'members[1]',
      says: ['is the same server as members[0]', '127.0.0.1:7001/0'],
    },
    {
      label: 'the same client twice',
      run: () => checkMembers([a, b, a]),
      kind: RangeError,
      parameter: 'members[2]',
      says: ['is the same server as members[0]', '127.0.0.1:7001/0', 'vote twice'],
    },
    {
      label: 'two clients, same host:port (db 0)',
      run: () => checkMembers([a, sameAsA]),
      kind: RangeError,
      parameter: 'members[1]',
      says: ['is the same server as members[0]', '127.0.0.1:7001/0'],
    },
    {
      label: 'two clients, same host:port/db 2',
      run: () => checkMembers([b, db2, db2Again]),
      kind: RangeError,
      parameter: 'members[2]',
      says: ['is the same server as members[1]', '10.0.0.1:7003/2'],
    },
  ])('$label', (row) => {
    expectRejected(row);
  });

  it('duplicates are found by host, port and db, as ioredis normalized them', () => {
    for (const client of [a, sameAsA]) expect([client.options.host, client.options.port, client.options.db]).toEqual(['127.0.0.1', 7001, 0]);
    const defaulted = lazyClient();
    const explicit = lazyClient({ host: 'localhost', port: 6379, db: 0 });
    expect(thrownBy(() => checkMembers([defaulted, explicit]))).toMatchObject({
      parameter: 'members[1]',
      message: expect.stringContaining('localhost:6379/0'),
    });
  });

  it('accepts a node-redis Cluster, named cluster: and its root nodes, sorted', () => {
    const cluster = createCluster({ rootNodes: [{ url: 'redis://10.0.0.9:7000' }, { socket: { host: '10.0.0.8', port: 7001 } }] });
    expect(checkMembers([a, cluster])).toEqual([a, cluster]);
    expect(describeClient(cluster)).toEqual({ library: 'node-redis', id: 'cluster:10.0.0.8:7001,10.0.0.9:7000', isCluster: true, keyPrefix: '' });
    expect(cluster.isOpen).toBe(false); // nothing connects
  });

  it('accepts different dbs on the same host:port, and different ports', () => {
    const db0 = lazyClient({ host: '127.0.0.1', port: 7004, db: 0 });
    const db1 = lazyClient({ host: '127.0.0.1', port: 7004, db: 1 });
    expect(checkMembers([db0, db1])).toEqual([db0, db1]);
    expect(checkMembers([a, b, db2])).toEqual([a, b, db2]);
    expect(checkMembers([a])).toEqual([a]);
  });
});

describe('resources (checkResources)', () => {
  const nonEmpty = 'must be a non-empty string or a non-empty array of strings';
  it.each<BadRow>([
    { label: 'undefined', run: () => checkResources(undefined), kind: TypeError, parameter: 'resources', says: [nonEmpty, 'got undefined'] },
    { label: '[]', run: () => checkResources([]), kind: RangeError, parameter: 'resources', says: [nonEmpty, 'got an empty array'] },
    { label: 'a number', run: () => checkResources(42), kind: TypeError, parameter: 'resources', says: [nonEmpty, 'got 42'] },
    { label: "['']", run: () => checkResources(['']), kind: TypeError, parameter: 'resources[0]', says: ['must be a non-empty string', 'got ""'] },
    { label: '[1]', run: () => checkResources([1]), kind: TypeError, parameter: 'resources[0]', says: ['must be a non-empty string', 'got 1'] },
    {
      label: "['a', null]",
      run: () => checkResources(['a', null]),
      kind: TypeError,
      parameter: 'resources[1]',
      says: ['must be a non-empty string', 'got null'],
    },
    {
      label: "['a', 'a']",
      run: () => checkResources(['a', 'a']),
      kind: RangeError,
      parameter: 'resources[1]',
      says: ['repeats "a"', 'each resource may appear once'],
    },
    { label: "['a', 'b', 'a']", run: () => checkResources(['a', 'b', 'a']), kind: RangeError, parameter: 'resources[2]', says: ['repeats "a"'] },
    { label: "''", run: () => checkResources(''), kind: TypeError, parameter: 'resources', says: ['must be a non-empty string', 'got ""'] },
  ])('$label', (row) => {
    expectRejected(row);
  });

  // quorumlock's own keys (src/store/keys.ts, companionKey): the epoch hash has
  // no TTL, so a waiter on it would wait forever, and locking a line or lease key would overwrite it.
  const reserved = [
    'not starting with "quorumlock:"',
    'not ending in ":quorumlock:line", ":quorumlock:leases", ":quorumlock:readers" or ":quorumlock:handover"',
  ];
  it.each<BadRow>([
    {
      label: 'the epoch hash',
      run: () => checkResources('quorumlock:epoch'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: [...reserved, 'got "quorumlock:epoch"'],
    },
    {
      label: "a cluster slot's epoch hash",
      run: () => checkResources(['a', 'quorumlock:epoch:{0}']),
      kind: RangeError,
      parameter: 'resources[1]',
      says: reserved,
    },
    { label: 'a waiter channel', run: () => checkResources('quorumlock:waiter:x.1'), kind: RangeError, parameter: 'resources[0]', says: reserved },
    {
      label: 'a line key',
      run: () => checkResources('{orders}:quorumlock:line'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: [...reserved, 'got "{orders}:quorumlock:line"'],
    },
    {
      label: 'a lease key of a tagged name',
      run: () => checkResources('{job-7}:a:quorumlock:leases'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: reserved,
    },
    {
      label: "a line key borrowing its slot's tag",
      run: () => checkResources('{x1}:quorumlock:line:a}b'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: reserved,
    },
    {
      label: 'a readers key (shared locks)',
      run: () => checkResources('{orders}:quorumlock:readers'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: reserved,
    },
    {
      label: 'a handover key',
      run: () => checkResources('{orders}:quorumlock:handover'),
      kind: RangeError,
      parameter: 'resources[0]',
      says: reserved,
    },
    { label: 'anything else in the namespace', run: () => checkResources('quorumlock:'), kind: RangeError, parameter: 'resources[0]', says: reserved },
  ])('refuses $label as a resource', (row) => {
    expectRejected(row);
  });

  it('accepts names that only resemble the reserved ones', () => {
    // Only our own key shapes are refused: a service may well be called quorumlock ("jobs:quorumlock:7").
    const names = [
      'quorumlock',
      'QUORUMLOCK:epoch',
      'myquorumlock:epoch',
      'orders:quorumlock',
      'a-quorumlock:b',
      '{quorumlock}',
      'fig3:quorumlock:1',
      'a:quorumlock:lines',
      'a:quorumlock:line:b',
    ];
    expect(checkResources(names)).toEqual(names);
  });

  it('accepts one name or a list, and returns a copy', () => {
    expect(checkResources('orders:42')).toEqual(['orders:42']);
    const list = ['a', 'b', 'A'];
    const checked = checkResources(list);
    expect(checked).toEqual(['a', 'b', 'A']);
    expect(checked).not.toBe(list);
  });
});

describe('ttl (checkTtl)', () => {
  const floor = minTtl(defaultSettings); // 54 with driftFactor 0.01 and nodeTimeout 50
  // The ceiling is maxLockTtl (default 60 000 ms), itself at most MAX_TTL_MS.
  const range = `an integer from ${floor} to ${defaults.maxLockTtl} ms`;
  const ttl =
    (value: unknown, settings: Pick<Settings, 'driftFactor' | 'nodeTimeout'> = defaultSettings) =>
    () =>
      checkTtl(value, settings);

  it('the default floor is 54 ms', () => {
    expect(floor).toBe(54);
  });

  it.each<BadRow>([
    { label: '0', run: ttl(0), kind: RangeError, parameter: 'ttl', says: [range, 'got 0'] },
    { label: '-1', run: ttl(-1), kind: RangeError, parameter: 'ttl', says: [range, 'got -1'] },
    { label: '1.5', run: ttl(1.5), kind: RangeError, parameter: 'ttl', says: [range, 'got 1.5'] },
    { label: '10000.5', run: ttl(10_000.5), kind: RangeError, parameter: 'ttl', says: [range, 'got 10000.5'] },
    { label: 'NaN', run: ttl(Number.NaN), kind: TypeError, parameter: 'ttl', says: [range, 'got NaN'] },
    { label: "'1000'", run: ttl('1000'), kind: TypeError, parameter: 'ttl', says: [range, 'got "1000"'] },
    { label: 'undefined', run: ttl(undefined), kind: TypeError, parameter: 'ttl', says: [range, 'got undefined'] },
    { label: '2 ** 31', run: ttl(2 ** 31), kind: RangeError, parameter: 'ttl', says: [range, 'got 2147483648'] },
    { label: 'Infinity', run: ttl(Infinity), kind: RangeError, parameter: 'ttl', says: [range, 'got Infinity'] },
    {
      label: '52 with nodeTimeout 50 (<= nodeTimeout + drift)',
      run: ttl(52, checkSettings({ nodeTimeout: 50 })),
      kind: RangeError,
      parameter: 'ttl',
      says: ['must be larger than nodeTimeout + drift (50 + 3 ms)', 'got 52', range],
    },
    {
      label: '53 with nodeTimeout 50 (exactly nodeTimeout + drift)',
      run: ttl(53, defaultSettings),
      kind: RangeError,
      parameter: 'ttl',
      says: ['nodeTimeout + drift (50 + 3 ms)', 'got 53'],
    },
    {
      label: '100 with driftFactor 0.49, nodeTimeout 50',
      run: ttl(100, checkSettings({ driftFactor: 0.49, nodeTimeout: 50 })),
      kind: RangeError,
      parameter: 'ttl',
      says: ['nodeTimeout + drift (50 + 51 ms)', 'got 100', `an integer from 104 to ${defaults.maxLockTtl} ms`],
    },
    {
      label: '1000 with nodeTimeout 1000',
      run: ttl(1_000, checkSettings({ nodeTimeout: 1_000 })),
      kind: RangeError,
      parameter: 'ttl',
      says: ['nodeTimeout + drift (1000 + 12 ms)'],
    },
  ])('$label', (row) => {
    expectRejected(row);
  });

  it('accepts the floor, maxLockTtl and values between; MAX_TTL_MS once maxLockTtl allows it', () => {
    for (const value of [floor, floor + 1, 1_000, 10_000, defaults.maxLockTtl]) expect(checkTtl(value, defaultSettings)).toBe(value);
    expect(checkTtl(MAX_TTL_MS, checkSettings({ maxLockTtl: MAX_TTL_MS }))).toBe(MAX_TTL_MS);
    expect(MAX_TTL_MS).toBe(2 ** 31 - 1);
  });

  it('refuses a ttl above maxLockTtl, saying how to allow it', () => {
    expectRejected({ label: '60001', run: ttl(60_001), kind: RangeError, parameter: 'ttl', says: [range, 'raise maxLockTtl', 'got 60001'] });
    expectRejected({
      label: 'maxLockTtl 0',
      run: () => checkSettings({ maxLockTtl: 0 }),
      kind: RangeError,
      parameter: 'maxLockTtl',
      says: ['an integer >= 1'],
    });
    expectRejected({
      label: 'quarantine "no"',
      run: () => checkSettings({ quarantine: 'no' as never }),
      kind: TypeError,
      parameter: 'quarantine',
      says: ["true, false or 'from-restart'", 'got "no"'],
    });
    expect(checkSettings({ quarantine: 'from-restart' }).quarantine).toBe('from-restart');
  });

  it('names another parameter when asked to', () => {
    expectRejected({ label: 'custom', run: () => checkTtl(0, defaultSettings, 'extendTtl'), kind: RangeError, parameter: 'extendTtl', says: [range] });
  });

  describe('minTtl is the smallest integer ttl checkTtl accepts', () => {
    const accepts = (value: number, settings: Pick<Settings, 'driftFactor' | 'nodeTimeout'>) => {
      try {
        checkTtl(value, settings);
        return true;
      } catch (error) {
        expect(error).toBeInstanceOf(RangeError);
        return false;
      }
    };
    const grid = [0, 0.01, 0.1, 0.49].flatMap((driftFactor) => [1, 50, 1_000, 12_345.5].map((nodeTimeout) => ({ driftFactor, nodeTimeout })));

    it.each(grid)('driftFactor $driftFactor, nodeTimeout $nodeTimeout', (settings) => {
      const smallest = minTtl(settings);
      expect(Number.isInteger(smallest)).toBe(true);
      let firstAccepted = 1;
      while (!accepts(firstAccepted, settings)) firstAccepted++;
      expect(smallest).toBe(firstAccepted);
      // And nothing above it is refused (checked for the next thousand).
      for (let value = smallest; value < smallest + 1_000; value++) expect(accepts(value, settings), `ttl ${value}`).toBe(true);
      // The message quotes the same floor.
      expect((thrownBy(() => checkTtl(smallest - 1, settings)) as Error).message).toContain(`an integer from ${smallest} to`);
    });

    it('matches hand-computed values', () => {
      expect(minTtl({ driftFactor: 0, nodeTimeout: 1 })).toBe(4); // 4 > 1 + 0 + 2
      expect(minTtl({ driftFactor: 0.01, nodeTimeout: 50 })).toBe(54); // 54 > 50 + ceil(0.54) + 2 = 53
      expect(minTtl({ driftFactor: 0.49, nodeTimeout: 50 })).toBe(104); // 104 > 50 + ceil(50.96) + 2 = 103
    });
  });
});

describe('per-call acquire options (checkAcquireOptions)', () => {
  const acquire = (options: Record<string, unknown> | null | string) => () => checkAcquireOptions(options as never, defaultSettings);
  const waitTimeout = ['a number > 0 (or Infinity)'];
  it.each<BadRow>([
    { label: 'options: null', run: acquire(null), kind: TypeError, parameter: 'options', says: ['must be an object', 'got null'] },
    { label: "options: 'fast'", run: acquire('fast'), kind: TypeError, parameter: 'options', says: ['must be an object', 'got "fast"'] },
    { label: 'waitTimeout: 0', run: acquire({ waitTimeout: 0 }), kind: RangeError, parameter: 'waitTimeout', says: [...waitTimeout, 'got 0'] },
    { label: 'waitTimeout: -1', run: acquire({ waitTimeout: -1 }), kind: RangeError, parameter: 'waitTimeout', says: [...waitTimeout, 'got -1'] },
    { label: 'waitTimeout: NaN', run: acquire({ waitTimeout: Number.NaN }), kind: TypeError, parameter: 'waitTimeout', says: [...waitTimeout, 'got NaN'] },
    { label: "waitTimeout: '1000'", run: acquire({ waitTimeout: '1000' }), kind: TypeError, parameter: 'waitTimeout', says: waitTimeout },
    { label: 'signal: an object', run: acquire({ signal: { aborted: false } }), kind: TypeError, parameter: 'signal', says: ['must be an AbortSignal'] },
    {
      label: 'signal: an AbortController',
      run: acquire({ signal: new AbortController() }),
      kind: TypeError,
      parameter: 'signal',
      says: ['must be an AbortSignal'],
    },
    { label: 'signal: null', run: acquire({ signal: null }), kind: TypeError, parameter: 'signal', says: ['must be an AbortSignal', 'got null'] },
    { label: 'retryCount: -1', run: acquire({ retryCount: -1 }), kind: RangeError, parameter: 'retryCount', says: ['an integer >= 0 (or Infinity)', 'got -1'] },
    { label: 'retryCount: 0.5', run: acquire({ retryCount: 0.5 }), kind: RangeError, parameter: 'retryCount', says: ['an integer >= 0 (or Infinity)'] },
    { label: 'retryDelay: -1', run: acquire({ retryDelay: -1 }), kind: RangeError, parameter: 'retryDelay', says: ['a number >= 0', 'got -1'] },
    { label: 'retryJitter: -5', run: acquire({ retryJitter: -5 }), kind: RangeError, parameter: 'retryJitter', says: ['a number >= 0', 'got -5'] },
    { label: "shared: 'yes'", run: acquire({ shared: 'yes' }), kind: TypeError, parameter: 'shared', says: ['got "yes"'] },
  ])('$label', (row) => {
    expectRejected(row);
  });

  it('fills in the settings, and a default waitTimeout that covers every attempt', () => {
    const policy = checkAcquireOptions(undefined, defaultSettings);
    const cycle = defaults.nodeTimeout + Math.max(defaults.nodeTimeout, defaults.retryDelay + defaults.retryJitter);
    expect(policy).toEqual({ retryCount: 10, retryDelay: 200, retryJitter: 100, waitTimeout: 11 * cycle, signal: undefined, fencing: false, shared: false });
  });

  it('accepts per-call overrides, Infinity retries and waitTimeout, and a real AbortSignal', () => {
    const signal = new AbortController().signal;
    const policy = checkAcquireOptions({ retryCount: Infinity, retryDelay: 0, retryJitter: 0, waitTimeout: Infinity, signal }, defaultSettings);
    expect(policy).toEqual({ retryCount: Infinity, retryDelay: 0, retryJitter: 0, waitTimeout: Infinity, signal, fencing: false, shared: false });
    expect(checkAcquireOptions({ retryCount: Infinity }, defaultSettings).waitTimeout).toBe(Infinity);
    expect(checkAcquireOptions({ waitTimeout: 0.5 }, defaultSettings).waitTimeout).toBe(0.5);
    expect(checkAcquireOptions({ signal: AbortSignal.abort() }, defaultSettings).signal?.aborted).toBe(true);
  });
});

describe('retryDelayMs: retryDelay ± retryJitter, never negative', () => {
  it.each([
    { label: 'random 0 -> delay - jitter', policy: { retryDelay: 200, retryJitter: 100 }, random: 0, delay: 100 },
    { label: 'random 1 -> delay + jitter', policy: { retryDelay: 200, retryJitter: 100 }, random: 1, delay: 300 },
    { label: 'random 0.5 -> delay', policy: { retryDelay: 200, retryJitter: 100 }, random: 0.5, delay: 200 },
    { label: 'random 0.75 -> delay + jitter/2', policy: { retryDelay: 200, retryJitter: 100 }, random: 0.75, delay: 250 },
    { label: 'jitter > delay, random 0 -> clamped at 0', policy: { retryDelay: 50, retryJitter: 100 }, random: 0, delay: 0 },
    { label: 'jitter > delay, random 0.5 -> delay', policy: { retryDelay: 50, retryJitter: 100 }, random: 0.5, delay: 50 },
    { label: 'jitter > delay, random 1 -> delay + jitter', policy: { retryDelay: 50, retryJitter: 100 }, random: 1, delay: 150 },
    { label: 'no jitter', policy: { retryDelay: 200, retryJitter: 0 }, random: 0, delay: 200 },
    { label: 'no delay, no jitter', policy: { retryDelay: 0, retryJitter: 0 }, random: 1, delay: 0 },
  ])('$label', ({ policy, random, delay }) => {
    expect(retryDelayMs(policy, () => random)).toBe(delay);
  });

  it('stays within [max(0, delay - jitter), delay + jitter] with Math.random', () => {
    for (let i = 0; i < 10_000; i++) {
      const delay = retryDelayMs({ retryDelay: 200, retryJitter: 100 });
      expect(delay).toBeGreaterThanOrEqual(100);
      expect(delay).toBeLessThanOrEqual(300);
    }
  });
});

describe('member identity for Cluster and Sentinel clients', () => {
  it('names them by their seed nodes, so different groups are not duplicates and the same group is', async () => {
    const { Cluster, Redis } = await import('ioredis');
    const clusterA = new Cluster([{ host: '10.0.0.1', port: 7000 }], { lazyConnect: true });
    const clusterB = new Cluster([{ host: '10.0.0.2', port: 7000 }], { lazyConnect: true });
    const sentinelA = new Redis({ sentinels: [{ host: '10.0.1.1', port: 26379 }], name: 'a', lazyConnect: true });
    const sentinelB = new Redis({ sentinels: [{ host: '10.0.1.1', port: 26379 }], name: 'b', lazyConnect: true });
    const sentinelA2 = new Redis({ sentinels: [{ host: '10.0.1.1', port: 26379 }], name: 'a', lazyConnect: true });
    try {
      expect(memberId(clusterA as never)).toBe('cluster:10.0.0.1:7000');
      expect(memberId(sentinelA)).toBe('sentinel:a@10.0.1.1:26379/0');
      expect(() => checkMembers([clusterA, clusterB, sentinelA, sentinelB])).not.toThrow();
      expect(() => checkMembers([sentinelA, sentinelB, sentinelA2])).toThrow(/members\[2\] is the same server as members\[0\]/);
    } finally {
      for (const client of [clusterA, clusterB, sentinelA, sentinelB, sentinelA2]) client.disconnect();
    }
  });
});
