/** The election checker on synthetic reigns: what counts as a violation and what does not. */
import { describe, expect, it } from 'vitest';
import { overlaps } from './checker.js';
import { lateSignals, reignInterval, termViolations, type Reign } from './election-checker.js';

const reign = (fields: Partial<Reign> & Pick<Reign, 'acquiredAt' | 'validUntil' | 'term'>): Reign => ({
  client: 0,
  calledAt: fields.acquiredAt,
  lockedMembers: [],
  resigned: false,
  killed: false,
  ...fields,
});

describe('reignInterval', () => {
  it('ends at the earliest of the validity, the resignation and the signal', () => {
    expect(reignInterval(reign({ acquiredAt: 0, validUntil: 100, term: 1 }), 3)).toEqual({ client: 3, start: 0, end: 100 });
    expect(reignInterval(reign({ acquiredAt: 0, validUntil: 100, term: 1, releasedAt: 40, abortedAt: 41 }), 0).end).toBe(40);
    expect(reignInterval(reign({ acquiredAt: 0, validUntil: 100, term: 1, abortedAt: 80 }), 0).end).toBe(80);
    expect(reignInterval(reign({ acquiredAt: 0, validUntil: 100, term: 1, abortedAt: 130 }), 0).end).toBe(100);
  });

  it('indexed by reign, so two reigns of one campaigner are compared too', () => {
    const reigns = [reign({ acquiredAt: 0, validUntil: 100, term: 1 }), reign({ acquiredAt: 90, validUntil: 200, term: 2 })];
    expect(overlaps(reigns.map(reignInterval))).toEqual({ count: 1, maxOverlapMs: 10 });
  });
});

describe('termViolations', () => {
  it('passes strictly increasing terms (gaps allowed), in order of start whatever the input order', () => {
    expect(termViolations([reign({ acquiredAt: 50, validUntil: 60, term: 7 }), reign({ acquiredAt: 0, validUntil: 10, term: 2 })])).toEqual([]);
  });

  it('reports a repeated or a smaller term', () => {
    const reigns = [
      reign({ acquiredAt: 0, validUntil: 10, term: 3 }),
      reign({ acquiredAt: 20, validUntil: 30, term: 3 }),
      reign({ acquiredAt: 40, validUntil: 50, term: 2 }),
    ];
    expect(termViolations(reigns)).toEqual([
      [3, 3],
      [3, 2],
    ]);
  });
});

describe('lateSignals', () => {
  it('reports a reign that did not resign and was told after its validity, or never', () => {
    const late = reign({ acquiredAt: 0, validUntil: 100, term: 1, abortedAt: 120 });
    const never = reign({ acquiredAt: 0, validUntil: 100, term: 2 });
    expect(lateSignals([late, never])).toEqual([
      { term: 1, lateByMs: 20 },
      { term: 2, lateByMs: Infinity },
    ]);
  });

  it('passes signals in time, resignations, and reigns the caller exempts', () => {
    const onTime = reign({ acquiredAt: 0, validUntil: 100, term: 1, abortedAt: 100 });
    const resigned = reign({ acquiredAt: 0, validUntil: 100, term: 2, resigned: true, releasedAt: 50, abortedAt: 50 });
    const stalled = reign({ acquiredAt: 0, validUntil: 100, term: 3, abortedAt: 400 });
    expect(lateSignals([onTime, resigned, stalled], (r) => r.term === 3)).toEqual([]);
  });
});
