/**
 * What the semaphore makes of its members' readings (src/semaphore/probe.ts viewOf): which permits
 * a quorum sees free (absent, nobody in line), which a quorum holds and for how long at least, and
 * how long each line is. Advisory data for choosing a permit; the tests pin how a quorum decides.
 */
import { describe, expect, it } from 'vitest';
import { viewOf } from '../../src/semaphore/probe.js';
import { permitResource } from '../../src/store/keys.js';
import { checkSemaphoreName, checkSemaphoreOptions } from '../../src/semaphore/check.js';

const ABSENT = -2;
const reading = (pttls: number[] | undefined, waiting: number[] = pttls?.map(() => 0) ?? []) => ({
  member: 'm',
  pttls,
  ...(pttls ? { waiting } : {}),
});

describe('viewOf', () => {
  it('a permit is free when a quorum has neither its key nor anyone in its line', () => {
    const view = viewOf(
      [
        reading([ABSENT, ABSENT, 500], [0, 1, 0]),
        reading([ABSENT, ABSENT, 500], [0, 1, 0]),
        reading([ABSENT, ABSENT, ABSENT], [0, 0, 0]),
        reading([900, ABSENT, 500], [0, 0, 0]),
        reading(undefined),
      ],
      3,
    );
    expect(view.answered).toBe(true);
    // Permit 1: absent everywhere, but two of the four answering members have a waiter in its
    // line: open on 2, fewer than a quorum (3), so not free; its line counts 1 (the median).
    expect(view.free).toEqual([0]);
    expect(view.waiting).toEqual([0, 1, 0]);
    // Permit 2 is held on 3 of 5 (a quorum): a quorum keeps it at least 500 ms.
    expect(view.held).toEqual([{ permit: 2, remainingMs: 500 }]);
  });

  it('held: the quorum-th longest remaining time, so that a quorum keeps the key at least that long', () => {
    const view = viewOf([reading([1000]), reading([800]), reading([300]), reading([ABSENT]), reading([100])], 1);
    expect(view.held).toEqual([{ permit: 0, remainingMs: 300 }]);
    expect(view.free).toEqual([]);
  });

  it('a key without expiry counts as held for good', () => {
    expect(viewOf([reading([-1]), reading([-1]), reading([ABSENT])], 1).held).toEqual([{ permit: 0, remainingMs: Infinity }]);
  });

  it('with fewer than a quorum answering, nothing is free or held, and it says so', () => {
    const view = viewOf([reading([ABSENT]), reading(undefined), reading(undefined)], 1);
    expect(view).toEqual({ answered: false, free: [], held: [], waiting: [0] });
  });

  it('the line length is the median of the answering members', () => {
    expect(viewOf([reading([500], [3]), reading([500], [1]), reading([500], [2])], 1).waiting).toEqual([2]);
  });
});

describe('permit keys and checks', () => {
  it('permit keys are reserved names, one per index, with the semaphore name as hash tag', () => {
    expect(permitResource('gpu-slots', 3)).toBe('quorumlock:semaphore:{gpu-slots}:permit:3');
    expect(permitResource('a', 1)).not.toBe(permitResource('a', 10));
  });

  it('names and permits are checked with typed errors', () => {
    expect(checkSemaphoreName('x')).toBe('x');
    expect(() => checkSemaphoreName('a}')).toThrow(expect.objectContaining({ code: 'QUORUMLOCK_ERR_OUT_OF_RANGE', parameter: 'name' }));
    expect(checkSemaphoreOptions({ permits: 1024 })).toBe(1024);
    expect(() => checkSemaphoreOptions({ permits: 1025 })).toThrow(expect.objectContaining({ code: 'QUORUMLOCK_ERR_OUT_OF_RANGE', parameter: 'permits' }));
    expect(() => checkSemaphoreOptions({ permits: 2, max: 3 })).toThrow(expect.objectContaining({ code: 'QUORUMLOCK_ERR_UNKNOWN_OPTION', parameter: 'max' }));
    expect(() => checkSemaphoreOptions(null)).toThrow(expect.objectContaining({ code: 'QUORUMLOCK_ERR_INVALID_ARG_TYPE', parameter: 'options' }));
  });
});
