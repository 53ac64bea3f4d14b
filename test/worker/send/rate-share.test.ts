import { describe, expect, it } from 'vitest';
import { rateShare } from '../../../src/worker/send/rate-share.ts';

describe('rateShare', () => {
  it('gives a process the share of the limit its partitions are of the topic', () => {
    expect(rateShare({ limitPerSecond: 120, ownedPartitions: 12, totalPartitions: 12 })).toBe(120);
    expect(rateShare({ limitPerSecond: 120, ownedPartitions: 6, totalPartitions: 12 })).toBe(60);
    expect(rateShare({ limitPerSecond: 120, ownedPartitions: 1, totalPartitions: 12 })).toBe(10);
  });

  it('adds up to the deployment-wide limit over any split of the partitions', () => {
    for (const split of [[12], [6, 6], [4, 4, 4], [3, 3, 3, 3], [5, 4, 3], [7, 5], [2, 2, 2, 2, 2, 1, 1]]) {
      const sum = split.reduce((total, owned) => total + rateShare({ limitPerSecond: 250, ownedPartitions: owned, totalPartitions: 12 }), 0);
      expect(sum).toBeCloseTo(250, 9);
    }
  });

  it('keeps one partition’s share for a process that owns none (never 0, which would mean no limit)', () => {
    expect(rateShare({ limitPerSecond: 120, ownedPartitions: 0, totalPartitions: 12 })).toBe(10);
  });

  it('caps the share at the whole limit when the topic grew past the partitions known at start-up', () => {
    expect(rateShare({ limitPerSecond: 120, ownedPartitions: 16, totalPartitions: 12 })).toBe(120);
  });

  it('refuses inputs that cannot be a share', () => {
    expect(() => rateShare({ limitPerSecond: 0, ownedPartitions: 1, totalPartitions: 12 })).toThrow(/limitPerSecond must be > 0/);
    expect(() => rateShare({ limitPerSecond: 10, ownedPartitions: 1, totalPartitions: 0 })).toThrow(/totalPartitions must be an integer ≥ 1/);
    expect(() => rateShare({ limitPerSecond: 10, ownedPartitions: -1, totalPartitions: 12 })).toThrow(/ownedPartitions must be an integer ≥ 0/);
    expect(() => rateShare({ limitPerSecond: 10, ownedPartitions: 1.5, totalPartitions: 12 })).toThrow(/ownedPartitions/);
  });
});
