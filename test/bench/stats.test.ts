import { describe, expect, it } from 'vitest';
import { median, p99BySecond } from '../../bench/lib/stats.ts';

describe('median', () => {
  it('is the middle value, the mean of the two middle ones for an even count, NaN for none', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('p99BySecond', () => {
  it('buckets commands by the second of their publish time and gives each second its p99 time to send', () => {
    const publishedAt = new Map([
      ['a', 1_000],
      ['b', 1_500],
      ['c', 2_100],
      ['d', 2_900],
      ['e', 4_200],
    ]);
    const firstRequest = new Map([
      ['a', 1_010],
      ['b', 1_900],
      ['c', 2_150],
      ['d', 2_920],
    ]);
    // Second 0: 10 and 400 ms; second 1: 50 and 20 ms; second 2: nothing published; e (second 3) never reached the service.
    expect(p99BySecond(publishedAt, firstRequest, 1_000, 4)).toEqual([400, 50, Number.NaN, Number.NaN]);
  });

  it('leaves out commands published before the window or after its last second', () => {
    const publishedAt = new Map([
      ['early', 900],
      ['in', 1_200],
      ['late', 3_000],
    ]);
    const firstRequest = new Map([
      ['early', 5_000],
      ['in', 1_230],
      ['late', 9_000],
    ]);
    expect(p99BySecond(publishedAt, firstRequest, 1_000, 2)).toEqual([30, Number.NaN]);
  });
});
