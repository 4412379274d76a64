/**
 * What the algorithm (src/quorum) needs from a member, and nothing more: go-redsync's narrow
 * `Conn`. RedisMember implements it over an ioredis client (a server, a Sentinel group or a
 * Cluster: members/redis-member.ts, members/cluster.ts); unit tests implement it with a fake.
 *
 * Each method is one script call (store/protocol.ts has its arguments and reply). Calls to one
 * member run in the order they were made (a release never overtakes the acquire it undoes).
 */
import type { AcquireRequest, AcquireVote, ExtendCall, ExtendReply, FenceCall, FenceReply, LeaveCall, ReleaseCall } from '../store/protocol.js';

export type { AcquireRequest, AcquireVote, ExtendCall, ExtendReply, FenceCall, FenceReply, LeaveCall, ReleaseCall };

export interface Member {
  /** How votes, logs and duplicate checks name the member (members/id.ts). */
  readonly id: string;
  /**
   * Why this member's yes must not count in any round, or undefined when it may: it is not a
   * master, may evict lock keys, or is the same server as another member.
   */
  readonly notCounting: string | undefined;
  /**
   * What names the member's server (its run id), as last read; undefined when not known. Two
   * members with one identity are one failure domain: a round counts a yes from only one of them
   * (quorum/round.ts), whichever order their answers and readings arrive in.
   */
  readonly serverId?: string | undefined;
  /**
   * When the member's server last showed that it works through our calls (it answered a new
   * connection's ready check, INFO or epoch read: members/hearing.ts), on the Redlock's clock; undefined where
   * that is not known (a Cluster, a test's member). A round counts silence from it (quorum/round.ts).
   */
  readonly heardAt?: number | undefined;
  /** This member's client has ended (quit, or its reconnect strategy gave up): it answers nothing again (undefined where not known). */
  readonly clientEnded?: boolean | undefined;
  /**
   * Sets the lock keys of `resources` (all or none), or says why not. `open`: whether the round
   * that made the call still waits for it (a call refused for another epoch is sent again, bound
   * to the epoch found, only while it does: members/epochs.ts).
   */
  acquire(resources: readonly string[], request: AcquireRequest, open?: Open): Promise<AcquireVote>;
  /** Renews the keys' expiry to `ttlMs` if every one still holds `value`. */
  extend(resources: readonly string[], call: ExtendCall, open?: Open): Promise<ExtendReply>;
  /**
   * Deletes the keys that hold `value`; resolves with how many; the first waiter in line is told
   * (or handed the lock). `leaving`: the holder's waiter id, which leaves every line with this
   * release; `abandoned`: its handover values it did not win with, taken back (release.lua).
   */
  release(resources: readonly string[], call: ReleaseCall): Promise<number>;
  /** Gives up `waiterId`'s places in the lines of `resources`, taking back its `abandoned` handover values. */
  leave(resources: readonly string[], call: LeaveCall): Promise<number>;
  /**
   * Raises the fence counters of `resources` to `token`, in the epoch `epoch` ('' for a propose
   * to a member not heard in the acquire round); a sync with `floor` also repairs an incomplete
   * epoch (fence.lua).
   */
  fence(resources: readonly string[], call: FenceCall, open?: Open): Promise<FenceReply>;
}

/** Whether the round that made a call still waits for its answer. */
export type Open = () => boolean;
