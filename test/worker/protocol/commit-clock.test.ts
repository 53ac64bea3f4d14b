import { describe, expect, it } from 'vitest';
import { CommitClock } from '../../../src/worker/protocol/commit-clock.ts';

describe('CommitClock', () => {
  it('arms a mark at once without a linger, and results within the interval of the last transaction', () => {
    const clock = new CommitClock(100);
    clock.ended(1_000);
    expect(clock.arm(false, 1_030)).toBe(70);
    clock.disarm();
    expect(clock.arm(true, 1_030)).toBe(0);
  });

  it('with a linger, a mark soon after the last transaction waits for the rest of it, so the marks behind it share one transaction', () => {
    const clock = new CommitClock(100, 40);
    clock.ended(1_000);
    expect(clock.arm(true, 1_010)).toBe(30);
    // A second mark before it is due: the armed commit is due as soon, nothing new to arm.
    expect(clock.arm(true, 1_020)).toBeUndefined();
  });

  it('with a linger, a mark after a quiet spell longer than it commits at once (a quiet partition pays nothing)', () => {
    const clock = new CommitClock(100, 40);
    clock.ended(1_000);
    expect(clock.arm(true, 1_050)).toBe(0);
    const fresh = new CommitClock(100, 40);
    expect(fresh.arm(true, 5)).toBe(0);
  });

  it('a mark armed with its linger moves an armed results commit earlier, never later', () => {
    const clock = new CommitClock(100, 40);
    clock.ended(1_000);
    expect(clock.arm(false, 1_010)).toBe(90);
    expect(clock.arm(true, 1_010)).toBe(30);
    clock.disarm();
    expect(clock.arm(true, 1_010)).toBe(30);
    expect(clock.arm(false, 1_010)).toBeUndefined();
  });
});
