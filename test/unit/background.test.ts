/** src/clock/background.ts: many background timers on one clock timer, in due order, clearable. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clearBackgroundTimer, ManualClock, setBackgroundTimer, type BackgroundTimer } from '../../src/clock/index.js';

/** ManualClock with a count of the clock timers it has pending. */
function countingClock() {
  const clock = new ManualClock();
  let pending = 0;
  const setTimer = clock.setTimer.bind(clock);
  const clearTimer = clock.clearTimer.bind(clock);
  clock.setTimer = (callback, ms) => {
    pending++;
    const fired = () => {
      pending--;
      callback();
    };
    return { handle: setTimer(fired, ms) };
  };
  clock.clearTimer = (timer) => {
    const handle = (timer as { handle?: unknown } | undefined)?.handle;
    if (handle === undefined) return;
    pending--;
    clearTimer(handle);
  };
  return { clock, pending: () => pending };
}

describe('background timers', () => {
  it('fire in due order (then in order of setting) on a single clock timer', () => {
    const { clock, pending } = countingClock();
    const fired: string[] = [];
    setBackgroundTimer(clock, () => fired.push('c'), 30);
    setBackgroundTimer(clock, () => fired.push('a'), 10);
    setBackgroundTimer(clock, () => fired.push('b1'), 20);
    setBackgroundTimer(clock, () => fired.push('b2'), 20);
    expect(pending()).toBe(1);
    clock.advance(15);
    expect(fired).toEqual(['a']);
    clock.advance(100);
    expect(fired).toEqual(['a', 'b1', 'b2', 'c']);
    expect(pending()).toBe(0);
  });

  it('a cleared timer never fires, and the clock timer goes once none is left', () => {
    const { clock, pending } = countingClock();
    const fired: number[] = [];
    const first = setBackgroundTimer(clock, () => fired.push(1), 10);
    const second = setBackgroundTimer(clock, () => fired.push(2), 20);
    clearBackgroundTimer(clock, first);
    clearBackgroundTimer(clock, first); // twice: nothing
    clock.advance(15);
    expect(fired).toEqual([]);
    clearBackgroundTimer(clock, second);
    expect(pending()).toBe(0);
    clock.advance(100);
    expect(fired).toEqual([]);
  });

  it('a callback may set a timer due at once: it runs from a new clock timer, not inside the same fire', () => {
    const { clock } = countingClock();
    const fired: string[] = [];
    let clockTimers = 0;
    const setTimer = clock.setTimer.bind(clock);
    clock.setTimer = (callback, ms) => {
      clockTimers++;
      return setTimer(callback, ms);
    };
    setBackgroundTimer(
      clock,
      () => {
        fired.push('first');
        setBackgroundTimer(clock, () => fired.push('again'), 0);
        expect(fired).toEqual(['first']); // not run from within this callback's fire
      },
      5,
    );
    clock.advance(5); // ManualClock runs the new 0 ms clock timer within the same advance
    expect(fired).toEqual(['first', 'again']);
    expect(clockTimers).toBe(2);
  });

  it('matches a plain model for any sequence of set, clear and advance', () => {
    type Op = { kind: 'set'; ms: number } | { kind: 'clear'; which: number } | { kind: 'advance'; ms: number };
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), ms: fc.integer({ min: 0, max: 50 }) }),
      fc.record({ kind: fc.constant('clear' as const), which: fc.nat(40) }),
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 30 }) }),
    );
    fc.assert(
      fc.property(fc.array(op as fc.Arbitrary<Op>, { maxLength: 60 }), (ops) => {
        const { clock, pending } = countingClock();
        const timers: { handle: BackgroundTimer; at: number; seq: number; cleared: boolean }[] = [];
        const fired: number[] = [];
        const expected: number[] = [];
        let now = 0;
        for (const o of ops) {
          if (o.kind === 'set') {
            const seq = timers.length;
            timers.push({ handle: setBackgroundTimer(clock, () => fired.push(seq), o.ms), at: now + o.ms, seq, cleared: false });
          } else if (o.kind === 'clear') {
            const t = timers[o.which];
            if (t) {
              clearBackgroundTimer(clock, t.handle);
              t.cleared = true;
            }
          } else {
            now += o.ms;
            clock.advance(o.ms);
            // The model: every uncleared timer due by now, in (at, seq) order, each once.
            for (const t of [...timers].sort((a, b) => a.at - b.at || a.seq - b.seq)) {
              if (!t.cleared && t.at <= now && !expected.includes(t.seq)) expected.push(t.seq);
            }
            expect(fired).toEqual(expected);
          }
          const live = timers.some((t) => !t.cleared && !expected.includes(t.seq));
          expect(pending()).toBe(live ? 1 : 0);
        }
      }),
    );
  });
});
