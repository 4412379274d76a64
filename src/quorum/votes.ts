/**
 * What one member said in one round. Every outcome is data, so errors, logs and metrics all read
 * the same record.
 */
// The vote records and their wording are defined with the errors that carry them (src/errors.ts
// imports nothing, so every layer can read them); the algorithm takes them from here as before.
import type { MemberVote } from '../errors.js';
export type { LockAnswer, ExtendAnswer, ReleaseAnswer, NoAnswer, MemberVote } from '../errors.js';
export { describeVotes } from '../errors.js';

/**
 * What a round's `send` may resolve with: the answer alone, or the vote itself without its member
 * and time, which the round adds to that very object (one vote from the decoder to the lock).
 */
export type Answered<Answer extends string> = Answer | (Omit<MemberVote<Answer>, 'member' | 'ms' | 'vote'> & { vote: Answer });
