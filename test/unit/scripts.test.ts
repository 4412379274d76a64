/** The script commands quorumlock defines on an ioredis client (src/clients/ioredis.ts). */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import * as sources from '../../src/lua/sources.js';
import { acquireLua } from '../../src/lua/sources.js';
import { BINDABLE, boundLua } from '../../src/store/scripts.js';
import { BATCHED, batchArgs } from '../../src/store/batch.js';
import { commandNames, registerScripts, scriptCommand } from '../../src/clients/ioredis.js';

describe('script commands', () => {
  it('are named by the script and a digest of its text: another copy of quorumlock on the same client keeps its own', async () => {
    const defined = new Map<string, string>();
    const client = {
      // Another copy (an older version) registered its acquire under the plain name first.
      quorumlockAcquire: () => Promise.resolve('the other copy'),
      defineCommand(name: string, { lua }: { lua: string }) {
        defined.set(name, lua);
        (this as Record<string, unknown>)[name] = (...args: unknown[]) => Promise.resolve(['ours', ...args]);
      },
    };
    registerScripts(client as unknown as Redis);
    expect(commandNames.quorumlockAcquire).toMatch(/^quorumlockAcquire_[0-9a-f]{12}$/);
    expect(defined.get(commandNames.quorumlockAcquire)).toBe(acquireLua);
    expect(await scriptCommand(client, 'quorumlockAcquire')(1, 'k')).toEqual(['ours', 1, 'k']);
    // Defined once per client, however many Redlocks share it.
    registerScripts(client as unknown as Redis);
    expect(defined.size).toBe(Object.keys(commandNames).length);
  });
});

describe('the shipped script text (src/lua/sources.ts, written by scripts/embed-lua.mjs)', () => {
  // Lua's short strings, which may hold `--` ('--' in a string is not a comment); no script ships a long string.
  const outsideStrings = (line: string) => line.replace(/'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"/g, "''");

  it.each(Object.entries(sources))('%s carries no comment and no blank line (the .lua sources keep them)', (_, lua) => {
    expect(lua.endsWith('\n')).toBe(true);
    for (const line of lua.slice(0, -1).split('\n')) {
      expect(line.trim(), 'a blank line').not.toBe('');
      expect(line, 'a line with trailing blanks').toBe(line.trimEnd());
      expect(outsideStrings(line), 'a comment').not.toContain('--');
      expect(line, 'a long string or comment').not.toMatch(/\[=*\[/);
    }
  });

  // Once per script: the batch script holds each script it runs (store/batch.ts), each with its line.
  it.each(Object.entries(BINDABLE))('%s keeps the line a bound copy replaces, once per script', (name, lua) => {
    const times = name === 'quorumlockBatch' ? Object.keys(BATCHED).length : 1;
    expect(lua.split('\n').filter((line) => line === 'local BOUND_RUN_ID = false')).toHaveLength(times);
    const bound = boundLua(lua, 'a'.repeat(40), '1f');
    expect(bound).not.toContain('local BOUND_RUN_ID = false');
    expect(bound.split('\n').filter((line) => line.startsWith(`local BOUND_RUN_ID = '${'a'.repeat(40)}'`))).toHaveLength(times);
  });
});

describe('the batch script arguments (src/store/batch.ts, batchArgs)', () => {
  const call = (keys: string[], args: string[]) => ({ script: 'quorumlockRelease' as const, keys, args });

  it('send the epoch hash and the id the calls share once, and each call its own when they differ', () => {
    const shared = batchArgs([call(['a', 'epoch'], ['id', 'v1']), call(['b', 'epoch'], ['id', 'v2'])]);
    // n, the shared id, one header per call (script 2 + 4 × 1 key + 4096 × 1 argument), then the arguments.
    expect(shared).toEqual({ keys: ['a', 'b', 'epoch'], args: ['2', 'id', String(2 + 4 + 4096), String(2 + 4 + 4096), 'v1', 'v2'] });
    const apart = batchArgs([call(['a', 'epoch'], ['id', 'v1']), call(['b', 'epoch'], ['other', 'v2'])]);
    expect(apart).toEqual({ keys: ['a', 'epoch', 'b', 'epoch'], args: ['2', '', String(2 + 8 + 8192), String(2 + 8 + 8192), 'id', 'v1', 'other', 'v2'] });
  });

  it('refuse a call with more keys than its header holds (batching.ts never batches one)', () => {
    const wide = Array.from({ length: 1025 }, (_, i) => `k${i}`);
    expect(() => batchArgs([call([...wide, 'epoch'], ['id']), call(['b', 'epoch'], ['id'])])).toThrow(/at most 1023 keys/);
  });
});
