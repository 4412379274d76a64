/**
 * Figure 8's contenders: quorumlock over each client library it takes (ioredis, iovalkey,
 * node-redis 6 on RESP3 and 5 on RESP2, each library's default, Valkey GLIDE), and
 * redlock-universal over its own adapters for the same libraries. Each opens its own clients to
 * the five masters with the library's defaults (GLIDE: its 250 ms request timeout) and closes them.
 */
import { GlideClient } from '@valkey/valkey-glide';
import { Redis } from 'ioredis';
import { Redis as Valkey } from 'iovalkey';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { createRedlock, GlideAdapter, IoredisAdapter, LockAcquisitionError, NodeRedisAdapter, type RedisAdapter } from 'redlock-universal';
import type { MasterSet } from '../test/harness/types.js';
import { quorumlock as library } from './quorumlock.js';
import type { Locker, Peer } from './peers.js';

const { LockAcquireError, Redlock } = library;

/** Clients of one library to every master, and how to close them. */
interface Opened<C> {
  clients: C[];
  close(): Promise<unknown>;
}

type Library = 'ioredis' | 'iovalkey' | 'node-redis 6' | 'node-redis 5' | 'GLIDE';

async function connect(library: Library, set: MasterSet): Promise<Opened<unknown>> {
  const addresses = set.masters.map(({ host, port }) => ({ host, port }));
  switch (library) {
    case 'ioredis':
    case 'iovalkey': {
      const Class = (library === 'ioredis' ? Redis : Valkey) as typeof Redis;
      const clients = addresses.map((address) => new Class(address));
      await Promise.all(clients.map((client) => client.ping()));
      return { clients, close: () => Promise.all(clients.map((client) => client.quit())) };
    }
    case 'node-redis 6':
    case 'node-redis 5': {
      const create = (library === 'node-redis 6' ? createClient6 : createClient5) as typeof createClient6;
      const clients = addresses.map(({ host, port }) => create({ socket: { host, port } }).on('error', () => undefined));
      await Promise.all(clients.map((client) => client.connect()));
      return { clients, close: () => Promise.all(clients.map((client) => client.quit())) };
    }
    case 'GLIDE': {
      const clients = await Promise.all(addresses.map((address) => GlideClient.createClient({ addresses: [address] })));
      return { clients, close: async () => clients.forEach((client) => client.close()) };
    }
  }
}

function quorumlockOver(library: Library): Peer {
  return {
    name: `quorumlock · ${library}`,
    settings: { defaults: `quorumlock defaults over ${library} clients (the library's defaults)`, 'one-attempt': 'n/a' },
    create: () => {
      throw new Error('opens its own clients');
    },
    async open(set) {
      const opened = await connect(library, set);
      const redlock = new Redlock(opened.clients as never);
      return {
        async acquire(resource, ttl) {
          const lock = await redlock.acquire(resource, ttl);
          return { validityMs: lock.remainingMs(), release: async () => (await lock.release()).freed };
        },
        isAcquireFailure: (error) => error instanceof LockAcquireError,
        close: () => redlock.quit().then(() => opened.close().then(() => undefined)),
      } satisfies Locker;
    },
  };
}

const adapters: Record<'ioredis' | 'node-redis 6' | 'GLIDE', (client: never) => RedisAdapter> = {
  ioredis: (client) => new IoredisAdapter(client),
  'node-redis 6': (client) => new NodeRedisAdapter(client),
  GLIDE: (client) => new GlideAdapter(client),
};

/** redlock-universal as bench/peers.ts runs it (one RedLock per acquire, its defaults), over its adapter for `library`. */
function universalOver(library: keyof typeof adapters): Peer {
  return {
    name: `redlock-universal · ${library}`,
    settings: { defaults: `redlock-universal defaults over its ${library} adapter`, 'one-attempt': 'n/a' },
    create: () => {
      throw new Error('opens its own clients');
    },
    async open(set) {
      const opened = await connect(library, set);
      const members = opened.clients.map((client) => adapters[library](client as never));
      return {
        async acquire(resource, ttl) {
          const lock = createRedlock({ adapters: members, key: resource, ttl });
          const handle = await lock.acquire();
          return { validityMs: ttl - (Date.now() - handle.acquiredAt), release: () => lock.release(handle) };
        },
        isAcquireFailure: (error) => error instanceof LockAcquisitionError,
        close: () => opened.close().then(() => undefined),
      } satisfies Locker;
    },
  };
}

export const CLIENT_LIBRARIES: readonly Peer[] = [
  quorumlockOver('ioredis'),
  quorumlockOver('iovalkey'),
  quorumlockOver('node-redis 6'),
  quorumlockOver('node-redis 5'),
  quorumlockOver('GLIDE'),
  universalOver('ioredis'),
  universalOver('node-redis 6'),
  universalOver('GLIDE'),
];
