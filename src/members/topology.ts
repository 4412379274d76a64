/**
 * What differs between kinds of member: where their keys and epochs are, how their server facts
 * are read, and whether our calls share one socket. One implementation per topology:
 * serverTopology in members/redis-member.ts (a master, or a Sentinel-managed group) and
 * members/cluster.ts.
 */
import type { ServerFacts } from '../store/server.js';

export interface Topology {
  /** resourceKeys() of `resources` as this member's scripts need them. */
  keysOf(resources: readonly string[]): readonly string[];
  /** The epoch hash a call on `resources` uses. */
  epochKeyOf(resources: readonly string[]): string;
  /** Every epoch hash of the member: trust and restoreFencing write each. */
  everyEpochKey(): readonly string[];
  /** Reads what the server says about itself; undefined when the client cannot (a stand-in). */
  readonly readFacts: (() => Promise<ServerFacts>) | undefined;
  /** Our calls share one socket, which our calls may cork for a tick (batching.ts) (not a Cluster's). */
  readonly oneSocket: boolean;
  /**
   * The run ids of the server processes that hold the member's data now (a Cluster's master
   * nodes), for an operator's call to know which processes it began with; undefined for a
   * member whose one connection shows a new process itself (RedisMember's connection count).
   */
  readonly processes?: (() => Promise<ReadonlySet<string>>) | undefined;
}
