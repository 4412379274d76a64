/** The script commands quorumlock defines on a client (src/store/scripts.ts). */
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { acquireLua } from '../../src/lua/sources.js';
import { commandNames, registerScripts, scriptCommand } from '../../src/store/scripts.js';

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
