/**
 * The timing model (driftMs, validityMs, deadlineOf) and the two clocks: ManualClock, which only
 * moves when told to, and systemClock, the monotonic performance.now().
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { deadlineOf, driftMs, ManualClock, onAbort, systemClock, validityMs } from '../../src/clock/index.js';

/** Lets every already-settled promise run its callbacks. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How a promise ended, without letting a rejection go unhandled. */
function track(promise: Promise<void>) {
  const state: { settled: 'pending' | 'resolved' | 'rejected'; reason?: unknown } = { settled: 'pending' };
  promise.then(
    () => (state.settled = 'resolved'),
    (reason: unknown) => {
      state.settled = 'rejected';
      state.reason = reason;
    },
  );
  return state;
}

describe('driftMs: ttl × driftFactor rounded up, plus 2 ms', () => {
  it.each([
    { ttl: 10_000, factor: 0.01, drift: 102 },
    { ttl: 1, factor: 0.01, drift: 3 }, // 0.01 rounds up to 1
    { ttl: 0, factor: 0, drift: 2 },
    { ttl: 10_000, factor: 0, drift: 2 },
    { ttl: 150, factor: 0.01, drift: 4 }, // 1.5 -> 2
    { ttl: 100, factor: 0.01, drift: 3 }, // exactly 1: no rounding
    { ttl: 30_000, factor: 0.1, drift: 3_002 },
    { ttl: 1_000, factor: 0.25, drift: 252 },
    { ttl: 3, factor: 0.5, drift: 4 }, // 1.5 -> 2
  ])('driftMs($ttl, $factor) = $drift', ({ ttl, factor, drift }) => {
    expect(driftMs(ttl, factor)).toBe(drift);
  });

  it('is never below ttl × factor + 2 and less than 1 ms above it', () => {
    for (const factor of [0, 0.01, 0.1, 0.25, 0.49]) {
      for (let ttl = 0; ttl <= 5_000; ttl += 7) {
        const drift = driftMs(ttl, factor);
        expect(Number.isInteger(drift)).toBe(true);
        expect(drift).toBeGreaterThanOrEqual(ttl * factor + 2);
        // Float products like 700 × 0.07 = 49.00000000000001 may round up one more whole ms: the
        // safe direction. Anything more would be a real error.
        expect(drift - (ttl * factor + 2)).toBeLessThan(1 + 1e-9);
      }
    }
  });
});

describe('validityMs and deadlineOf', () => {
  it('validity is ttl - elapsed - drift, and may go negative', () => {
    expect(validityMs(10_000, 0, 102)).toBe(9_898);
    expect(validityMs(10_000, 250, 102)).toBe(9_648);
    expect(validityMs(100, 98, 3)).toBe(-1);
    expect(validityMs(100, 97, 3)).toBe(0);
  });

  it('the deadline is start + ttl - drift, on the clock that took the start', () => {
    expect(deadlineOf(0, 10_000, 102)).toBe(9_898);
    expect(deadlineOf(1_000.5, 10_000, 102)).toBe(10_898.5);
  });

  it('validity read at any moment is the deadline minus that moment', () => {
    const ttl = 5_000;
    const drift = driftMs(ttl, 0.01);
    const startedAt = 12_345;
    for (const elapsed of [0, 1, 49.5, 4_000, 4_948, 6_000]) {
      expect(validityMs(ttl, elapsed, drift)).toBeCloseTo(deadlineOf(startedAt, ttl, drift) - (startedAt + elapsed), 9);
    }
  });
});

describe('ManualClock', () => {
  it('starts where told (0 by default) and moves only on advance()', () => {
    expect(new ManualClock().now()).toBe(0);
    const clock = new ManualClock(1_000);
    expect(clock.now()).toBe(1_000);
    expect(clock.now()).toBe(1_000);
    clock.advance(250);
    expect(clock.now()).toBe(1_250);
    clock.advance(0.5);
    expect(clock.now()).toBe(1_250.5);
    clock.advance(0);
    expect(clock.now()).toBe(1_250.5);
  });

  it('wakes a sleeper only once time reaches its wake-up, not before', async () => {
    const clock = new ManualClock();
    const sleep = track(clock.sleep(100));
    expect(clock.sleepers).toBe(1);
    clock.advance(99);
    await settle();
    expect(sleep.settled).toBe('pending');
    expect(clock.sleepers).toBe(1);
    clock.advance(1);
    await settle();
    expect(sleep.settled).toBe('resolved');
    expect(clock.sleepers).toBe(0);
  });

  it('wakes sleepers in order of their wake-up time, each only when passed', async () => {
    const clock = new ManualClock();
    const woke: string[] = [];
    const sleep = (label: string, ms: number) => clock.sleep(ms).then(() => woke.push(label));
    const all = Promise.all([sleep('30', 30), sleep('10', 10), sleep('20', 20)]);
    expect(clock.sleepers).toBe(3);

    clock.advance(9);
    await settle();
    expect(woke).toEqual([]);
    clock.advance(1);
    await settle();
    expect(woke).toEqual(['10']);
    clock.advance(15);
    await settle();
    expect(woke).toEqual(['10', '20']);
    expect(clock.sleepers).toBe(1);
    clock.advance(5);
    await all;
    expect(woke).toEqual(['10', '20', '30']);
    expect(clock.sleepers).toBe(0);
  });

  it('one big advance wakes every due sleeper in wake-up order (ties in call order)', async () => {
    const clock = new ManualClock(500);
    const woke: string[] = [];
    const sleeps = [
      clock.sleep(300).then(() => woke.push('300')),
      clock.sleep(100).then(() => woke.push('100a')),
      clock.sleep(200).then(() => woke.push('200')),
      clock.sleep(100).then(() => woke.push('100b')),
      clock.sleep(-5).then(() => woke.push('negative = 0')),
    ];
    const late = track(clock.sleep(1_000));
    clock.advance(300);
    await Promise.all(sleeps);
    expect(woke).toEqual(['negative = 0', '100a', '100b', '200', '300']);
    expect(late.settled).toBe('pending');
    expect(clock.sleepers).toBe(1);
  });

  it('measures a sleep from the time it was called', async () => {
    const clock = new ManualClock();
    clock.advance(1_000);
    const sleep = track(clock.sleep(50));
    clock.advance(49);
    await settle();
    expect(sleep.settled).toBe('pending');
    clock.advance(1);
    await settle();
    expect(sleep.settled).toBe('resolved');
  });

  it('an abort during a sleep rejects with signal.reason and removes the sleeper', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const reason = new Error('stop');
    const aborted = clock.sleep(100, controller.signal);
    const other = track(clock.sleep(100));
    expect(clock.sleepers).toBe(2);

    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    expect(clock.sleepers).toBe(1);

    clock.advance(100);
    await settle();
    expect(other.settled).toBe('resolved'); // the other sleeper is untouched
    expect(clock.sleepers).toBe(0);
  });

  it('an abort without a reason rejects with an AbortError', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const sleep = clock.sleep(100, controller.signal);
    controller.abort();
    await expect(sleep).rejects.toMatchObject({ name: 'AbortError' });
    expect(clock.sleepers).toBe(0);
  });

  it('an already-aborted signal rejects at once with its reason, without adding a sleeper', async () => {
    const clock = new ManualClock();
    const reason = new Error('already');
    const sleep = clock.sleep(100, AbortSignal.abort(reason));
    expect(clock.sleepers).toBe(0);
    await expect(sleep).rejects.toBe(reason);
  });

  it('an abort after the sleeper woke changes nothing', async () => {
    const clock = new ManualClock();
    const controller = new AbortController();
    const sleep = clock.sleep(10, controller.signal);
    clock.advance(10);
    await expect(sleep).resolves.toBeUndefined();
    controller.abort(new Error('too late'));
    expect(clock.sleepers).toBe(0);
  });

  it.each([
    { label: 'negative', ms: -1 },
    { label: 'NaN', ms: Number.NaN },
    { label: '-Infinity', ms: -Infinity },
  ])('advance($label) throws a RangeError and leaves time and sleepers alone', async ({ ms }) => {
    const clock = new ManualClock(100);
    const sleep = track(clock.sleep(10));
    expect(() => clock.advance(ms)).toThrow(RangeError);
    expect(() => clock.advance(ms)).toThrow(/^quorumlock: ms must be >= 0 \(ManualClock.advance\), got /);
    expect(() => clock.advance(ms)).toThrow(expect.objectContaining({ code: 'QUORUMLOCK_ERR_OUT_OF_RANGE', parameter: 'ms' }));
    expect(clock.now()).toBe(100);
    await settle();
    expect(sleep.settled).toBe('pending');
    expect(clock.sleepers).toBe(1);
  });
});

describe('systemClock', () => {
  it('never goes backwards over many reads', () => {
    let previous = systemClock.now();
    let decreases = 0;
    for (let i = 0; i < 200_000; i++) {
      const now = systemClock.now();
      if (now < previous) decreases++;
      previous = now;
    }
    expect(decreases).toBe(0);
    expect(previous).toBeGreaterThan(0);
  });

  it('sleep with an already-aborted signal rejects with its reason', async () => {
    const reason = new Error('aborted before');
    await expect(systemClock.sleep(10_000, AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('sleep resolves after about ms, as measured by its own now()', async () => {
    const before = systemClock.now();
    await systemClock.sleep(30);
    // setTimeout may fire up to ~1 ms early relative to performance.now().
    expect(systemClock.now() - before).toBeGreaterThanOrEqual(29);
  });

  it('an abort during a sleep rejects with signal.reason well before ms', async () => {
    const controller = new AbortController();
    const reason = new Error('abort mid-sleep');
    const before = systemClock.now();
    const sleep = systemClock.sleep(10_000, controller.signal);
    setTimeout(() => controller.abort(reason), 5);
    await expect(sleep).rejects.toBe(reason);
    expect(systemClock.now() - before).toBeLessThan(5_000);
  });
});

describe('edge cases found in review', () => {
  it('driftMs does not round float noise up a whole millisecond', () => {
    expect(700 * 0.07).toBeGreaterThan(49); // 49.00000000000001 in floating point
    expect(driftMs(700, 0.07)).toBe(51);
    expect(driftMs(10_001, 0.01)).toBe(103); // a real fraction (100.01) still rounds up
  });

  it('ManualClock.sleep(NaN) is no sleep: it wakes on the next advance', async () => {
    const clock = new ManualClock();
    const woke = clock.sleep(Number.NaN).then(() => 'woke');
    expect(clock.sleepers).toBe(1);
    clock.advance(0);
    await expect(woke).resolves.toBe('woke');
  });
});

describe('ManualClock timers', () => {
  it('fire in time order, each seeing now() at its own due time, and can be cleared', () => {
    const clock = new ManualClock(100);
    const seen: string[] = [];
    clock.setTimer(() => seen.push(`b@${clock.now()}`), 20);
    clock.setTimer(() => seen.push(`a@${clock.now()}`), 10);
    const cleared = clock.setTimer(() => seen.push('never'), 15);
    clock.setTimer(() => seen.push(`c@${clock.now()}`), 20); // same time as b: after it
    clock.clearTimer(cleared);
    expect(clock.nextTimerAt()).toBe(110);
    clock.advance(5);
    expect(seen).toEqual([]);
    clock.advance(50);
    expect(seen).toEqual(['a@110', 'b@120', 'c@120']);
    expect(clock.now()).toBe(155);
    expect(clock.nextTimerAt()).toBeUndefined();
  });

  it('a timer set by a timer fires in the same advance when due', () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    clock.setTimer(() => clock.setTimer(() => seen.push(clock.now()), 5), 5);
    clock.advance(20);
    expect(seen).toEqual([10]);
  });
});

describe('onAbort: one listener per signal (src/clock/abort.ts)', () => {
  it('calls each listener still listening once, not one that stopped, and the same function once per listening', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    const a = () => calls.push('a');
    const stopped = onAbort(controller.signal, () => calls.push('stopped'));
    onAbort(controller.signal, a);
    onAbort(controller.signal, a);
    onAbort(controller.signal, () => calls.push('b'));
    stopped();
    controller.abort();
    controller.abort();
    expect(calls).toEqual(['a', 'a', 'b']);
  });

  it('a sleep on a shared signal rejects with its reason; one that ended is not called', async () => {
    const controller = new AbortController();
    const clock = new ManualClock();
    const ended = clock.sleep(10, controller.signal);
    clock.advance(10);
    await ended;
    const sleeping = clock.sleep(1000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
  });
});

describe('onAbort: the one listener goes with the last wait', () => {
  it('leaves no listener on a signal once every wait stopped, one while any listens', () => {
    const controller = new AbortController();
    const signal = AbortSignal.any([controller.signal]);
    const stops = Array.from({ length: 20 }, () => onAbort(signal, () => undefined));
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    for (const stop of stops.slice(1)) stop();
    expect(getEventListeners(signal, 'abort')).toHaveLength(1);
    stops[0]!();
    stops[0]!();
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    // Listening again after that: a new listener, called at the abort.
    let called = 0;
    onAbort(signal, () => called++);
    controller.abort();
    expect(called).toBe(1);
  });

  it('a listener that throws does not keep the others waiting; what it threw is thrown on its own', () => {
    const controller = new AbortController();
    const calls: string[] = [];
    // Thrown in a microtask, as an EventTarget listener's error is reported: caught here instead.
    const later: (() => void)[] = [];
    const spy = vi.spyOn(globalThis, 'queueMicrotask').mockImplementation((callback) => void later.push(callback));
    try {
      onAbort(controller.signal, () => {
        throw new Error('a clock that throws');
      });
      onAbort(controller.signal, () => calls.push('b'));
      controller.abort();
    } finally {
      spy.mockRestore();
    }
    expect(calls).toEqual(['b']);
    expect(later).toHaveLength(1);
    expect(() => later[0]!()).toThrow('a clock that throws');
  });
});
