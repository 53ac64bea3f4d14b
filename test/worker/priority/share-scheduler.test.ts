import { describe, expect, it } from 'vitest';
import { ShareScheduler } from '../../../src/worker/priority/share-scheduler.ts';

describe('ShareScheduler', () => {
  it('serves whoever waits alone, and nobody when nobody waits', () => {
    const s = new ShareScheduler(0.1);
    expect(s.pick(true, false)).toBe('high');
    expect(s.pick(false, true)).toBe('normal');
    expect(s.pick(false, false)).toBeUndefined();
  });

  it('under contention serves high first and normal its minimum share (0.1: every tenth grant)', () => {
    const s = new ShareScheduler(0.1);
    const picks = Array.from({ length: 1_100 }, () => s.pick(true, true));
    const normal = picks.filter((p) => p === 'normal').length;
    expect(picks[0]).toBe('high');
    expect(normal).toBe(110);
    expect(picks[9]).toBe('normal');
    // Never more than nine high grants in a row while normal waits.
    expect(picks.join(',')).not.toMatch(/(high,){10}/);
  });

  it('with a share of 0, normal waits for as long as high has callers', () => {
    const s = new ShareScheduler(0);
    expect(Array.from({ length: 1_000 }, () => s.pick(true, true)).every((p) => p === 'high')).toBe(true);
    expect(s.pick(false, true)).toBe('normal');
  });

  it('banks no credit while normal is not waiting: a quiet spell does not later hold high back', () => {
    const s = new ShareScheduler(0.5);
    expect(s.pick(true, true)).toBe('high');
    expect(s.pick(true, false)).toBe('high'); // normal stopped waiting: the count starts afresh
    expect(s.pick(true, true)).toBe('high');
    expect(s.pick(true, true)).toBe('normal');
  });

  it('refuses a share outside 0–0.5', () => {
    expect(() => new ShareScheduler(0.6)).toThrow(RangeError);
    expect(() => new ShareScheduler(-0.1)).toThrow(RangeError);
    expect(() => new ShareScheduler(Number.NaN)).toThrow(RangeError);
  });
});
