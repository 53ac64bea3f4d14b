import { describe, expect, it } from 'vitest';
import { SlidingCount } from '../../../src/worker/guard/sliding-count.ts';

const MINUTE = { windowMs: 60_000, buckets: 6, trailingMs: 3_600_000 };

describe('SlidingCount', () => {
  it('counts the events of the last window, forgetting them between one window and one window + one bucket later', () => {
    const c = new SlidingCount(MINUTE, 0);
    c.add(0, 5);
    c.add(30_000, 2);
    expect(c.count(59_999)).toBe(7);
    // Never early: the first bucket is still counted until a full window and a bucket have passed.
    expect(c.count(69_999)).toBe(7);
    expect(c.count(70_000)).toBe(2);
    expect(c.count(100_000)).toBe(0);
  });

  it('a clock that steps back drops nothing', () => {
    const c = new SlidingCount(MINUTE, 50_000);
    c.add(50_000);
    expect(c.count(10_000)).toBe(1);
  });

  it('the trailing mean follows the window count, sampled each bucket, and decays over long idleness', () => {
    const c = new SlidingCount({ windowMs: 60_000, buckets: 6, trailingMs: 60_000 }, 0);
    expect(c.mean(0)).toBe(0);
    for (let t = 0; t < 600_000; t += 1_000) c.add(t); // 60 per minute for 10 minutes
    expect(c.mean(600_000)).toBeGreaterThan(50);
    expect(c.mean(600_000)).toBeLessThanOrEqual(70);
    expect(c.mean(600_000 + 3_600_000)).toBeLessThan(1);
  });
});
