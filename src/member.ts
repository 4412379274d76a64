/**
 * One member of the quorum: the user's ioredis client with our scripts on it. The client stays
 * the user's: quorumlock never connects, quits or subscribes with it.
 */
import type { Redis } from 'ioredis';
import { registerScripts, type ScriptCommands } from './lua/scripts.js';
import { lineKeys, type Waiter } from './waiting/line.js';

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

/** What the acquire script says when it does not lock: why, for how long, and our place in line. */
export interface Refusal {
  /** 'taken': held by another owner; 'queued': free, but kept for an earlier waiter. */
  why: 'taken' | 'queued';
  /** The longest remaining PTTL among the held keys; undefined when none is held. */
  heldForMs: number | undefined;
  /** 0-based place in line; undefined when not in line. */
  place: number | undefined;
}

export class Member {
  readonly id: string;
  /** The client's keyPrefix: scripts see prefixed keys, so channels must use it too. */
  readonly keyPrefix: string;
  readonly #client: Redis & ScriptCommands;

  constructor(client: Redis) {
    this.id = memberId(client);
    this.keyPrefix = (client as { options?: { keyPrefix?: string } }).options?.keyPrefix ?? '';
    this.#client = registerScripts(client);
  }

  /** true when every key was set to `value` for `ttlMs`; otherwise why not. */
  async acquire(resources: readonly string[], value: string, ttlMs: number, waiter: Waiter): Promise<true | Refusal> {
    const keys = lineKeys(resources);
    const reply = await this.#client.quorumlockAcquire(keys.length, ...keys, value, ttlMs, waiter.id, waiter.ticket, waiter.leaseMs);
    if (reply === 1) return true;
    const [why, heldForMs, place] = reply as [number, number, number];
    return { why: why === 0 ? 'taken' : 'queued', heldForMs: heldForMs >= 0 ? heldForMs : undefined, place: place >= 0 ? place : undefined };
  }

  /** 1 when every key still held `value` and now expires in `ttlMs`, 0 otherwise. */
  extend(resources: readonly string[], value: string, ttlMs: number): Promise<number> {
    return this.#client.quorumlockExtend(resources.length, ...resources, value, ttlMs);
  }

  /** How many of the keys held `value` and were deleted; the first waiter in line is told. */
  release(resources: readonly string[], value: string): Promise<number> {
    const keys = lineKeys(resources);
    return this.#client.quorumlockRelease(keys.length, ...keys, value);
  }

  /** Gives up a place in line. */
  leave(resources: readonly string[], waiterId: string): Promise<number> {
    const keys = lineKeys(resources);
    return this.#client.quorumlockLeave(keys.length, ...keys, waiterId);
  }

  /** A new connection with the client's options, for SUBSCRIBE; its owner must close it. */
  subscriber(): Redis {
    return this.#client.duplicate();
  }

  /** Calls `listener` once when the user's client has ended for good (they quit it). */
  onEnd(listener: () => void): void {
    this.#client.once('end', listener);
  }
}
