import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedLabel, createMetrics, toMicros } from '../../src/metrics/metrics.ts';
import { PAUSE_REASONS } from '../../src/worker/service-gate.ts';

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

  it.each(['', 'abc', '1e3', '0,05', '.5', 'NaN', 'Infinity', '9'.repeat(400), `0.${'1'.repeat(400)}`, '9007199254.740992', '-9007199254.740992'])(
    'refuses %j',
    (amount) => {
      expect(toMicros(amount)).toBeUndefined();
    },
  );

  it('reads the largest amount whose micro-units are a safe integer', () => {
    expect(toMicros('9007199254.740991')).toBe(9_007_199_254_740_991n);
  });

  it('for any string, gives undefined or micro-units that convert to a finite, exact Number (property)', () => {
    const amounts = fc.oneof(fc.string(), fc.stringMatching(/^-?\d{1,40}(\.\d{1,40})?$/), fc.bigInt({ min: 0n, max: 10n ** 420n }).map(String));
    fc.assert(
      fc.property(amounts, (amount) => {
        const micros = toMicros(amount);
        if (micros !== undefined) expect(Number.isSafeInteger(Number(micros))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });
});

describe('charged-amount metric', () => {
  it('never throws, whatever the price string; counts only sane non-negative amounts', async () => {
    const metrics = createMetrics();
    const labels = { region: 'CN', upstream: 'u' };
    expect(metrics.countCharge(labels, '9'.repeat(400))).toBe(false);
    expect(metrics.countCharge(labels, '-1')).toBe(false);
    expect(metrics.countCharge(labels, 'NaN')).toBe(false);
    expect(metrics.countCharge(labels, '0.045000')).toBe(true);
    fc.assert(
      fc.property(fc.string(), (price) => {
        metrics.countCharge(labels, price);
      }),
    );
    const counted = await metrics.chargedMicros.get();
    expect(counted.values.find((v) => v.labels.region === 'CN')?.value).toBeGreaterThanOrEqual(45_000);
  });
});

describe('paused gauge', () => {
  it('has a series for every gate reason and the shutdown, all 0 at start', async () => {
    const gauge = await createMetrics().paused.get();
    expect(gauge.values.map((v) => v.labels.reason).sort()).toEqual([...PAUSE_REASONS, 'shutdown'].sort());
    expect(gauge.values.every((v) => v.value === 0)).toBe(true);
  });
});

describe('BoundedLabel', () => {
  it('passes the first N distinct values through and folds the rest into "other"', () => {
    const label = new BoundedLabel(2);
    expect([label.value('a'), label.value('b'), label.value('c'), label.value('a')]).toEqual(['a', 'b', 'other', 'a']);
  });
});
