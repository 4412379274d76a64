// The election errors live with every other error, in src/errors.ts; this re-export keeps the
// election modules' imports as they were.
export { electionErrorCodes, LeadershipLostError, LeaderUnknownError, type LeadershipEnd, type LeaderVote } from '../errors.js';
