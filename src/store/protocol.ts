/**
 * The protocol of each script (src/lua/*.lua): its KEYS, its ARGV and its reply, as types with
 * one encoder and one decoder each. Members send through these; nobody else spells an
 * argument's position or a reply tuple. Every decoder refuses a status it does not know (a
 * ProtocolError: the vote is an error, never a yes). Writes are bound to an epoch on top of
 * this (src/lua/_bound.lua): their KEYS get the epoch hash last and their ARGV the epoch id
 * first, which the script takes off before reading its own.
 *
 * KEYS are always resourceKeys() (KEYS_PER_RESOURCE per resource: lock, line, leases, readers,
 * handover; keys.ts) or the lock keys alone, with the member's epoch hash last where a script
 * keeps epochs or may hand a lock over.
 */
import { protocolError, type LockAnswer, type MemberVote } from '../errors.js';

/**
 * The version of what clients and members share: the key layout (keys.ts), the scripts' KEYS,
 * ARGV and replies (this file), what the scripts store (the lock values, lines, readers and
 * hand-over requests, the epoch hash's fields) and the waiter channels. Raised whenever a client
 * of one version could misread what a client of the other left on a member; clients of different
 * versions must not share members (docs/operations.md, "Upgrading quorumlock").
 * 1: quorumlock 0.1.0. 2: quorumlock 0.2.0, every write bound to its member's epoch.
 */
export const WIRE_PROTOCOL = 2;

// --- acquire.lua ------------------------------------------------------------------------------

/**
 * What marks a shared (reader) lock to the scripts: its lock value and its waiter id start with
 * this character, which no exclusive value (base64url) or waiter id (base64url, '.', base 36)
 * contains. The one home of the encoding (the Lua spells it SHARED_MARK in _keys.lua and
 * fence.lua; test/unit/lua54.test.ts checks they agree). A shared acquire runs acquireShared.lua,
 * a shared extend extendShared.lua; release.lua, leave.lua and fence.lua read the mark.
 */
export const SHARED_MARK = '~';
export const sharedName = (name: string): string => SHARED_MARK + name;
export const isShared = (name: string): boolean => name.startsWith(SHARED_MARK);

/** A place in the lines of waiters (waiting/line.ts), as the acquire script takes it. */
export interface Waiter {
  /** Random, not secret: it only names a place in line. */
  id: string;
  /** Arrival order: lower goes first. */
  ticket: number;
  /** How long a refused caller keeps its place without coming back; 0 = does not join the line. */
  leaseMs: number;
}

/**
 * A waiter's request to be handed the lock by the release that frees it (docs/handover.md): the
 * member sets `value` (the waiter's ttl and quarantine are the acquire's) and tells the waiter
 * "handed, by the request of `stamp`". Sent with every attempt in line; a member keeps the latest.
 */
export interface HandoverRequest {
  /** The lock value a release sets for this waiter: new for each request generation (quorum/handover.ts). */
  value: string;
  /** Names the attempt that wrote the request: a hand-over is counted only for the latest. */
  stamp: string;
  /** Earlier values of this waiter's that it no longer counts on: taken back wherever a release set one. */
  abandoned: string;
}

export interface AcquireRequest {
  value: string;
  ttlMs: number;
  waiter: Waiter;
  /** 0 = quarantine off; negative: counted from the restart (options/settings.ts, quarantineMsOf). */
  quarantineMs: number;
  fencing: boolean;
  /** Only in line, for one resource, exclusive and unfenced (quorum/handover.ts). */
  handover?: HandoverRequest | undefined;
}

/**
 * KEYS: resourceKeys(resources), then the epoch hash.
 * ARGV: value, ttl ms, waiter id, ticket, lease ms, quarantine ms, fencing (1/0), `settled` (the
 * id of the epoch the caller last saw past this quarantine; '' = none), then the handover
 * request's value, stamp and abandoned values ('' each = none).
 */
export function acquireArgs(request: AcquireRequest, settled: string): string[] {
  const { value, ttlMs, waiter, quarantineMs, fencing, handover } = request;
  // Strings, as the script receives them (ioredis would convert numbers one call at a time).
  const args = [value, String(ttlMs), waiter.id, String(waiter.ticket), String(waiter.leaseMs), String(quarantineMs), fencing ? '1' : '0', settled];
  if (handover !== undefined) args.push(handover.value, handover.stamp, handover.abandoned);
  return args;
}

/**
 * What a release publishes on a waiter's channel (_keys.lua, notify): its id ("you are first in
 * line"), or "<id> <stamp>" ("the lock is yours, set by your request of `stamp`").
 */
export function readWaiterMessage(message: string): { waiterId: string; handedBy?: string } {
  const space = message.indexOf(' ');
  return space === -1 ? { waiterId: message } : { waiterId: message.slice(0, space), handedBy: message.slice(space + 1) };
}

/**
 * A request's stamp as sent to the member at `memberIndex`: a hand-over names the member that
 * made it. Pub/sub ignores the database, so two members that are databases of one server hear
 * each other's messages; each counts only a message naming itself (quorum/handover.ts).
 */
export const memberStamp = (stamp: string, memberIndex: number): string => `${stamp}.${memberIndex.toString(36)}`;

/** quarantinedForMs of a member that must not count at all while its condition lasts. */
export const NOT_COUNTING = Number.MAX_SAFE_INTEGER;

/**
 * What one member said to an acquire: the vote itself, decoded from the script's reply and
 * recorded as it is by the round (which adds the member and the time: quorum/round.ts).
 */
export type AcquireVote = Omit<MemberVote<LockAnswer>, 'member' | 'ms' | 'vote'> & { vote: LockAnswer };

/** The acquire script's status codes (the first element of a tuple reply). */
const ACQUIRE = { taken: 0, locked: 1, queued: 2, quarantined: 3 } as const;

/**
 * The acquire script's replies, as tests build them: a bare 1 (locked, in the epoch the caller
 * passed as settled); {1 | 3, ms left, counter, trusted, epoch id}; {0 | 2, heldForMs (-1 none held, -2 no expiry), place
 * (-1 not in line), epoch id, quarantine left (-1 not known)}.
 */
export const acquireReply = {
  settled: () => 1 as const,
  locked: (quarantineLeftMs: number, epoch: string, fence: { highest: number; trusted: boolean } = { highest: 0, trusted: false }) =>
    [quarantineLeftMs > 0 ? ACQUIRE.quarantined : ACQUIRE.locked, quarantineLeftMs, fence.highest, fence.trusted ? 1 : 0, epoch] as const,
  refused: (why: 'taken' | 'queued', heldForMs: number, place = -1, epoch = '', quarantineLeftMs = -1, holdsOwn = false, handedOver = false) => {
    const reply: (number | string)[] = [why === 'taken' ? ACQUIRE.taken : ACQUIRE.queued, heldForMs, place, epoch, quarantineLeftMs, holdsOwn ? 1 : 0];
    // The script adds `handed` only when it is 1 (acquire.lua).
    if (handedOver) reply.push(1);
    return reply;
  },
};

/**
 * acquire.lua's reply. `settled` is the epoch id the call passed as already past its quarantine:
 * a bare 1 then means "locked, in that epoch". `fencing`: the call asked for the fence counter.
 */
export function decodeAcquire(reply: number | unknown[], settled: string, fencing: boolean): AcquireVote {
  if (reply === ACQUIRE.locked) return settled === '' ? { vote: 'locked' } : { vote: 'locked', epoch: { id: settled, settled: true } };
  const [status, a, b, c, epoch] = reply as [number, number, number, number | string, string | undefined];
  if (status === ACQUIRE.locked || status === ACQUIRE.quarantined) {
    const vote: AcquireVote = a > 0 ? { vote: 'quarantined', quarantinedForMs: a } : { vote: 'locked' };
    if (epoch !== undefined) vote.epoch = { id: String(epoch), settled: a === 0 };
    if (fencing) vote.fence = { highest: b, trusted: c === 1 };
    return vote;
  }
  if (status !== ACQUIRE.taken && status !== ACQUIRE.queued) throw protocolError(`unexpected reply from the acquire script: ${JSON.stringify(reply)}`);
  const vote: AcquireVote = { vote: status === ACQUIRE.taken ? 'taken' : 'queued' };
  if (a >= 0) vote.heldForMs = a;
  if (b >= 0) vote.place = b;
  const left = (reply as unknown[])[4];
  if (typeof c === 'string' && c !== '') vote.epoch = { id: c, settled: left === 0 };
  if ((reply as unknown[])[5] === 1) vote.holdsOwn = true;
  if ((reply as unknown[])[6] === 1) vote.handedOver = true;
  return vote;
}

// --- extend.lua -------------------------------------------------------------------------------

/** An extend of one lock on one member. */
export interface ExtendCall {
  value: string;
  ttlMs: number;
}

/** KEYS: the lock keys (extendShared.lua: resourceKeys). ARGV: value, ttl ms. */
export const extendArgs = ({ value, ttlMs }: ExtendCall): string[] => [value, String(ttlMs)];

/**
 * 'extended': every key held `value` and now lives `ttlMs`. Otherwise nothing changed: 'gone', a
 * key no longer exists (expired, evicted, deleted, forgotten in a restart); 'taken', a key holds
 * another value.
 */
export type ExtendReply = 'extended' | 'gone' | 'taken';

const EXTEND: Record<ExtendReply, number> = { extended: 1, gone: 0, taken: -1 };

export const extendReply = (reply: ExtendReply): number => EXTEND[reply];

/** An unknown code throws: it is never read as a yes. */
export function decodeExtend(status: unknown): ExtendReply {
  if (status === EXTEND.extended) return 'extended';
  if (status === EXTEND.gone) return 'gone';
  if (status === EXTEND.taken) return 'taken';
  throw protocolError(`unexpected reply from the extend script: ${String(status)}`);
}

// --- release.lua, leave.lua -------------------------------------------------------------------

/**
 * KEYS: resourceKeys(resources), then the epoch hash. ARGV: value, then (optional) the waiter id
 * that leaves every line with this release ('' = none) and the holder's abandoned handover values
 * ('' = none). Reply: how many lock keys (or reader entries) held `value` and were deleted.
 */
export interface ReleaseCall {
  value: string;
  /** The holder's waiter id when it won after waiting: it leaves every line with this release. */
  leaving?: string | undefined;
  /** Its handover values it did not win with, taken back (space-separated). */
  abandoned?: string | undefined;
}

export interface LeaveCall {
  waiterId: string;
  abandoned?: string | undefined;
}

export function releaseArgs({ value, leaving, abandoned }: ReleaseCall): string[] {
  if (!abandoned) return leaving === undefined ? [value] : [value, leaving];
  return [value, leaving ?? '', abandoned];
}

/** KEYS: resourceKeys(resources), then the epoch hash. ARGV: waiter id, its abandoned handover values (optional). Reply: 1. */
export const leaveArgs = ({ waiterId, abandoned }: LeaveCall): string[] => (abandoned ? [waiterId, abandoned] : [waiterId]);

// --- fence.lua --------------------------------------------------------------------------------

/**
 * KEYS: the lock keys (a shared value: then their reader keys), then the epoch hash. ARGV: value, token, mode, the epoch id the call is
 * bound to ('' for a propose to a member not heard in the acquire round), and with 'sync' the
 * floor for an incomplete epoch ('' = none).
 */
export interface FenceCall {
  value: string;
  token: number;
  mode: 'propose' | 'sync';
  /** The epoch the call is bound to by the attempt ('' for a propose to a member not heard in the acquire round). */
  epoch: string;
  /** sync: the floor for an incomplete epoch. */
  floor?: number | undefined;
}

export function fenceArgs({ value, token, mode, epoch, floor }: FenceCall): string[] {
  return [value, String(token), mode, epoch, floor === undefined ? '' : String(floor)];
}

export interface FenceReply {
  raised: boolean;
  /** The counter before. */
  highest: number;
  trusted: boolean;
  /** The highest of the member's counters and floor, after the call. */
  max: number;
  /** The epoch is complete (brand new or given a floor): every resource reads trusted there. */
  complete: boolean;
  /** A propose found the lock no longer held here (a key expired, evicted or deleted): nothing read. */
  gone: boolean;
}

/** fence.lua's reply: {raised, highest, trusted, epoch id (for redis-cli readers), max, complete[, gone: only when 1]}. */
export function decodeFence(reply: unknown[]): FenceReply {
  // The fourth element, the epoch the call ran in, is for redis-cli readers: the client binds
  // calls to epochs it learned from acquire replies (src/quorum/fence.ts).
  const [raised, highest, trusted, , max, complete, gone] = reply as [
    number,
    number,
    number,
    unknown,
    number | undefined,
    number | undefined,
    number | undefined,
  ];
  return { raised: raised === 1, highest, trusted: trusted === 1, max: max ?? 0, complete: complete === 1, gone: gone === 1 };
}

// --- trust.lua --------------------------------------------------------------------------------

/**
 * KEYS: the epoch hash. ARGV: 'new' and the quarantine ms (declare the current epoch brand new;
 * reply: the quarantine that was left), or 'floor' and a floor (raise every counter to it and
 * trust the epoch; reply: the floor now).
 */
export const trustArgs = (mode: 'new' | 'floor', n: number): string[] => [mode, String(n)];

// --- epoch.lua --------------------------------------------------------------------------------

/** What epoch.lua says of a member's epoch. */
export interface EpochReading {
  id: string;
  /** How long ago it began, on the member's clock. */
  ageMs: number;
  /** It began on a member that had no epoch hash, rather than replacing one (_epoch.lua, `replaced`). */
  fresh: boolean;
  /** The lineage of its data: the run id and replication id it was begun with. */
  runId: string;
  replid: string;
}

/** epoch.lua's reply: {epoch id, age ms, fresh 1/0, run id, replication id}. KEYS: the epoch hash; no ARGV. */
export function decodeEpoch(reply: unknown): EpochReading {
  const [id, ageMs, fresh, runId, replid] = Array.isArray(reply) ? (reply as unknown[]) : [];
  if (typeof id !== 'string' || typeof ageMs !== 'number' || (fresh !== 0 && fresh !== 1) || typeof runId !== 'string' || typeof replid !== 'string')
    throw protocolError(`epoch.lua: unexpected reply ${JSON.stringify(reply)}`);
  return { id, ageMs, fresh: fresh === 1, runId, replid };
}

// --- leader.lua, election.lua ----------------------------------------------------------------

/**
 * leader.lua (bound to the epoch: _bound.lua) KEYS: the election's lock key, then its leader
 * record (keys.ts, leaderRecordKey). ARGV: the lock value, "<term> <id>". Reply 1: written, 0: the
 * lock is not ours there.
 * election.lua (a read) KEYS: the same two, then the member's epoch hash. ARGV: the quarantine ms
 * (0 = off). Reply: {"<term> <id>" or '', the lock key's PTTL, -2 when absent, the quarantine ms
 * left, -1 when not a plain master}.
 */
export const writeLeaderArgs = (value: string, term: number, id: string): string[] => [value, `${term} ${id}`];
export const readLeaderArgs = (quarantineMs: number): string[] => [String(quarantineMs)];

/** What one member says of an election: the leader its record names (if it matches the lock), and the lock key's PTTL. */
export interface LeaderReading {
  leader: { term: number; id: string } | undefined;
  /** ms; -2 when the lock key is absent, -1 when it has no expiry (never set so by us). */
  pttl: number;
  /** The member's restart quarantine left, ms (0: past it, or off); NOT_COUNTING when it is not a plain master. */
  quarantinedForMs: number;
}

export function decodeLeaderRead(reply: unknown): LeaderReading {
  if (!Array.isArray(reply) || reply.length !== 3 || typeof reply[0] !== 'string' || typeof reply[1] !== 'number' || typeof reply[2] !== 'number')
    throw protocolError(`election.lua read: unexpected reply ${JSON.stringify(reply)}`);
  const [record, pttl, left] = reply as [string, number, number];
  const quarantinedForMs = left < 0 ? NOT_COUNTING : left;
  if (record === '') return { leader: undefined, pttl, quarantinedForMs };
  const space = record.indexOf(' ');
  const term = Number(record.slice(0, space));
  if (space < 1 || !Number.isSafeInteger(term)) throw protocolError(`election.lua read: unexpected record ${JSON.stringify(record)}`);
  return { leader: { term, id: record.slice(space + 1) }, pttl, quarantinedForMs };
}

/**
 * permits.lua (a read) KEYS: resourceKeys() of the permits (5 per permit). ARGV: none. Reply:
 * {{PTTL of each permit's lock key, -2 when absent}, {ZCARD of each permit's line}}.
 */
export interface PermitCounts {
  /** Per permit, its lock key's PTTL: -2 absent, -1 no expiry. */
  pttls: number[];
  /** Per permit, how many wait in its line (lapsed places included). */
  waiting: number[];
}

export function decodePermits(reply: unknown, permits: number): PermitCounts {
  const counts = (list: unknown): list is number[] => Array.isArray(list) && list.length === permits && list.every((item) => typeof item === 'number');
  if (!Array.isArray(reply) || reply.length !== 2 || !counts(reply[0]) || !counts(reply[1]))
    throw protocolError(`permits.lua: unexpected reply ${JSON.stringify(reply)}`);
  return { pttls: reply[0], waiting: reply[1] };
}
