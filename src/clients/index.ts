/**
 * Which adapter serves a client: the one place that tells the supported libraries apart, by what
 * their clients offer (no library is imported: each is an optional peer dependency).
 */
import type { Connection, Library } from './connection.js';
import { ioredisConnection, isIoredis, type IoredisClusterLike, type IoredisLike } from './ioredis.js';
import { memberIdOf, type ClientShape } from './id.js';
import { describeGlide, glideConnection, isGlide, type GlideClusterLike, type GlideLike } from './glide.js';
import { describeNodeRedis, isNodeRedis, nodeRedisConnection, type NodeRedisClusterLike, type NodeRedisLike } from './node-redis.js';

export type { Connection, ConnectionEvent, Library, Loader, Subscription } from './connection.js';
export type { IoredisClusterLike, IoredisLike } from './ioredis.js';
export type { GlideClusterLike, GlideLike } from './glide.js';
export type { NodeRedisClusterLike, NodeRedisLike } from './node-redis.js';

/**
 * A member's client: an ioredis or iovalkey client (a single master, or a Sentinel-managed
 * group) or Cluster, a node-redis client (`createClient`) or Cluster (`createCluster`), or a Valkey GLIDE GlideClient or
 * GlideClusterClient. Typed by what quorumlock uses, so each library's own classes fit as they are.
 */
export type MemberClient = IoredisLike | IoredisClusterLike | NodeRedisLike | NodeRedisClusterLike | GlideLike | GlideClusterLike;

/** What names a client, known without I/O (the options check uses it). */
export interface ClientDescription {
  library: Library;
  id: string;
  isCluster: boolean;
  keyPrefix: string;
  /** Why quorumlock cannot take this client (its adapter's word), if it cannot. */
  refused?: string | undefined;
}

/** The supported libraries, as errors list them. */
export const SUPPORTED = 'a client of ioredis, iovalkey, node-redis (redis) or Valkey GLIDE';

/** What `client` is, or undefined when it is no supported library's client. */
export function describeClient(client: unknown): ClientDescription | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  if (isIoredis(client)) {
    const shape = client as ClientShape;
    // Its integer replies come as strings: no script reply would read as what it says.
    const refused = shape.options?.stringNumbers === true ? "has ioredis' stringNumbers option on: give quorumlock a client without it" : undefined;
    return { library: 'ioredis', id: memberIdOf(shape), isCluster: shape.isCluster === true, keyPrefix: shape.options?.keyPrefix ?? '', refused };
  }
  if (isGlide(client)) return { library: 'glide', ...describeGlide(client) };
  if (isNodeRedis(client)) return { library: 'node-redis', ...describeNodeRedis(client) };
  return undefined;
}

/** One connection per client, however many Redlocks share it: its watch, epochs and binding hang on it. */
const connections = new WeakMap<object, Connection>();

/** The connection that adapts `client` (made on first use). The options check has accepted it. */
export function connectionOf(client: MemberClient): Connection {
  let connection = connections.get(client);
  if (connection === undefined) connections.set(client, (connection = adapt(client)));
  return connection;
}

function adapt(client: MemberClient): Connection {
  if (isIoredis(client)) return ioredisConnection(client);
  if (isGlide(client)) return glideConnection(client);
  return nodeRedisConnection(client as NodeRedisLike | NodeRedisClusterLike);
}
