/**
 * One round: send one script to every member at once and count the answers as they arrive.
 *
 * A member that misses its deadline is counted as 'timeout'; its command is not cancelled (Redis
 * has no way to), which is why every rollback and release goes to every member: on the same
 * connection our release is queued behind the late command and runs after it.
 *
 * Deadlines are about liveness only. Nothing in a round makes a lock safer or less safe by waiting
 * longer: validity is counted from `startedAt`, read before anything was sent, and the caller
 * checks it against the clock *after* the round (attempt.ts, lock.ts). So a round may count a
 * reply it read late, and may wait longer for a member that is provably alive, without weakening
 * any lock; what bounds it is the caller's budget (`limitMs`).
 *
 * Three things that look like an outage and are not (docs/internals.md#timers-before-io):
 * - A stall after the replies arrived (GC, a CPU burst): each loop iteration runs expired timers
 *   before it polls for I/O, so a deadline fires before replies that already reached the socket
 *   are read. A deadline therefore only *schedules* the decision, in a setImmediate: the poll
 *   phase between the two reads what arrived, and those votes count.
 * - A stall before our command was written: Member corks the socket for the tick, and the tick
 *   may run on for a while (a busy caller, a burst of 10,000 acquires started at once). Each
 *   member's time starts when the tick that sent the round ends, not when the round started.
 * - A member working through a backlog of our own commands (a burst): it answers our earlier
 *   calls one after another, and ours comes when its turn comes (so does our write: libuv writes
 *   at most 1024 buffers per loop iteration, the rest of a big tick in later ones). With
 *   `limitMs`, a member that answered one of our calls sent before this round's less than
 *   `timeoutMs` ago is alive, and its deadline moves on, up to the limit. A member that answers
 *   nothing of ours for `timeoutMs` is timed out, busy or not.
 * - A new connection's first calls: our call waits for the connection, then for the epoch read
 *   its write is bound to, and only then is written. On a busy machine these round trips can take
 *   longer than `timeoutMs` together while each answer comes in time. With `limitMs`, the member
 *   answering the connection's ready check, INFO or that read is a sign of life too (Member.heardAt,
 *   members/hearing.ts): its deadline moves on from there, up to the limit. A member down,
 *   paused or cut off answers nothing, and times out `timeoutMs` after the sending tick, as before.
 */
import { nextTick } from 'node:process';
import { onAbort, type Clock } from '../clock/index.js';
import { channels } from '../diagnostics.js';
import { QuorumlockError, sameServerAs } from '../errors.js';
import type { Member, Open } from '../members/member.js';
import type { Answered, LockAnswer, MemberVote } from './votes.js';

/** The answer that counts toward quorum in acquire, extend and fence rounds. */
export const isLocked = (answer: LockAnswer): boolean => answer === 'locked';

/** 'won': quorum reached. 'lost': too many no's for quorum to be reached. 'open': keep waiting. */
export type Decision = 'won' | 'lost' | 'open';

/**
 * Where a round of `memberCount` members stands after `yes` votes that count and `no` others,
 * when `quorum` yes win it (quorumOf, src/tally.ts: a strict majority). Pure, so it can be
 * checked exhaustively.
 */
export function decide(yes: number, no: number, memberCount: number, quorum: number): Decision {
  if (yes >= quorum) return 'won';
  if (memberCount - no < quorum) return 'lost';
  return 'open';
}

/**
 * The error a vote keeps: ours as it is; any other, its name, message and code, nothing else. ioredis hangs the failed
 * command on its errors, and a command's arguments hold the lock value (the capability to extend
 * and release), while votes reach logs, events, traces and error objects the caller may print.
 */
export function voteError(error: unknown): Error {
  // Our own errors carry data, never a command's arguments: kept as they are (instanceof works).
  if (error instanceof QuorumlockError) return error;
  if (!(error instanceof Error)) return new Error(String(error));
  const clean = new Error(error.message);
  clean.name = error.name;
  const code = (error as { code?: unknown }).code;
  if (code !== undefined) Object.assign(clean, { code });
  return clean;
}

export interface RoundSpec<Answer extends string, Reply = Answered<Answer>> {
  /** What the round does, for the vote events ('read': election.leader(), a semaphore's permits; 'announce': an election's leader record). */
  operation: 'acquire' | 'extend' | 'release' | 'fence' | 'trust' | 'restore' | 'read' | 'announce';
  members: readonly Member[];
  /**
   * The yes votes that win the round: the members' quorum (quorumOf), which the caller knows from
   * its context (a Redlock computes it once: LockContext), rather than the round per call.
   */
  quorum: number;
  /** `open()`: whether this round still waits for the answer (members/epochs.ts sends a refused call again only then). */
  send(member: Member, index: number, open: Open): Promise<Reply>;
  /**
   * What member `index`'s reply answers (the reply itself when absent), read in the round's own
   * reaction to it: no promise of its own per member call. Called for every reply, also one that
   * comes after the round was decided; what it throws is the member's error.
   */
  answer?(reply: Reply, index: number, member: Member): Answered<Answer>;
  /** Called once, when every member's call has settled (replied or failed), before or after the decision. */
  heardAll?(): void;
  /** Whether an answer counts toward quorum. */
  counts(answer: Answer): boolean;
  /**
   * How long a member may stay silent: from the end of the tick that sent this round, and, with
   * `limitMs`, from its latest answer to one of our calls sent before this round's.
   */
  timeoutMs: number;
  /**
   * The most the round may last, from `startedAt`, however busy its members are: the caller's
   * budget (what is left of the wait budget, the lock's validity). Members still answering our
   * earlier calls when it ends are reported 'pending' (not waited for), not 'timeout'. Without
   * it the round ends `timeoutMs` after the tick that sent it, and a backlog moves no deadline.
   */
  limitMs?: number | undefined;
  /**
   * false: settle the moment the outcome is known (quorum reached, or out of reach), without
   * waiting for stragglers. true: hear from every member, up to the deadline.
   */
  waitForAll: boolean;
  clock: Clock;
  signal?: AbortSignal | undefined;
}

export interface RoundResult<Answer extends string> {
  won: boolean;
  votes: MemberVote<Answer>[];
  /** Clock reading taken before the first command was sent. */
  startedAt: number;
  /** From startedAt to the decision. */
  elapsedMs: number;
}

/**
 * How far a member got through the calls rounds sent it, across all rounds (stragglers of closed
 * rounds included): the evidence that a member with our command still pending is alive.
 */
interface Pace {
  /** Our calls sent to it so far; a call's number is its place in that order. */
  sent: number;
  /** The number of the call whose answer was read last, and when. */
  lastAnswered: number;
  lastAnsweredAt: number;
}

const paces = new WeakMap<Member, Pace>();

function paceOf(member: Member): Pace {
  let pace = paces.get(member);
  if (!pace) {
    pace = { sent: 0, lastAnswered: 0, lastAnsweredAt: -Infinity };
    paces.set(member, pace);
  }
  return pace;
}

/**
 * When `call` last showed progress toward it: the member answered one of our calls sent before
 * it. Calls reach a member in the order they were made (Member #call), so such an answer means the
 * member is working through what stands ahead of ours. An answer to a later call proves nothing
 * about ours (on a Cluster it may come from another node): no progress then.
 */
function progressAt(pace: Pace, call: number): number {
  return pace.lastAnswered < call ? pace.lastAnsweredAt : -Infinity;
}

/** Rejects with `signal.reason` if the signal aborts before the round is decided. */
export function runRound<Answer extends string, Reply = Answered<Answer>>(spec: RoundSpec<Answer, Reply>): Promise<RoundResult<Answer>> {
  return new Round(spec, spec.limitMs).result;
}

class Round<Answer extends string, Reply> {
  readonly result: Promise<RoundResult<Answer>>;
  readonly #spec: RoundSpec<Answer, Reply>;
  readonly #limitMs: number | undefined;
  readonly #startedAt: number;
  readonly #votes: MemberVote<Answer>[];
  /** Per member, the number of our call in its Pace order. */
  readonly #calls: number[] = [];
  #yesCount = 0;
  #noCount = 0;
  /** Member calls settled (replied or failed), stragglers included: for heardAll. */
  #heard = 0;
  /** The servers (serverId) that gave a yes in this round, and the member each answered as. */
  #servers: Map<string, string> | undefined;
  #closed = false;
  readonly #open: Open = () => !this.#closed;
  /** When the tick that sent the round ended: every member's time starts there. */
  #writtenAt: number | undefined;
  #timer: unknown;
  /** The timer fired early once and was set again for the rest (#arm). */
  #rearmed = false;
  #decision: NodeJS.Immediate | undefined;
  #resolve!: (result: RoundResult<Answer>) => void;
  #reject!: (reason: unknown) => void;
  /** Made only for a round with a signal: most have none, and a round is made per call. */
  readonly #onAbort: (() => void) | undefined;
  /** Stops listening to the signal (clock/abort.ts). */
  #stopListening: (() => void) | undefined;

  constructor(spec: RoundSpec<Answer, Reply>, limitMs: number | undefined) {
    this.#spec = spec;
    this.#limitMs = limitMs;
    this.result = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#startedAt = spec.clock.now();
    this.#votes = spec.members.map((member) => ({ member: member.id, vote: 'pending', ms: 0 }));
    spec.members.forEach((member, index) => this.#send(member, index));
    if (spec.members.length === 0) this.#settle();
    const { signal } = spec;
    if (signal) {
      this.#onAbort = () => this.#close(() => this.#reject(signal.reason ?? new DOMException('This operation was aborted.', 'AbortError')));
      if (signal.aborted) this.#onAbort();
    }
    if (this.#closed) return;
    if (this.#onAbort) this.#stopListening = onAbort(signal!, this.#onAbort);
    // Member writes the tick's calls when the tick ends (it corks the socket until then), in a
    // nextTick queued before this one: from here on our command is on its way.
    nextTick(Round.#sentOf, this);
  }

  #send(member: Member, index: number): void {
    const { clock } = this.#spec;
    const pace = paceOf(member);
    const call = ++pace.sent;
    this.#calls[index] = call;
    let sent: Promise<Reply>;
    try {
      sent = this.#spec.send(member, index, this.#open);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (reply) => {
        // Every answer is progress, also one that comes after its round was decided.
        pace.lastAnswered = call;
        pace.lastAnsweredAt = clock.now();
        this.#answered(index, member, reply);
      },
      (error: unknown) => this.#failed(index, member, error),
    );
  }

  #failed(index: number, member: Member, error: unknown): void {
    this.#record(index, { member: member.id, vote: 'error', ms: this.#spec.clock.now() - this.#startedAt, error: voteError(error) });
    this.#heardOne();
  }

  #heardOne(): void {
    if (++this.#heard === this.#spec.members.length) this.#spec.heardAll?.();
  }

  #answered(index: number, member: Member, reply: Reply): void {
    const { answer: answerOf } = this.#spec;
    let answer: Answered<Answer>;
    try {
      answer = answerOf === undefined ? (reply as Answered<Answer>) : answerOf(reply, index, member);
    } catch (error) {
      return this.#failed(index, member, error);
    }
    const ms = this.#spec.clock.now() - this.#startedAt;
    if (typeof answer === 'string') this.#record(index, { member: member.id, vote: answer, ms });
    else {
      // The decoder's vote, recorded as it is: the member and the time are added to it.
      const vote = answer as MemberVote<Answer>;
      vote.member = member.id;
      vote.ms = ms;
      this.#record(index, vote);
    }
    this.#heardOne();
  }

  #record(index: number, vote: MemberVote<Answer>): void {
    // A straggler after the decision changes nothing; nor does the answer of a member already
    // counted as timed out (with `limitMs` the round may stay open past one member's deadline).
    if (this.#closed || this.#votes[index]!.vote !== 'pending') return;
    this.#count(index, vote);
    this.#settleIfDecided();
  }

  /**
   * The one place a round decides whether a member's answer counts. A member that must not count
   * (not a master, may evict lock keys, the same server as another member) never counts, in any
   * round: its answer is recorded, with the reason. And one server counts once per round: a yes
   * from a member whose server (its run id, read before its yes was returned: RedisMember) already
   * gave a yes in this round under another address does not count, whichever answered first and
   * whether or not the Redlock has marked the duplicate yet (its readings may come in any order).
   */
  #count(index: number, vote: MemberVote<Answer>): void {
    const member = this.#spec.members[index]!;
    const notCounting = member.notCounting;
    if (notCounting !== undefined && vote.notCounting === undefined) vote.notCounting = notCounting;
    this.#votes[index] = vote;
    const yes = vote.vote !== 'error' && vote.vote !== 'timeout' && vote.notCounting === undefined && this.#spec.counts(vote.vote as Answer);
    const server = yes ? member.serverId : undefined;
    const counted = server === undefined ? undefined : this.#servers?.get(server);
    if (counted !== undefined) vote.notCounting = sameServerAs(counted);
    else if (server !== undefined) (this.#servers ??= new Map()).set(server, member.id);
    if (yes && counted === undefined) this.#yesCount++;
    else this.#noCount++;
    // Every vote counted, a timeout too; after the counting, so that the event says whether it
    // counts (a duplicate's notCounting). Checked first, as every publisher does: nothing is
    // built for the event when nobody listens.
    if (channels.vote.hasSubscribers) channels.vote.publish({ operation: this.#spec.operation, ...vote });
  }

  #settleIfDecided(): void {
    const { members, waitForAll, quorum } = this.#spec;
    const settled = waitForAll ? this.#yesCount + this.#noCount === members.length : decide(this.#yesCount, this.#noCount, members.length, quorum) !== 'open';
    if (settled) this.#settle();
  }

  /** Members still 'pending' when the round settles were not waited for. */
  #settle(): void {
    this.#close(() =>
      this.#resolve({
        won: this.#yesCount >= this.#spec.quorum,
        votes: this.#votes,
        startedAt: this.#startedAt,
        elapsedMs: this.#spec.clock.now() - this.#startedAt,
      }),
    );
  }

  #close(then: () => void): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== undefined) this.#spec.clock.clearTimer(this.#timer);
    if (this.#decision !== undefined) clearImmediate(this.#decision);
    this.#stopListening?.();
    then();
  }

  /** For nextTick, which passes the round along: no closure per round. */
  static #sentOf(round: Round<string, unknown>): void {
    round.#sent();
  }

  #sent(): void {
    if (this.#closed) return;
    this.#writtenAt = this.#spec.clock.now();
    this.#arm();
  }

  /** The hard end: the caller's limit, or without one `timeoutMs` after the sending tick. */
  #endAt(): number {
    return this.#limitMs === undefined ? this.#writtenAt! + this.#spec.timeoutMs : this.#startedAt + this.#limitMs;
  }

  /**
   * When pending member `index` will have been silent for `timeoutMs`, as far as we know now:
   * from the sending tick, or with `limitMs` from its latest sign of life, an answer to one of
   * our calls sent before this round's (progressAt) or one its member reports (heardAt: a
   * connection's ready check, INFO or epoch read answered before our call is written).
   */
  #silentAt(index: number): number {
    if (this.#limitMs === undefined) return this.#writtenAt! + this.#spec.timeoutMs;
    const member = this.#spec.members[index]!;
    const progress = Math.max(progressAt(paceOf(member), this.#calls[index]!), member.heardAt ?? -Infinity);
    return Math.max(this.#writtenAt!, progress) + this.#spec.timeoutMs;
  }

  /** The next moment something may change: a pending member falls silent, or the hard end. */
  #nextDueAt(): number {
    let next = this.#endAt();
    this.#votes.forEach((vote, index) => {
      if (vote.vote === 'pending') next = Math.min(next, this.#silentAt(index));
    });
    return next;
  }

  /** One timer per round, at the earliest deadline of a pending member. */
  #arm(): void {
    const { clock } = this.#spec;
    const dueAt = this.#nextDueAt();
    this.#timer = clock.setTimer(() => {
      this.#timer = undefined;
      // Node measures timers on its loop's cached whole-ms time, so one can fire up to a
      // millisecond before dueAt by now(): wait out the rest once. After that, the timer's word
      // that dueAt has come stands (a caller's clock may read time from elsewhere than its
      // timers run on, as a test's does).
      if (clock.now() < dueAt && !this.#rearmed) {
        this.#rearmed = true;
        return this.#arm();
      }
      this.#rearmed = false;
      const firedAt = Math.max(clock.now(), dueAt);
      // Not now: expired timers run before the loop polls for I/O. The poll phase between this
      // timer and the immediate reads the replies that reached the socket in time; only then do
      // we look at who is still silent.
      this.#decision = setImmediate(() => this.#check(firedAt));
    }, dueAt - clock.now());
  }

  /**
   * Times out every member still pending that had been silent for `timeoutMs` when the timer
   * fired, then settles, or waits for the next deadline. Judged at `firedAt`, not at the time of
   * the check: a poll phase has run since firedAt, so a member silent then and still unheard now
   * really sent nothing in time. Time the loop spends in between (other rounds' checks and
   * rollbacks in the same check phase, in a burst) was ours, not the member's, and must not count
   * against it.
   */
  #check(firedAt: number): void {
    this.#decision = undefined;
    if (this.#closed) return;
    const { clock, members } = this.#spec;
    const late = this.#votes.flatMap((vote, index) => (vote.vote === 'pending' && this.#silentAt(index) <= firedAt ? [index] : []));
    const ms = clock.now() - this.#startedAt;
    // All of them first, then the decision: a member that timed out is never reported as
    // 'pending' (not waited for), so the rollback does not wait for it either.
    for (const index of late) this.#count(index, { member: members[index]!.id, vote: 'timeout', ms });
    // At the hard end, a member still answering our earlier calls did not time out: the caller's
    // budget ran out first. It stays 'pending' (not waited for), and is not mistaken for an outage.
    if (firedAt >= this.#endAt()) return this.#settle();
    this.#settleIfDecided();
    if (!this.#closed) this.#arm();
  }
}
