/** How a member is named, from its client's options alone (no I/O: argument checks use it). */

/** The parts of an ioredis (or iovalkey) client's options that name it. */
export interface ClientShape {
  options?: {
    keyPrefix?: string;
    host?: string;
    port?: number;
    path?: string;
    db?: number;
    name?: string;
    sentinels?: { host?: string; port?: number }[] | null;
    stringNumbers?: boolean;
  };
  startupNodes?: (string | number | { host?: string; port?: number })[];
  isCluster?: boolean;
}

/** A server's address as ids show it: host:port (6379 and localhost when not given). */
export const address = (node: { host?: string | undefined; port?: number | string | undefined }) => `${node.host ?? 'localhost'}:${node.port ?? 6379}`;

/** The id of a Cluster member: its seed nodes, sorted. */
export const clusterId = (nodes: readonly string[]) => `cluster:${[...nodes].sort().join(',')}`;

/**
 * How votes, logs and duplicate checks name a member: host:port/db, socket/db,
 * sentinel:name@sentinels/db for a Sentinel-managed group, cluster:nodes for a Cluster.
 */
export function memberIdOf(shape: ClientShape): string {
  if (Array.isArray(shape.startupNodes)) {
    return clusterId(shape.startupNodes.map((node) => (typeof node === 'object' ? address(node) : String(node))));
  }
  const options = shape.options ?? {};
  const db = options.db ?? 0;
  if (options.sentinels && options.sentinels.length > 0) {
    return `sentinel:${options.name ?? 'mymaster'}@${options.sentinels.map(address).sort().join(',')}/${db}`;
  }
  return `${options.path ? options.path : address(options)}/${db}`;
}
