/**
 * One simulated Redis master: the fake Redis of the interleaving model (test/model/fake-redis.ts),
 * which runs quorumlock's REAL scripts (src/lua/sources.ts, as shipped) in fengari against an
 * in-memory keyspace, given its own clock, with SIGSTOP-like pauses. Nothing of a script is
 * re-implemented here: what a member answers is what the Lua computes (acquire, release, extend,
 * leave, trust, the epoch read and binding of _bound.lua, lines of waiters, fencing, shared locks).
 *
 * Time: member-local time is `offsetMs + rate × true time` (FakeRedisServer's `rate`), read in
 * whole ms for expiries as Redis' mstime() is, and in µs by TIME. A key set with PX ttl at local
 * time L is gone once local time exceeds L + ttl (Redis: expired when now > when), so a member
 * with rate > 1 drops keys early in true time. Expiry is evaluated lazily, whenever a command
 * touches the key: the scripts are the only observers, so this is the same as Redis' active
 * expiry as far as any client can tell.
 *
 * A run stops (`fatal`) when the fake is asked for a command it does not implement, or a script
 * fails with anything but the refusals the protocol defines (QUORUMLOCK_EPOCH, QUORUMLOCK_ROLE):
 * a simulation must never go on with an answer Redis would not give.
 */
import type { ManualClock } from '../../src/index.js';
import { FakeRedisServer, ErrorReply, type Reply } from '../../test/model/fake-redis.js';
import { decodeReply, ReplyError } from '../../test/model/fake-client.js';

export interface MemberSpec {
  /** Appears in memberId as host:port/0. */
  host: string;
  port: number;
  /** Member-local ms per true ms: 1.05 = the clock runs 5 % fast. */
  rate: number;
  /** Member-local time at true time 0. */
  offsetMs: number;
}

/** Error replies a script gives by design (src/lua/_bound.lua): the client handles them. */
const PROTOCOL_REFUSAL = /^QUORUMLOCK_(EPOCH|ROLE)\b/;

export class SimMember {
  readonly server: FakeRedisServer;
  #paused = false;
  #queue: (() => void)[] = [];
  /** Set when the run met something the simulation must not answer (see above). */
  fatal: Error | undefined;

  constructor(
    readonly clock: ManualClock,
    readonly spec: MemberSpec,
  ) {
    this.server = new FakeRedisServer({ clock, host: spec.host, port: spec.port, rate: spec.rate, offsetMs: spec.offsetMs });
  }

  /** Redis' mstime(): whole ms on this member's clock. */
  localNow(): number {
    return this.server.nowMs();
  }

  /** Runs a command now, or queues it until resume() when paused (SIGSTOP). */
  execute(job: () => void): void {
    if (this.#paused) this.#queue.push(job);
    else job();
  }

  pause(): void {
    this.#paused = true;
  }

  /** SIGCONT: queued commands run at once, in arrival order. */
  resume(): void {
    this.#paused = false;
    const queued = this.#queue;
    this.#queue = [];
    for (const job of queued) job();
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** The value of `key` right now (for diagnostics; no side effects beyond lazy expiry). */
  peek(key: string): string | undefined {
    return this.server.peek(key);
  }

  /**
   * Runs script `lua` (its sha1 `sha`) as ioredis' defineCommand sends it: EVALSHA, and EVAL when
   * the server has not seen it. Returns the reply as ioredis decodes it; throws an error reply as
   * ioredis rejects with it (a ReplyError).
   */
  run(script: { lua: string; sha: string }, keys: readonly string[], args: readonly string[]): unknown {
    let reply: Reply = this.server.execute(['EVALSHA', script.sha, String(keys.length), ...keys, ...args]);
    if (reply instanceof ErrorReply && reply.message.startsWith('NOSCRIPT'))
      reply = this.server.execute(['EVAL', script.lua, String(keys.length), ...keys, ...args]);
    const problem = this.server.problems[0];
    if (problem !== undefined) this.fatal ??= new Error(`sim: fake-redis ${this.spec.port} does not implement ${problem}`);
    if (reply instanceof ErrorReply) {
      if (!PROTOCOL_REFUSAL.test(reply.message)) this.fatal ??= new Error(`sim: a script failed on ${this.spec.port}: ${reply.message}`);
      throw new ReplyError(reply.message);
    }
    return decodeReply(reply);
  }
}
