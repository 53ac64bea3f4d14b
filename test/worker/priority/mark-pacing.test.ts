import { describe, expect, it } from 'vitest';
import { MarkPacing, markPacingBounds } from '../../../src/worker/priority/mark-pacing.ts';

describe('markPacingBounds', () => {
  it('paced: starts at a quarter of the slots, between 1 and twice the slots, a sixteenth of them as the buffer', () => {
    expect(markPacingBounds(64)).toEqual({ initial: 16, min: 1, max: 128, buffer: 4, shrinkAfterMs: 100 });
    expect(markPacingBounds(1)).toEqual({ initial: 1, min: 1, max: 2, buffer: 1, shrinkAfterMs: 100 });
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

  it('wants one fewer for every window the buffer or more stayed queued for a slot, made once it leaves every permit held within the permits', () => {
    const pacing = new MarkPacing({ initial: 5, min: 1, max: 10, buffer: 2, shrinkAfterMs: 100 });
    pacing.slotQueue(3, 0);
    pacing.slotQueue(3, 99);
    expect(pacing.settle(0, 0)).toBe(false); // not a whole window yet
    pacing.slotQueue(1, 120); // the queue drained below the buffer: the window starts again
    pacing.slotQueue(2, 130);
    pacing.slotQueue(2, 229);
    expect(pacing.settle(0, 0)).toBe(false);
    pacing.slotQueue(2, 230); // a window of excess: one fewer wanted
    pacing.slotQueue(2, 330); // another
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

  it('a batch of marks queued for a moment shrinks nothing', () => {
    const pacing = new MarkPacing({ initial: 5, min: 1, max: 10, buffer: 2, shrinkAfterMs: 100 });
    for (let t = 0; t < 1_000; t += 50) {
      pacing.slotQueue(6, t); // a partition's batch commits
      pacing.slotQueue(0, t + 40); // and is called
    }
    expect(pacing.settle(0, 0)).toBe(false);
    expect(pacing.ahead).toBe(5);
  });

  it('never wants fewer than its minimum, and a starved slot drops the shrinks asked for', () => {
    const low = new MarkPacing({ initial: 2, min: 1, max: 10, buffer: 1, shrinkAfterMs: 10 });
    for (let t = 0; t <= 100; t += 10) low.slotQueue(5, t);
    expect(low.settle(0, 0)).toBe(true);
    expect(low.ahead).toBe(1);
    const pacing = new MarkPacing({ initial: 4, min: 1, max: 10, buffer: 1, shrinkAfterMs: 10 });
    for (let t = 0; t <= 20; t += 10) pacing.slotQueue(3, t);
    expect(pacing.check(1, 1)).toBe(true);
    expect(pacing.settle(0, 0)).toBe(false);
    expect(pacing.ahead).toBe(5);
  });

  it('settles where the marks keep up: alternating starved slots and lasting queues hold it within a step', () => {
    const pacing = new MarkPacing(markPacingBounds(16));
    for (let t = 0; t < 10_000; t += 100) {
      pacing.check(1, 2);
      pacing.slotQueue(4, t);
      pacing.slotQueue(4, t + 100);
      pacing.settle(0, 0);
    }
    const settled = pacing.ahead;
    pacing.check(1, 2);
    expect(Math.abs(pacing.ahead - settled)).toBeLessThanOrEqual(1);
  });

  it('refuses bounds that make no sense', () => {
    expect(() => new MarkPacing({ initial: 0, min: 1, max: 2, buffer: 1, shrinkAfterMs: 1 })).toThrow(RangeError);
    expect(() => new MarkPacing({ initial: 3, min: 1, max: 2, buffer: 1, shrinkAfterMs: 1 })).toThrow(RangeError);
  });
});
