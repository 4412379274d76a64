/** The checker's analysis on synthetic holdings: what counts as a violation and what does not. */
import { describe, expect, it } from 'vitest';
import { acquiredWithin, fenceViolations, intervalOf, overlaps, permitViolations, quantile } from './checker.js';

const span = (client: number, start: number, end: number) => ({ client, start, end });

describe('overlaps', () => {
  it('counts two clients holding at once, with the shared time', () => {
    expect(overlaps([span(0, 0, 10), span(1, 7, 20)])).toEqual({ count: 1, maxOverlapMs: 3 });
  });

  it('does not count intervals that only touch', () => {
    expect(overlaps([span(0, 0, 10), span(1, 10, 20), span(2, 20, 30)])).toEqual({ count: 0, maxOverlapMs: 0 });
  });

  it('does not count one client against itself', () => {
    expect(overlaps([span(0, 0, 10), span(0, 5, 20)])).toEqual({ count: 0, maxOverlapMs: 0 });
  });

  it('counts every overlapping pair, whatever the input order, and keeps the longest overlap', () => {
    // 1 lies inside 0; 2 overlaps 0 by 5 and 1 by 0 (touching); 3 is clear of all.
    const intervals = [span(2, 45, 60), span(3, 100, 110), span(0, 0, 50), span(1, 10, 45)];
    expect(overlaps(intervals)).toEqual({ count: 2, maxOverlapMs: 35 });
  });

  it('finds an overlap behind an earlier, longer interval', () => {
    // 1 ends before 2 starts, but 0 still covers 2.
    expect(overlaps([span(0, 0, 100), span(1, 10, 20), span(2, 50, 60)])).toEqual({ count: 2, maxOverlapMs: 10 });
  });
});

describe('intervalOf', () => {
  it('ends at release when the client let go early', () => {
    expect(intervalOf({ client: 1, acquiredAt: 5, validUntil: 100, releasedAt: 40 })).toEqual(span(1, 5, 40));
  });

  it('ends at the validity when the release came late or not at all', () => {
    expect(intervalOf({ client: 1, acquiredAt: 5, validUntil: 100, releasedAt: 130 })).toEqual(span(1, 5, 100));
    expect(intervalOf({ client: 1, acquiredAt: 5, validUntil: 100 })).toEqual(span(1, 5, 100));
  });

  it('so a successor after a release is no violation, one inside the validity without a release is', () => {
    const first = { client: 0, acquiredAt: 0, validUntil: 100 };
    const second = { client: 1, acquiredAt: 50, validUntil: 150 };
    expect(overlaps([intervalOf({ ...first, releasedAt: 50 }), intervalOf(second)]).count).toBe(0);
    expect(overlaps([intervalOf({ ...first, releasedAt: 60 }), intervalOf(second)])).toEqual({ count: 1, maxOverlapMs: 10 });
  });
});

describe('fenceViolations', () => {
  it('accepts strictly increasing fences in holding order, whatever the input order', () => {
    expect(
      fenceViolations([
        { acquiredAt: 30, fence: 9 },
        { acquiredAt: 10, fence: 1 },
        { acquiredAt: 20, fence: 2 },
      ]),
    ).toBe(0);
  });

  it('counts each repeat and each decrease', () => {
    const holdings = [
      { acquiredAt: 1, fence: 1 },
      { acquiredAt: 2, fence: 1 }, // repeat
      { acquiredAt: 3, fence: 5 },
      { acquiredAt: 4, fence: 3 }, // decrease
      { acquiredAt: 5, fence: 4 }, // increase on its predecessor
    ];
    expect(fenceViolations(holdings)).toBe(2);
  });

  it('skips holdings without a fence', () => {
    expect(fenceViolations([{ acquiredAt: 1, fence: 2 }, { acquiredAt: 2 }, { acquiredAt: 3, fence: 3 }])).toBe(0);
    expect(fenceViolations([{ acquiredAt: 1 }, { acquiredAt: 2 }])).toBe(0);
  });
});

describe('acquiredWithin', () => {
  it('counts acquires that started and finished inside a window, not those that straddle it', () => {
    const windows = [{ start: 100, end: 200 }];
    const holdings = [
      { calledAt: 110, acquiredAt: 150 }, // inside: a violation during a majority pause
      { calledAt: 90, acquiredAt: 150 }, // started before the window
      { calledAt: 150, acquiredAt: 210 }, // finished after it
      { calledAt: 300, acquiredAt: 310 },
    ];
    expect(acquiredWithin(holdings, windows)).toBe(1);
    expect(acquiredWithin(holdings, [])).toBe(0);
  });
});

it('quantile picks from the sorted samples', () => {
  const samples = Array.from({ length: 100 }, (_, i) => 100 - i);
  expect(quantile(samples, 0.5)).toBe(51);
  expect(quantile(samples, 0.99)).toBe(100);
  expect(quantile([], 0.99)).toBeNaN();
});

describe('permitViolations', () => {
  it('reports the instant more than `permits` holdings overlap, once per stretch, with its height', () => {
    const intervals = [span(0, 0, 10), span(1, 2, 12), span(2, 5, 8), span(3, 6, 7), span(4, 20, 30)];
    expect(permitViolations(intervals, 2)).toEqual({ maxOverlap: 4, violations: [{ at: 5, holders: 4 }] });
    expect(permitViolations(intervals, 4)).toEqual({ maxOverlap: 4, violations: [] });
  });

  it('does not count holdings that only touch, nor empty ones', () => {
    expect(permitViolations([span(0, 0, 10), span(1, 10, 20), span(2, 5, 5)], 1)).toEqual({ maxOverlap: 1, violations: [] });
  });

  it('reports separate stretches separately', () => {
    const intervals = [span(0, 0, 4), span(1, 1, 3), span(2, 10, 14), span(3, 11, 13)];
    expect(permitViolations(intervals, 1).violations).toEqual([
      { at: 1, holders: 2 },
      { at: 11, holders: 2 },
    ]);
  });
});
