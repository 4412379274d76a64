export { Redlock } from './redlock.js';
export { Lock, type ReleaseResult } from './lock.js';
export { LockAcquireError, LockExtendError, LockLostError, type AttemptOutcome, type AttemptRecord } from './errors.js';
export { defaults, MAX_TTL_MS, minTtl, type AcquireOptions, type UsingOptions, type ArgumentError, type Logger, type RedlockOptions } from './options.js';
export type { MemberVote, LockAnswer, ReleaseAnswer, NoAnswer } from './quorum/votes.js';
export { quorumOf } from './quorum/tally.js';
export { type Clock, ManualClock, systemClock, driftMs, validityMs } from './clock/index.js';
export { fencedWrite, fenceKeyOf } from './fence-guard.js';
export { guardLua as FENCE_GUARD_LUA } from './lua/sources.js';
