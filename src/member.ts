/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it.
 */
import type { Redis } from 'ioredis';
import { registerScripts, type ScriptCommands } from './lua/scripts.js';

/** host:port/db (or socket/db): how votes, logs and duplicate checks name a member. */
export function memberId(client: Redis): string {
  const options = (client as { options?: { host?: string; port?: number; path?: string; db?: number } }).options ?? {};
  const address = options.path ? options.path : `${options.host ?? 'localhost'}:${options.port ?? 6379}`;
  return `${address}/${options.db ?? 0}`;
}

export class Member {
  readonly id: string;
  readonly #client: Redis & ScriptCommands;

  constructor(client: Redis) {
    this.id = memberId(client);
    this.#client = registerScripts(client);
  }

  /** 1 when every key was set to `value` for `ttlMs`, 0 when any key is held by another owner. */
  acquire(keys: readonly string[], value: string, ttlMs: number): Promise<number> {
    return this.#client.quorumlockAcquire(keys.length, ...keys, value, ttlMs);
  }

  /** 1 when every key still held `value` and now expires in `ttlMs`, 0 otherwise. */
  extend(keys: readonly string[], value: string, ttlMs: number): Promise<number> {
    return this.#client.quorumlockExtend(keys.length, ...keys, value, ttlMs);
  }

  /** How many of the keys held `value` and were deleted. */
  release(keys: readonly string[], value: string): Promise<number> {
    return this.#client.quorumlockRelease(keys.length, ...keys, value);
  }
}
