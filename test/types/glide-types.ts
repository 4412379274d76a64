/**
 * Compile-time checks (tsc over test/, nothing runs): GLIDE's own client classes fit the GLIDE
 * adapter's loose types as they are, and a standalone client is no Cluster.
 */
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import type { GlideClusterLike, GlideLike } from '../../src/clients/glide.js';

export function glideClientsFit(client: GlideClient, cluster: GlideClusterClient): GlideLike[] {
  const clusterLike: GlideClusterLike = cluster;
  // @ts-expect-error a GlideClient cannot route scripts
  const notCluster: GlideClusterLike = client;
  void notCluster;
  return [client, clusterLike];
}
