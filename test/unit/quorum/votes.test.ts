/**
 * describeVotes: a round's votes in words, as they appear in errors and logs.
 */
import { describe, expect, it } from 'vitest';
import { describeVotes, type MemberVote } from '../../../src/quorum/votes.js';

let port = 7000;
/** One member's vote; each call is a different member. */
function vote(answer: string, error?: Error): MemberVote<string> {
  return { member: `127.0.0.1:${++port}/0`, vote: answer, ms: 1, ...(error ? { error } : {}) };
}
const votes = (...answers: string[]) => answers.map((answer) => vote(answer));
const refused = (address: string) => new Error(`connect ECONNREFUSED ${address}`);

describe('describeVotes (acquire and extend: yes = locked)', () => {
  it.each([
    { label: 'quorum lost to another owner', answers: ['locked', 'locked', 'taken', 'taken', 'taken'], text: '2/5 locked, 3 held by another owner' },
    { label: 'all locked', answers: ['locked', 'locked', 'locked'], text: '3/3 locked' },
    { label: 'none locked', answers: ['taken', 'taken', 'taken'], text: '0/3 locked, 3 held by another owner' },
    { label: 'no members at all', answers: [], text: '0/0 locked' },
    { label: 'stragglers not waited for', answers: ['locked', 'pending', 'locked'], text: '2/3 locked, 1 not waited for' },
    { label: 'timeouts', answers: ['timeout', 'locked', 'timeout', 'locked', 'locked'], text: '3/5 locked, 2 timed out' },
    {
      label: 'every kind, in a fixed order whatever the input order',
      answers: ['pending', 'timeout', 'taken', 'locked', 'taken', 'locked', 'locked'],
      text: '3/7 locked, 2 held by another owner, 1 timed out, 1 not waited for',
    },
  ])('$label', ({ answers, text }) => {
    expect(describeVotes(votes(...answers))).toBe(text);
  });

  it('is the default: describeVotes(v) = describeVotes(v, "locked")', () => {
    const round = votes('locked', 'taken', 'timeout');
    expect(describeVotes(round)).toBe(describeVotes(round, 'locked'));
  });

  it('puts the error message in parentheses after "failed"', () => {
    const round = [vote('locked'), vote('locked'), vote('taken'), vote('taken'), vote('error', new Error('connect ECONNREFUSED'))];
    expect(describeVotes(round)).toBe('2/5 locked, 2 held by another owner, 1 failed (connect ECONNREFUSED)');
  });

  it('with several failures, counts them all and quotes the first error', () => {
    const round = [vote('error', refused('127.0.0.1:1')), vote('locked'), vote('error', refused('127.0.0.1:2')), vote('timeout')];
    expect(describeVotes(round)).toBe('1/4 locked, 1 timed out, 2 failed (connect ECONNREFUSED 127.0.0.1:1)');
  });

  it('says just "failed" when the error vote carries no error object', () => {
    expect(describeVotes(votes('locked', 'error'))).toBe('1/2 locked, 1 failed');
  });
});

describe('describeVotes (release: yes = released)', () => {
  it.each([
    { label: 'all released', answers: ['released', 'released', 'released'], text: '3/3 released' },
    { label: 'some not held', answers: ['released', 'absent', 'released'], text: '2/3 released, 1 not held' },
    {
      label: 'released, not held, timed out',
      answers: ['timeout', 'released', 'absent', 'released', 'absent'],
      text: '2/5 released, 2 not held, 1 timed out',
    },
    { label: 'nothing answered', answers: ['timeout', 'timeout', 'timeout'], text: '0/3 released, 3 timed out' },
  ])('$label', ({ answers, text }) => {
    expect(describeVotes(votes(...answers), 'released')).toBe(text);
  });

  it('a failed release shows its error', () => {
    const round = [vote('released'), vote('error', new Error("READONLY You can't write against a read only replica.")), vote('absent')];
    expect(describeVotes(round, 'released')).toBe("1/3 released, 1 not held, 1 failed (READONLY You can't write against a read only replica.)");
  });

  it('"locked" is not the yes answer there: a release round never reports "x/n locked"', () => {
    const text = describeVotes(votes('released', 'released'), 'released');
    expect(text).not.toContain('locked');
    expect(text.startsWith('2/2 released')).toBe(true);
  });
});
