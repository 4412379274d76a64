/**
 * The ioredis adapter's EVALSHA (src/clients/ioredis.ts, fastEvalsha) builds the very command the
 * client's own `evalsha` builds (name, arguments, keyPrefix, error stack, the bytes written),
 * without Array.prototype.flat over its arguments. No server: the commands are caught where the
 * client would write them (sendCommand).
 */
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectionOf } from '../../src/clients/index.js';

interface Sent {
  name: string;
  args: unknown[];
  errorStack?: unknown;
  toWritable(socket: unknown): string | Buffer;
}

const SHA = 'e0e1f9fabfc9d4800c877a703b823ac0578ff831';
const KEYS = ['lock:a', '{lock:a}:line', '{lock:a}:fence'];
const ARGS = ['epoch-1', 'value', '10000', ''];

const libraries = [
  ['ioredis', (options: object) => new Redis({ lazyConnect: true, ...options })],
  ['iovalkey', (options: object) => new Valkey({ lazyConnect: true, ...options })],
] as const;

afterEach(() => vi.restoreAllMocks());

describe.each(libraries)('EVALSHA through the %s adapter', (_, make) => {
  it.each([
    ['no options', {}],
    ['a keyPrefix and friendly error stacks', { keyPrefix: 'app:', showFriendlyErrorStack: true }],
  ])('is the command the client makes itself, with %s', (__, options) => {
    const client = make(options);
    const sent: Sent[] = [];
    vi.spyOn(client, 'sendCommand').mockImplementation(((command: Sent) => {
      sent.push(command);
      return Promise.resolve(1);
    }) as never);
    const evalsha = connectionOf(client).evalsha!;
    const flat = vi.spyOn(Array.prototype, 'flat');
    void evalsha(SHA, KEYS, ARGS);
    expect(flat).not.toHaveBeenCalled(); // the adapter's own command: its array handed over as it is (evalshaWords)
    // Keys and arguments as two arrays, as the adapter's fallback sends them (its types take them one by one).
    void (client.evalsha as unknown as (...words: unknown[]) => Promise<unknown>)(SHA, String(KEYS.length), KEYS, ARGS);
    expect(flat).toHaveBeenCalledTimes(1); // the client's, for comparison
    const [ours, theirs] = sent as [Sent, Sent];
    expect(ours.constructor).toBe(theirs.constructor);
    expect(ours.name).toBe('evalsha');
    // The same words; ours also carries the `flat` that handed it over, which nothing reads again
    // (our calls are kept out of auto-pipelining, the library's one other caller of flat).
    expect([...ours.args]).toEqual(theirs.args);
    expect(Object.keys(ours.args).filter((key) => !/^\d+$/.test(key))).toEqual(['flat']);
    expect(ours.toWritable(undefined)).toEqual(theirs.toWritable(undefined));
    expect(ours.errorStack instanceof Error).toBe(theirs.errorStack instanceof Error);
    expect([...ours.args]).toEqual([SHA, '3', ...KEYS.map((key) => `${'keyPrefix' in options ? 'app:' : ''}${key}`), ...ARGS]);
    client.disconnect();
  });

  it('leaves the arrays it was given as they were', () => {
    const client = make({ keyPrefix: 'app:' });
    vi.spyOn(client, 'sendCommand').mockImplementation((() => Promise.resolve(1)) as never);
    const keys = [...KEYS];
    const args = [...ARGS];
    void connectionOf(client).evalsha!(SHA, keys, args);
    expect(keys).toEqual(KEYS);
    expect(args).toEqual(ARGS);
    client.disconnect();
  });
});

describe('a client shaped like ioredis without its Command class', () => {
  it.each([
    ['no scripts set', undefined],
    ['a command class that extends nothing', class {}],
    ['an arrow function', () => undefined],
  ])('sends by its own evalsha: %s', async (_, Command) => {
    const sent: unknown[][] = [];
    const client = {
      status: 'ready',
      options: {},
      on() {},
      defineCommand(name: string) {
        if (Command !== undefined) ((client as { scriptsSet?: object }).scriptsSet ??= {})[name as never] = { Command } as never;
        (client as Record<string, unknown>)[name] = () => Promise.resolve(0);
      },
      evalsha: (...words: unknown[]) => (sent.push(words), Promise.resolve(1)),
      sendCommand: () => Promise.reject(new Error('not this way')),
      info: () => Promise.resolve(''),
    };
    await expect(connectionOf(client as never).evalsha!(SHA, KEYS, ARGS)).resolves.toBe(1);
    expect(sent).toEqual([[SHA, '3', KEYS, ARGS]]);
  });
});
