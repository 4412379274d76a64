/**
 * Leader election on the quorum (docs/elections.md). Leadership IS the exclusive lock on
 * electionResource(name) (keys.ts), acquired fenced: every safety property is the lock's.
 *   - At most one leader per term, and at most one leader at any time within the lock's
 *     guarantee: two leaders would be two holders of one Redlock lock (docs/safety.md).
 *   - The term is the lock's fencing token: strictly larger than every token issued before for
 *     this resource, by any client (docs/safety.md, "Fencing tokens"), so strictly increasing
 *     across successive leaders, and usable by the protected side to refuse a deposed leader.
 *   - A leader learns of a loss through leadership.signal, before its validity ends when
 *     extensions fail (the stop margin, leadership.ts), at the latest at the deadline otherwise.
 * Who leads is read from the leader record (election.lua), judged by quorum (judge.ts).
 */
import { LockAcquireError } from '../errors.js';
import { checkAcquireOptions } from '../options/check.js';
import type { Settings } from '../options/settings.js';
import type { Lock } from '../lock/lock.js';
import type { AttemptPolicy } from '../options/settings.js';
import { NOT_COUNTING, type LeaderReading } from '../store/protocol.js';
import { electionResource } from '../store/keys.js';
import { onEveryMember, readLimitMs, type RoundMember } from '../quorum/operator.js';
import { quorumOf } from '../tally.js';
import { LeaderUnknownError, type LeaderVote } from './errors.js';
import { judgeLeader, type LeaderInfo } from './judge.js';
import { Leadership } from './leadership.js';
import { checkElection, checkSignalOptions, type CampaignOptions, type ElectionConfig, type ElectionOptions, type ObserveOptions } from './options.js';

/** How long one acquire of a campaign waits before it is renewed (see campaign()). */
export const CAMPAIGN_STRETCH_MS = 5 * 60_000;

/** What an election needs of a member: RedisMember's election calls (src/members/redis-member.ts), sent in rounds (quorum/operator.ts). */
export interface ElectionMember extends RoundMember {
  writeLeader(resource: string, value: string, term: number, id: string): Promise<boolean>;
  /** The reading, with the member's quarantine left of `quarantineMs` (0 = off). */
  readLeader(resource: string, quarantineMs: number): Promise<LeaderReading>;
}

/** @internal What a Redlock gives its elections. */
export interface ElectionContext {
  readonly members: readonly ElectionMember[];
  readonly settings: Settings;
  /** Redlock's acquire for names already checked (the election's resource is reserved to users). */
  acquire(resources: readonly string[], ttl: number, policy: AttemptPolicy): Promise<Lock>;
}

/**
 * A leader election on the Redlock's members (docs/elections.md), from `redlock.election(name,
 * options)`: campaign() waits to lead, leader() and observe() say who leads. Leadership is the
 * fenced lock of a reserved resource, so a leader gets a term that orders it after every earlier
 * leader: pass the term with each write so that a paused old leader's writes can be refused.
 */
export class Election {
  /** The election's name: candidates with the same name on the same members contend. */
  readonly name: string;
  /** The leadership's ttl, ms (checked at creation). */
  readonly ttl: number;
  /** This candidate's id, as observers see it in leader().id. */
  readonly id: string;
  /** How often observe() reads the leader, ms. */
  readonly pollInterval: number;
  readonly #context: ElectionContext;
  readonly #resource: readonly string[];

  /** @internal Made by redlock.election(name, options). */
  constructor(context: ElectionContext, name: string, options: ElectionOptions) {
    const config: ElectionConfig = checkElection(name, options, context.settings);
    this.#context = context;
    this.name = config.name;
    this.ttl = config.ttl;
    this.id = config.id;
    this.pollInterval = config.pollInterval;
    this.#resource = Object.freeze([electionResource(this.name)]);
  }

  /**
   * Waits in the fair line of the election's lock until this candidate is elected; resolves with
   * the Leadership, kept (extended) until it is lost or resigned. Rejects with signal.reason when
   * aborted, and with a LockAcquireError (stoppedBecause 'clients closed') when so many members'
   * clients have ended that no campaign could win; nothing is left behind then.
   */
  async campaign(options?: CampaignOptions): Promise<Leadership> {
    const signal = checkSignalOptions(options, 'campaign');
    const { settings } = this.#context;
    // Waiting in stretches of CAMPAIGN_STRETCH_MS: an acquire keeps a record of every attempt (for
    // its error), which over days of waiting would grow without bound. Between stretches the
    // candidate steps out of the line and back in at its end: fairness among standby candidates
    // is kept within a stretch only, which an election does not need beyond that.
    const waitTimeout = Math.max(CAMPAIGN_STRETCH_MS, this.ttl * 10);
    const policy = checkAcquireOptions({ fencing: true, retryCount: Infinity, waitTimeout, ...(signal ? { signal } : {}) }, settings);
    let lock: Lock;
    for (;;) {
      try {
        lock = await this.#context.acquire(this.#resource, this.ttl, policy);
        break;
      } catch (error) {
        // Clients ended (quit, or a reconnect strategy that gave up) answer nothing again: with too
        // many of them no campaign can win, and each attempt fails at once (acquire-loop.ts).
        if (signal?.aborted || !(error instanceof LockAcquireError) || error.stoppedBecause === 'clients closed') throw error;
        // Held all along is the normal wait; anything else (members unreachable, quarantined) is worth a word.
        if (error.outcome !== 'taken')
          settings.logger.warn({ election: this.name, outcome: error.outcome, attempts: error.attempts.length }, 'still campaigning');
      }
    }
    const leadership = new Leadership({ name: this.name, id: this.id, ttl: this.ttl, settings, announce: (held, term) => this.#announce(held, term) }, lock);
    // Recorded before campaign() resolves: leader() names this leader from then on.
    await this.#announce(lock, leadership.term);
    settings.logger.info({ election: this.name, id: this.id, term: leadership.term, lockId: lock.id }, 'elected');
    return leadership;
  }

  /**
   * Who leads now, as a quorum of members says: { id, term, remainingMs }, or null when the
   * leadership is vacant. Rejects with LeaderUnknownError when that cannot be told (too few
   * members answered, an absence from a member inside its restart quarantine counting as no
   * answer; or a handover is under way and no quorum names one leader yet).
   */
  async leader(): Promise<LeaderInfo | null> {
    const { members, settings } = this.#context;
    const startedAt = settings.clock.now();
    // As an acquire's: an absence from a member inside it is no evidence of a vacancy (judge.ts).
    const { quarantineMs } = settings;
    const results = await onEveryMember({
      operation: 'read',
      members,
      call: (member) => member.readLeader(this.#resource[0]!, quarantineMs),
      timeoutMs: settings.nodeTimeout,
      // Safe to wait longer: the judge takes the time the read took off every remainingMs.
      limitMs: readLimitMs(settings.nodeTimeout),
      clock: settings.clock,
    });
    const votes = results.map(({ member, value: reading, error, timedOut, notCounting }): LeaderVote => {
      // Silent at the deadline: unknown, as any member that was not heard (judge.ts).
      if (timedOut) return { member, error: `no answer within ${settings.nodeTimeout} ms` };
      if (reading === undefined) return { member, error: error?.message ?? 'no answer' };
      // The round read the member's standing after its answer: one that stopped counting meanwhile, or
      // a second address of a server already heard, does not count.
      const why = notCounting ?? (reading.quarantinedForMs === NOT_COUNTING ? 'not a master' : undefined);
      return why === undefined ? { member, reading } : { member, reading, error: `does not count: ${why}` };
    });
    const judged = judgeLeader(votes, quorumOf(members.length), settings.clock.now() - startedAt, settings.driftFactor);
    if ('leader' in judged) return judged.leader;
    if ('vacant' in judged) return null;
    throw new LeaderUnknownError(this.name, votes, judged.unknown);
  }

  /**
   * Yields the leader now, then each change (another term, or null when vacant), by reading
   * leader() every pollInterval ms. A change is yielded at most pollInterval + nodeTimeout after
   * a quorum's records show it; a leadership shorter than that may be missed (terms then jump).
   * Reads that cannot tell (LeaderUnknownError) yield nothing. Ends when `signal` aborts.
   */
  async *observe(options?: ObserveOptions): AsyncGenerator<LeaderInfo | null, void, undefined> {
    const signal = checkSignalOptions(options, 'observe');
    const { clock } = this.#context.settings;
    let last: string | undefined;
    while (!signal?.aborted) {
      let now: LeaderInfo | null | undefined;
      try {
        now = await this.leader();
      } catch (error) {
        if (!(error instanceof LeaderUnknownError)) throw error;
      }
      if (signal?.aborted) return;
      if (now !== undefined) {
        const key = now === null ? 'vacant' : `${now.term} ${now.id}`;
        if (key !== last) {
          last = key;
          yield now;
        }
      }
      try {
        await clock.sleep(this.pollInterval, signal);
      } catch {
        return;
      }
    }
  }

  /** Writes the leader record on every member where the lock is ours; resolves with how many did. */
  async #announce(lock: Lock, term: number): Promise<number> {
    const { members, settings } = this.#context;
    const results = await onEveryMember({
      operation: 'announce',
      members,
      call: (member) => member.writeLeader(this.#resource[0]!, lock.value, term, this.id),
      timeoutMs: settings.nodeTimeout,
      clock: settings.clock,
    });
    return results.filter((result) => result.value === true).length;
  }
}
