/**
 * Which adapter serves a client: the one place that tells the supported libraries apart, by what
 * their clients offer (no library is imported: each is an optional peer dependency).
 */
import type { Connection, Library } from './connection.js';
import { ioredisConnection, isIoredis, type IoredisClusterLike, type IoredisLike } from './ioredis.js';
import { memberIdOf, type ClientShape } from './id.js';

export type { Connection, ConnectionEvent, Library, Loader, Subscription } from './connection.js';
export type { IoredisClusterLike, IoredisLike } from './ioredis.js';

/**
 * A member's client: an ioredis or iovalkey client (a single master, or a Sentinel-managed
 * group) or Cluster. Typed by what quorumlock uses, so each library's own classes fit as they are.
 */
export type MemberClient = IoredisLike | IoredisClusterLike;

/** What names a client, known without I/O (the options check uses it). */
export interface ClientDescription {
  library: Library;
  id: string;
  isCluster: boolean;
  keyPrefix: string;
}

/** The supported libraries, as errors list them. */
export const SUPPORTED = 'a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE';

/** What `client` is, or undefined when it is no supported library's client. */
export function describeClient(client: unknown): ClientDescription | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  if (isIoredis(client)) {
    const shape = client as ClientShape;
    return { library: 'ioredis', id: memberIdOf(shape), isCluster: shape.isCluster === true, keyPrefix: shape.options?.keyPrefix ?? '' };
  }
  return undefined;
}

/** One connection per client, however many Redlocks share it: its watch, epochs and binding hang on it. */
const connections = new WeakMap<object, Connection>();

/** The connection that adapts `client` (made on first use). The options check has accepted it. */
export function connectionOf(client: MemberClient): Connection {
  let connection = connections.get(client);
  if (connection === undefined) connections.set(client, (connection = ioredisConnection(client)));
  return connection;
}
