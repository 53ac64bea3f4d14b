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

describe('MarkPacing', () => {
  it('gives as many mark permits as free slots plus the marks ahead (at least one)', () => {
    const pacing = new MarkPacing(markPacingBounds(32));
    expect(pacing.ahead).toBe(8);
    expect(pacing.markPermits(32)).toBe(40);
    expect(pacing.markPermits(0)).toBe(8);
  });

  it('grows when a slot is free while records wait for a mark permit, up to twice the slots', () => {
    const pacing = new MarkPacing(markPacingBounds(2));
    expect(pacing.check(1, 0)).toBe(false); // nobody waits for a mark
    expect(pacing.check(0, 3)).toBe(false); // no slot free: the slots are the bottleneck
    expect(pacing.check(1, 3)).toBe(true);
    expect(pacing.ahead).toBe(2);
    expect(pacing.check(1, 3)).toBe(true);
    expect(pacing.check(1, 3)).toBe(true);
    expect(pacing.ahead).toBe(4);
    expect(pacing.check(1, 3)).toBe(false);
  });

  it('wants one fewer when a committed mark queues for a slot behind the buffer or more, made once it leaves every permit held within the permits', () => {
    const pacing = new MarkPacing({ initial: 5, min: 1, max: 10, buffer: 2 });
    pacing.queued(1); // fewer than the buffer wait: nothing wanted
    expect(pacing.settle(0, 0)).toBe(false);
    pacing.queued(2);
    pacing.queued(3);
    // 5 permits held, none free beyond them: no shrink fits yet.
    expect(pacing.settle(5, 0)).toBe(false);
    expect(pacing.ahead).toBe(5);
    // A permit coming back is taken by the first shrink instead of the next record waiting.
    expect(pacing.giveBack(5, 0)).toBe(true);
    expect(pacing.ahead).toBe(4);
    // With room to spare, the second one is made at once.
    expect(pacing.settle(2, 0)).toBe(true);
    expect(pacing.ahead).toBe(3);
    expect(pacing.settle(0, 0)).toBe(false);
  });

  it('never wants fewer than its minimum, and a starved slot drops the shrinks asked for', () => {
    const low = new MarkPacing({ initial: 2, min: 1, max: 10, buffer: 1 });
    low.queued(5);
    low.queued(5);
    expect(low.settle(0, 0)).toBe(true);
    expect(low.ahead).toBe(1);
    const pacing = new MarkPacing({ initial: 4, min: 1, max: 10, buffer: 1 });
    pacing.queued(3);
    pacing.queued(3);
    expect(pacing.check(1, 1)).toBe(true);
    expect(pacing.settle(0, 0)).toBe(false);
    expect(pacing.ahead).toBe(5);
  });

  it('settles where the marks keep up: alternating starved slots and queued marks hold it within a step', () => {
    const pacing = new MarkPacing(markPacingBounds(16));
    for (let i = 0; i < 100; i += 1) {
      pacing.check(1, 2);
      pacing.queued(1);
      pacing.settle(0, 0);
    }
    const settled = pacing.ahead;
    pacing.check(1, 2);
    expect(Math.abs(pacing.ahead - settled)).toBeLessThanOrEqual(1);
  });

  it('refuses bounds that make no sense', () => {
    expect(() => new MarkPacing({ initial: 0, min: 1, max: 2, buffer: 1 })).toThrow(RangeError);
    expect(() => new MarkPacing({ initial: 3, min: 1, max: 2, buffer: 1 })).toThrow(RangeError);
  });
});
