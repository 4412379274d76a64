/** How a member is named, from its client's options alone (no I/O: argument checks use it). */
import type { Cluster, Redis } from 'ioredis';

/**
 * What a member can be: an ioredis client (a single master, or a Sentinel-managed group), or an
 * ioredis Cluster. Both offer what quorumlock uses (defineCommand, duplicate, events).
 */
export type MemberClient = Redis | Cluster;

/** The parts of a client's options that name it. */
export interface ClientShape {
  options?: {
    keyPrefix?: string;
    host?: string;
    port?: number;
    path?: string;
    db?: number;
    name?: string;
    sentinels?: { host?: string; port?: number }[] | null;
  };
  startupNodes?: (string | number | { host?: string; port?: number })[];
  isCluster?: boolean;
}

const address = (node: { host?: string; port?: number }) => `${node.host ?? 'localhost'}:${node.port ?? 6379}`;

/**
 * How votes, logs and duplicate checks name a member: host:port/db, socket/db,
 * sentinel:name@sentinels/db for a Sentinel-managed group, cluster:nodes for a Cluster.
 */
export function memberId(client: MemberClient): string {
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

export const isClusterClient = (client: MemberClient): client is Cluster => (client as ClientShape).isCluster === true;

/** The client's keyPrefix: on a cluster, slots are those of the prefixed keys. */
export const keyPrefixOf = (client: MemberClient): string => (client as ClientShape).options?.keyPrefix ?? '';
