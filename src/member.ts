/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it.
 */
import type { Redis } from 'ioredis';
import { registerScripts, type ScriptCommands } from './lua/scripts.js';

interface ClientShape {
  options?: { host?: string; port?: number; path?: string; db?: number; name?: string; sentinels?: { host?: string; port?: number }[] | null };
  startupNodes?: (string | number | { host?: string; port?: number })[];
}

const address = (node: { host?: string; port?: number }) => `${node.host ?? 'localhost'}:${node.port ?? 6379}`;

/**
 * How votes, logs and duplicate checks name a member: host:port/db, socket/db,
 * sentinel:name@sentinels/db for a Sentinel-managed group, cluster:nodes for a Cluster.
 */
export function memberId(client: Redis): string {
  const shape = client as unknown as ClientShape;
  if (Array.isArray(shape.startupNodes)) {
    const nodes = shape.startupNodes.map((node) => (typeof node === 'object' ? address(node) : String(node)));
    return `cluster:${nodes.sort().join(',')}`;
  }
  const options = shape.options ?? {};
  const db = options.db ?? 0;
  if (options.sentinels && options.sentinels.length > 0) {
    return `sentinel:${options.name ?? 'mymaster'}@${options.sentinels.map(address).sort().join(',')}/${db}`;
  }
  return `${options.path ? options.path : address(options)}/${db}`;
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
