/**
 * Compile-time check (tsc --noEmit -p .): node-redis 5's and 6's clients, as createClient and
 * createCluster make them (either protocol, with scripts, with a type mapping), fit the adapter's
 * loose shapes under --strict; ioredis' do not.
 */
import { Redis } from 'ioredis';
import { createClient, createCluster, defineScript, RESP_TYPES, type RedisClientType } from 'redis';
import { createClient as createClient5, createCluster as createCluster5, type RedisClientType as RedisClientType5 } from 'redis5';
import type { NodeRedisClusterLike, NodeRedisLike } from '../../src/clients/node-redis.js';
import type { MemberClient } from '../../src/index.js';

const scripts = {
  bump: defineScript({
    SCRIPT: "return redis.call('INCR', KEYS[1])",
    NUMBER_OF_KEYS: 1,
    parseCommand(parser, key: string) {
      parser.pushKey(key);
    },
    transformReply: () => 0 as unknown as never,
  }),
};

export const clients: NodeRedisLike[] = [
  createClient(),
  createClient({ RESP: 2 }),
  createClient({ RESP: 3 }),
  createClient({ scripts }),
  createClient({ url: 'redis://localhost:6379/1' }).withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer }),
  createClient5(),
  createClient5({ RESP: 2 }),
  createClient5({ RESP: 3 }),
  createClient5({ RESP: 3, socket: { host: 'localhost', port: 6379, reconnectStrategy: false } }),
];

export const typed = (a: RedisClientType, b: RedisClientType5): NodeRedisLike[] => [a, b];

export const clusters: NodeRedisClusterLike[] = [
  createCluster({ rootNodes: [{ url: 'redis://localhost:7000' }] }),
  createCluster({ rootNodes: [{ url: 'redis://localhost:7000' }], RESP: 2 }),
  createCluster5({ rootNodes: [{ url: 'redis://localhost:7000' }] }),
  createCluster5({ rootNodes: [{ url: 'redis://localhost:7000' }], RESP: 3 }),
];

// Both are a Redlock's members as they are.
export const members: MemberClient[] = [...clients, ...clusters];

// @ts-expect-error -- ioredis has no isOpen/isReady: it is the other adapter's
export const notNodeRedis: NodeRedisLike = new Redis({ lazyConnect: true });
