export { Redlock, type MemberStatus, type TrustResult, type RestoreResult } from './redlock.js';
export type { Semaphore, PermitHolder } from './semaphore/semaphore.js';
export type { Permit } from './semaphore/permit.js';
export type { SemaphoreOptions } from './semaphore/check.js';
export type { Lock, ReleaseResult } from './lock/lock.js';
export type { GlideClusterLike, GlideLike, IoredisClusterLike, IoredisLike, MemberClient, NodeRedisClusterLike, NodeRedisLike } from './clients/index.js';
export {
  codes,
  errorCodes,
  electionErrorCodes,
  QuorumlockError,
  LockAcquireError,
  LockExtendError,
  LockLostError,
  ArgumentTypeError,
  ArgumentRangeError,
  UnknownOptionError,
  ReentrancyError,
  ProtocolError,
  SemaphoreUnavailableError,
  LeadershipLostError,
  LeaderUnknownError,
  EpochChangedError,
  NotMasterError,
  EpochTooNewError,
  TestingOnlyError,
  ResetMembersError,
  type ArgumentError,
  type ErrorCode,
  type AttemptOutcome,
  type AttemptRecord,
  type ExtendFailure,
  type LossCause,
  type PermitReading,
  type LeadershipEnd,
  type LeaderVote,
  type LeaderReading,
} from './errors.js';
export { minTtl } from './options/check.js';
export { defaults, MAX_TTL_MS, type AcquireOptions, type OperatorOptions, type UsingOptions, type Settings, type RedlockOptions } from './options/settings.js';
export type { MemberVote, LockAnswer, ExtendAnswer, ReleaseAnswer, NoAnswer } from './quorum/votes.js';
export { quorumOf } from './tally.js';
export { WIRE_PROTOCOL } from './store/protocol.js';
export type { Election, Leadership, LeaderInfo, ElectionOptions, CampaignOptions, ObserveOptions } from './election/index.js';
export { type Clock, ManualClock, systemClock, driftMs, validityMs } from './clock/index.js';
export { fencedWrite, fenceKeyOf, FENCE_GUARD_LUA } from './fencing/guard.js';
export {
  channels,
  subscribeChannel,
  type AcquireStartMessage,
  type AcquireEndMessage,
  type VoteMessage,
  type ExtendMessage,
  type LostMessage,
  type QuarantineMessage,
  type ReleaseMessage,
  type ChannelMessages,
  type ChannelName,
  type QuorumlockChannel,
  type TraceContext,
  type Logger,
} from './diagnostics.js';
