import { describe, expect, it } from 'vitest';
import { MarkPacing, markPacingBounds } from '../../../src/worker/priority/mark-pacing.ts';

describe('markPacingBounds', () => {
  it('paced: starts at a quarter of the slots, between 1 and twice the slots, a sixteenth of them as the buffer', () => {
    expect(markPacingBounds(64)).toEqual({ initial: 16, min: 1, max: 128, buffer: 4 });
    expect(markPacingBounds(1)).toEqual({ initial: 1, min: 1, max: 2, buffer: 1 });
  });

  it('MARKS_AHEAD as a number pins it', () => {
    expect(markPacingBounds(64, 128)).toMatchObject({ initial: 128, min: 128, max: 128 });
  });
});

/** `perSecond` slot releases a second for `seconds`, on the given clock (ms). */
function releases(pacing: MarkPacing, perSecond: number, seconds: number, from = 0): number {
  const step = 1_000 / perSecond;
  let t = from;
  for (let i = 0; i < perSecond * seconds; i += 1) pacing.slotReleased((t += step));
  return t;
}

describe('MarkPacing', () => {
  it('gives as many mark permits as free slots plus the marks ahead (at least one)', () => {
    const pacing = new MarkPacing(markPacingBounds(32));
    expect(pacing.ahead).toBe(8);
    expect(pacing.markPermits(32)).toBe(40);
    expect(pacing.markPermits(0)).toBe(8);
  });

  it("keeps the initial marks ahead until both the release rate and a mark's time are measured", () => {
    const pacing = new MarkPacing(markPacingBounds(64));
    releases(pacing, 1_000, 2);
    expect(pacing.target).toBe(16);
    pacing.markCommitted(10);
    expect(pacing.target).not.toBe(16);
  });

  it("asks for the calls that end while a mark commits, twice over, plus the buffer (Little's law)", () => {
    const pacing = new MarkPacing(markPacingBounds(64));
    releases(pacing, 1_000, 3); // 1 a millisecond, settled over three seconds
    for (let i = 0; i < 50; i += 1) pacing.markCommitted(10);
    // 1/ms × 10 ms × 2 + 4 = 24 (the decayed count's estimate is a little under 1/ms)
    expect(pacing.target).toBeGreaterThanOrEqual(22);
    expect(pacing.target).toBeLessThanOrEqual(25);
    // A slow ledger (a fresh process's first transactions) asks for more at once, up to twice the slots.
    pacing.markCommitted(2_000);
    expect(pacing.target).toBe(128);
  });

  it('goes up at once; comes down only as far as the permits held beyond the free slots allow', () => {
    const pacing = new MarkPacing(markPacingBounds(64));
    releases(pacing, 1_000, 3);
    for (let i = 0; i < 50; i += 1) pacing.markCommitted(20);
    const high = pacing.target;
    expect(pacing.settle(0, 0)).toBe(true);
    expect(pacing.ahead).toBe(high);
    for (let i = 0; i < 100; i += 1) pacing.markCommitted(2);
    const low = pacing.target;
    expect(low).toBeLessThan(high);
    // Every permit held and no slot free: nothing to come down into yet.
    expect(pacing.settle(high, 0)).toBe(false);
    // A permit coming back is taken by the step down, not by the next record waiting.
    expect(pacing.giveBack(high, 0)).toBe(true);
    expect(pacing.ahead).toBe(high - 1);
    // With nothing held, down to what is asked at once.
    expect(pacing.settle(0, 0)).toBe(true);
    expect(pacing.ahead).toBe(low);
  });

  it('lower traffic asks for fewer: the release rate decays without releases', () => {
    const pacing = new MarkPacing(markPacingBounds(64));
    const t = releases(pacing, 1_000, 3);
    for (let i = 0; i < 50; i += 1) pacing.markCommitted(10);
    const busy = pacing.target;
    releases(pacing, 50, 3, t + 1_000);
    expect(pacing.target).toBeLessThan(busy);
    expect(pacing.target).toBeGreaterThanOrEqual(pacing.bounds.min);
  });

  it('ignores a mark time that is not a time', () => {
    const pacing = new MarkPacing(markPacingBounds(8));
    releases(pacing, 100, 1);
    pacing.markCommitted(Number.NaN);
    pacing.markCommitted(-5);
    expect(pacing.target).toBe(2);
  });

  it('refuses bounds that make no sense', () => {
    expect(() => new MarkPacing({ initial: 0, min: 1, max: 2, buffer: 1 })).toThrow(RangeError);
    expect(() => new MarkPacing({ initial: 3, min: 1, max: 2, buffer: 1 })).toThrow(RangeError);
  });
});
