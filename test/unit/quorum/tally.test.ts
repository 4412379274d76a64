/**
 * Vote counting, checked exhaustively: quorumOf (src/tally.ts) is the smallest strict majority,
 * decide() (src/quorum/round.ts, given that quorum) says 'won' / 'lost' / 'open' exactly when it
 * should, and two disjoint sets of members can never both reach quorum.
 */
import { describe, expect, it } from 'vitest';
import { decide, type Decision } from '../../../src/quorum/round.js';
import { quorumOf } from '../../../src/tally.js';

const sizes = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('quorumOf', () => {
  it('is floor(n/2) + 1 for n = 1..100', () => {
    for (const n of sizes(1, 100)) expect(quorumOf(n), `n = ${n}`).toBe(Math.floor(n / 2) + 1);
  });

  it('is the smallest strict majority: q > n/2, and q - 1 is not a majority', () => {
    for (const n of sizes(1, 100)) {
      const q = quorumOf(n);
      expect(2 * q, `n = ${n}`).toBeGreaterThan(n);
      expect(2 * (q - 1), `n = ${n}`).toBeLessThanOrEqual(n);
      expect(q, `n = ${n}`).toBeLessThanOrEqual(n); // reachable with every member voting yes
    }
  });

  it.each([
    { n: 1, q: 1 },
    { n: 2, q: 2 },
    { n: 3, q: 2 },
    { n: 4, q: 3 },
    { n: 5, q: 3 },
    { n: 7, q: 4 },
  ])('n = $n needs $q', ({ n, q }) => {
    expect(quorumOf(n)).toBe(q);
  });
});

describe('decide', () => {
  /** Every (yes, no) a round of n members can be in. */
  const states = (n: number) => sizes(0, n).flatMap((yes) => sizes(0, n - yes).map((no) => ({ yes, no })));

  it('is won iff yes >= quorum, lost iff not won and n - no < quorum, else open (n = 1..9, every yes + no <= n)', () => {
    let checked = 0;
    for (const n of sizes(1, 9)) {
      const quorum = quorumOf(n);
      for (const { yes, no } of states(n)) {
        const expected: Decision = yes >= quorum ? 'won' : n - no < quorum ? 'lost' : 'open';
        expect(decide(yes, no, n, quorumOf(n)), `yes=${yes} no=${no} n=${n}`).toBe(expected);
        checked++;
      }
    }
    expect(checked).toBe(sizes(1, 9).reduce((sum, n) => sum + ((n + 1) * (n + 2)) / 2, 0));
  });

  it('is never open once every member has voted', () => {
    for (const n of sizes(1, 9)) for (const yes of sizes(0, n)) expect(decide(yes, n - yes, n, quorumOf(n)), `yes=${yes} n=${n}`).not.toBe('open');
  });

  it('never changes its mind: more votes keep won won and lost lost', () => {
    for (const n of sizes(1, 9)) {
      for (const { yes, no } of states(n)) {
        const now = decide(yes, no, n, quorumOf(n));
        if (now === 'open' || yes + no === n) continue;
        expect(decide(yes + 1, no, n, quorumOf(n)), `yes=${yes}+1 no=${no} n=${n}`).toBe(now);
        expect(decide(yes, no + 1, n, quorumOf(n)), `yes=${yes} no=${no}+1 n=${n}`).toBe(now);
      }
    }
  });

  it('two disjoint sets of members can never both win (any two majorities intersect)', () => {
    for (const n of sizes(1, 9)) {
      const all = (1 << n) - 1;
      let pairs = 0;
      for (let a = 0; a <= all; a++) {
        const rest = all & ~a;
        // Every subset b of the members not in a, the empty set included.
        for (let b = rest; ; b = (b - 1) & rest) {
          const yesA = popcount(a);
          const yesB = popcount(b);
          // Client A's yes voters said no to B and vice versa: disjoint by construction.
          const bothWon = decide(yesA, yesB, n, quorumOf(n)) === 'won' && decide(yesB, yesA, n, quorumOf(n)) === 'won';
          expect(bothWon, `n=${n} a=${a.toString(2)} b=${b.toString(2)}`).toBe(false);
          pairs++;
          if (b === 0) break;
        }
      }
      expect(pairs, `n = ${n}`).toBe(3 ** n); // each member: in a, in b, or in neither
    }
  });
});

function popcount(mask: number): number {
  let count = 0;
  for (let m = mask; m !== 0; m &= m - 1) count++;
  return count;
}
