/**
 * What each member's part was in a failed round, in words an operator acts on: the member's name,
 * its connection state (the CLI owns the ioredis clients, so it knows each one's status and last
 * connection error) and its vote. "127.0.0.1:6390/0: connection refused (ECONNREFUSED)" rather
 * than "3 timed out".
 */
import type { MemberClient } from './members.js';
import type { MemberVote } from '../quorum/votes.js';
import { formatMs } from './duration.js';

export interface MemberState {
  member: string;
  /** Its vote in the last round ('taken', 'timeout', …); absent when no round reached it. */
  vote?: string;
  /** In words: "connection refused (ECONNREFUSED)", "connected, held by another owner", … */
  state: string;
  /** The error code behind the state (ECONNREFUSED, ENOTFOUND, SELF_SIGNED_CERT_IN_CHAIN, WRONGPASS, …). */
  code?: string;
}

/** What a client knows of its connection: ioredis' status and the last 'error' event. */
export interface Connection {
  client: Pick<MemberClient, 'status'>;
  lastError: Error | undefined;
  /** The client's own per-command timeout (its ready check times out after it). */
  commandTimeoutMs?: number;
}

/** ioredis' commandTimeout error: no code, just this text. */
const isCommandTimeout = (error: Error) => errorCode(error) === undefined && /timed out/i.test(error.message);

const CAUSES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connect timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
};

const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/;

/** The code of a connection error: Node's errno code, or a Redis error's first word (WRONGPASS, NOAUTH, NOPERM). */
export function errorCode(error: Error): string | undefined {
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code !== '') return code;
  return /^([A-Z]{4,})\b/.exec(error.message)?.[1];
}

/** A connection error, named by its cause. */
export function describeError(error: Error): { state: string; code?: string } {
  const code = errorCode(error);
  if (code === undefined) return { state: error.message };
  if (CAUSES[code]) return { state: `${CAUSES[code]} (${code})`, code };
  if (TLS_CODE.test(code)) return { state: `TLS: certificate not trusted (${code}): give the CA that signed it with --tls-ca`, code };
  if (code === 'WRONGPASS' || code === 'NOAUTH') return { state: `authentication failed (${code})`, code };
  return { state: error.message.includes(code) ? error.message : `${error.message} (${code})`, code };
}

/** A member whose vote says nothing (no vote, a timeout, an error): its connection tells why. */
function fromConnection(connection: Connection, vote: MemberVote<string> | undefined, timeoutMs: number): { state: string; code?: string } {
  const { client, lastError, commandTimeoutMs } = connection;
  const connected = client.status === 'ready';
  const silent = `not answering (timed out after ${formatMs(timeoutMs)})`;
  // Connected at the TCP level, but the ready check went unanswered (a paused or overloaded server).
  if (!connected && lastError && isCommandTimeout(lastError))
    return { state: `${client.status === 'connect' ? 'TCP connected, ' : ''}not answering (timed out after ${formatMs(commandTimeoutMs ?? timeoutMs)})` };
  if (!connected && lastError) return describeError(lastError);
  if (!connected) return { state: client.status === 'connect' ? `TCP connected, ${silent}` : `not connected (${client.status}), ${silent}` };
  if (vote?.vote === 'error' && vote.error) {
    // ioredis' "Reached the max retries per request limit" says less than the connection error.
    const why = /max retries/i.test(vote.error.message) && lastError ? lastError : vote.error;
    const described = describeError(why);
    return { ...described, state: `connected, error: ${described.state}` };
  }
  if (vote?.vote === 'pending') return { state: 'connected, not waited for (the round was decided before it answered)' };
  return { state: `connected, ${silent}` };
}

function fromVote(vote: MemberVote<string>): string | undefined {
  switch (vote.vote) {
    case 'locked':
      return 'connected, locked (released again: no quorum)';
    case 'taken':
      return `connected, held by another owner${vote.heldForMs === undefined || vote.heldForMs < 0 ? '' : ` (for ${formatMs(vote.heldForMs)} more)`}`;
    case 'queued':
      return 'connected, free but kept for an earlier waiter';
    case 'quarantined':
      return vote.notCounting !== undefined
        ? `connected, does not count (${vote.notCounting})`
        : `connected, in its restart quarantine${vote.quarantinedForMs === undefined ? '' : ` (${formatMs(vote.quarantinedForMs)} left)`}`;
    default:
      return undefined;
  }
}

/**
 * Each member's state after a round: `names[i]` is member i (memberId), `connections[i]` its
 * client, `votes` the round's votes (matched by member name), `timeoutMs` what a vote waited.
 */
export function memberStates(
  names: readonly string[],
  connections: readonly Connection[],
  votes: readonly MemberVote<string>[] | undefined,
  timeoutMs: number,
): MemberState[] {
  return names.map((member, index) => {
    const vote = votes?.find((candidate) => candidate.member === member);
    const byVote = vote ? fromVote(vote) : undefined;
    const described = byVote !== undefined ? { state: byVote } : fromConnection(connections[index]!, vote, timeoutMs);
    return { member, ...(vote ? { vote: vote.vote } : {}), ...described };
  });
}

/** "  127.0.0.1:6390/0: connection refused (ECONNREFUSED)", one line per member. */
export function statesText(states: readonly MemberState[]): string {
  return states.map((state) => `  ${state.member}: ${state.state}`).join('\n');
}

/**
 * Why a wait goes on: another owner holds the lock, members sit out their restart quarantine,
 * members do not answer, or (fenced) the lock was won but members refused the token for want of a
 * trusted counter.
 */
export interface WaitCause {
  cause: 'held' | 'quarantined' | 'unreachable' | 'unfenced';
  /** How many members say so (for 'held': at least one). */
  count: number;
  /** 'quarantined': the longest quarantine left among them, ms (absent when unknown or endless: not counting). */
  longestLeftMs?: number;
}

/**
 * Why a wait goes on, from the last round's votes. Another owner first (the common case), then
 * quarantine, then members that did not answer.
 */
export function waitCause(votes: readonly Pick<MemberVote<string>, 'vote' | 'quarantinedForMs' | 'notCounting'>[]): WaitCause | undefined {
  const of = (...kinds: string[]) => votes.filter((vote) => kinds.includes(vote.vote));
  const held = of('taken', 'queued').length;
  if (held > 0) return { cause: 'held', count: held };
  const quarantined = of('quarantined');
  if (quarantined.length > 0) {
    // A member that does not count (not a master, may evict) has no end to its quarantine.
    const lefts = quarantined.filter((vote) => vote.notCounting === undefined && vote.quarantinedForMs !== undefined).map((vote) => vote.quarantinedForMs!);
    return { cause: 'quarantined', count: quarantined.length, ...(lefts.length === quarantined.length ? { longestLeftMs: Math.max(...lefts) } : {}) };
  }
  const silent = of('timeout', 'error').length;
  if (silent > 0) return { cause: 'unreachable', count: silent };
  return undefined;
}

/**
 * Why a fenced wait goes on when the lock's own votes say nothing against it: the members that
 * refused the last fence round's proposal for want of a trusted counter (fence.lua, as after
 * losing their data), if any; not those outbid, nor those where the lock was gone.
 */
export function fenceCause(fenceVotes: readonly Pick<MemberVote<string>, 'vote' | 'fence'>[]): WaitCause | undefined {
  const refused = fenceVotes.filter((vote) => vote.vote === 'taken' && vote.fence?.trusted === false).length;
  return refused > 0 ? { cause: 'unfenced', count: refused } : undefined;
}

const members = (count: number) => `${count} member${count === 1 ? '' : 's'}`;

/** What the live status line shows: "held by another owner", "2 members quarantined", "1 member unreachable". */
export function waitReason(votes: readonly Pick<MemberVote<string>, 'vote' | 'quarantinedForMs' | 'notCounting'>[]): string | undefined {
  const why = waitCause(votes);
  if (why === undefined) return undefined;
  if (why.cause === 'held') return 'held by another owner';
  return `${members(why.count)} ${why.cause}`;
}
