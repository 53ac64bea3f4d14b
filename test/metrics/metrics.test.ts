import { describe, expect, it } from 'vitest';
import { BoundedLabel, toMicros } from '../../src/metrics/metrics.ts';

describe('toMicros', () => {
  it.each([
    ['0.045000', 45_000n],
    ['0.05', 50_000n],
    ['12', 12_000_000n],
    ['1234567.000001', 1_234_567_000_001n],
    ['-0.100000', -100_000n],
    ['0.1234569', 123_456n],
  ])('reads %s exactly as %s micro-units', (amount, micros) => {
    expect(toMicros(amount)).toBe(micros);
  });

  it.each(['', 'abc', '1e3', '0,05', '.5'])('refuses %j', (amount) => {
    expect(toMicros(amount)).toBeUndefined();
  });
});

describe('BoundedLabel', () => {
  it('passes the first N distinct values through and folds the rest into "other"', () => {
    const label = new BoundedLabel(2);
    expect([label.value('a'), label.value('b'), label.value('c'), label.value('a')]).toEqual(['a', 'b', 'other', 'a']);
  });
});
