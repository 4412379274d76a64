export { Election, type ElectionMember } from './election.js';
export { Leadership } from './leadership.js';
export type { LeaderInfo } from './judge.js';
export type { ElectionOptions, CampaignOptions, ObserveOptions } from './options.js';
export { LeadershipLostError, LeaderUnknownError, electionErrorCodes, type LeadershipEnd, type LeaderVote } from './errors.js';
