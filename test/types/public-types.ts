/**
 * Compile-time checks of the public types, as a user writes them: `npm run typecheck` (tsc over
 * test/) fails when one stops compiling. Nothing here runs; each function is a type assertion.
 * Imported from src/index.ts, the entry the package's declarations are built from.
 */
import type { AttemptRecord, ExtendAnswer, LeaderReading, LeaderVote, Lock, LockAnswer, MemberVote, ReleaseResult } from '../../src/index.js';

/** `lock.votes` (the last acquire or extend round) reads as the default MemberVote. */
export function votesOfALock(lock: Lock): readonly MemberVote[] {
  const votes: readonly MemberVote[] = lock.votes;
  return votes;
}

/** The default covers an extend's 'absent', and an acquire's answers; a typo is still refused. */
export function answersOfTheDefault(vote: MemberVote): LockAnswer | ExtendAnswer | 'timeout' | 'error' | 'pending' {
  // @ts-expect-error not an answer any round gives
  const wrong: MemberVote['vote'] = 'gone';
  void wrong;
  const absent: MemberVote['vote'] = 'absent';
  void absent;
  return vote.vote;
}

/** An attempt's votes and a release's stay assignable to what users declared before. */
export function votesElsewhere(attempt: AttemptRecord, release: ReleaseResult): readonly MemberVote<string>[] {
  const acquired: readonly MemberVote[] = attempt.votes;
  return [...acquired, ...release.votes];
}

/** LeaderUnknownError's votes carry a LeaderReading, which users can now name. */
export function readingOf(vote: LeaderVote): LeaderReading | undefined {
  return vote.reading;
}
