/**
 * What one member said in one round. Every outcome is data, so errors, logs and metrics all read
 * the same record.
 */
// The vote records and their wording are defined with the errors that carry them (src/errors.ts
// imports nothing, so every layer can read them); the algorithm takes them from here as before.
export type { LockAnswer, ReleaseAnswer, NoAnswer, MemberVote } from '../errors.js';
export { describeVotes } from '../errors.js';

/** What a round's `send` may resolve with: the answer alone, or with details. */
export type Answered<Answer extends string> =
  | Answer
  | {
      vote: Answer;
      heldForMs?: number | undefined;
      place?: number | undefined;
      quarantinedForMs?: number | undefined;
      notCounting?: string | undefined;
      holdsOwn?: true | undefined;
      handedOver?: true | undefined;
    };
