import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedLabel, createMetrics, REFUSAL_SCOPES, ROUTE_LABEL_MAX_REGIONS, routeLabel, toMicros } from '../../src/metrics/metrics.ts';
import { PAUSE_REASONS } from '../../src/worker/send/service-gate.ts';

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
    const labels = { account: 'default', region: 'CN', upstream: 'u' };
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
    expect(gauge.values.map((v) => v.labels.reason).sort()).toEqual([...PAUSE_REASONS, 'spend_cap', 'shutdown'].sort());
    expect(gauge.values.every((v) => v.value === 0)).toBe(true);
  });
});

describe('BoundedLabel', () => {
  it('passes the first N distinct values through and folds the rest into "other"', () => {
    const label = new BoundedLabel(2);
    expect([label.value('a'), label.value('b'), label.value('c'), label.value('a')]).toEqual(['a', 'b', 'other', 'a']);
  });
});

describe('routeLabel', () => {
  it.each([
    [['AU'], 'AU'],
    [['NZ', 'AU'], 'AU+NZ'],
    [['NZ', 'AU', 'NZ'], 'AU+NZ'],
    [['US', 'GB', 'DE', 'FR', 'JP', 'SG', 'HK', 'TW'], 'DE+FR+GB+HK+JP+SG+TW+US'],
    [['US', 'GB', 'DE', 'FR', 'JP', 'SG', 'HK', 'TW', 'AU'], 'AU+DE+FR+GB+HK+JP+SG+TW+…'],
    [[], 'none'],
  ])('%j → %s', (regions, label) => {
    expect(routeLabel(regions)).toBe(label);
  });

  it('is the same label for the same set in any order, and names at most 8 regions (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.stringMatching(/^[A-Z]{2}$/), { maxLength: 40 }), (regions) => {
        const label = routeLabel(regions);
        expect(routeLabel([...regions].reverse())).toBe(label);
        const named = label.split('+').filter((part) => part !== '…');
        expect(named.length).toBeLessThanOrEqual(ROUTE_LABEL_MAX_REGIONS);
        expect(label.endsWith('+…')).toBe(regions.length > ROUTE_LABEL_MAX_REGIONS);
        expect(label.length).toBeLessThanOrEqual(ROUTE_LABEL_MAX_REGIONS * 3 + 1);
      }),
    );
  });
});

describe('route pause, refusal and funds-ceiling metrics', () => {
  it('a paused route is one series, set to when it was paused, and gone when it is removed', async () => {
    const metrics = createMetrics();
    metrics.routePausedSince.set({ account: 'default', operation: 'text', region: routeLabel(['AU']) }, 1_700_000_000);
    metrics.routePausedSince.set({ account: 'default', operation: 'voice', region: routeLabel(['NZ', 'AU']) }, 1_700_000_060);
    metrics.pausedRoutes.set({ account: 'default' }, 2);
    expect((await metrics.routePausedSince.get()).values.map((v) => [v.labels, v.value])).toEqual([
      [{ account: 'default', operation: 'text', region: 'AU' }, 1_700_000_000],
      [{ account: 'default', operation: 'voice', region: 'AU+NZ' }, 1_700_000_060],
    ]);
    metrics.routePausedSince.remove({ account: 'default', operation: 'text', region: 'AU' });
    metrics.pausedRoutes.set({ account: 'default' }, 1);
    expect((await metrics.routePausedSince.get()).values.map((v) => v.labels)).toEqual([{ account: 'default', operation: 'voice', region: 'AU+NZ' }]);
    const exposition = await metrics.registry.metrics();
    expect(exposition).toContain('sms_worker_route_paused_since_timestamp_seconds{account="default",operation="voice",region="AU+NZ"} 1700000060');
    expect(exposition).not.toContain('region="AU"}');
    expect(exposition).toContain('sms_worker_paused_routes{account="default"} 1');
  });

  it('refusals are counted by code and scope; codes beyond 20 distinct ones fold into "other"', async () => {
    const metrics = createMetrics();
    metrics.refusals.inc({ account: 'default', code: '101301', scope: 'route' });
    metrics.refusals.inc({ account: 'default', code: '101301', scope: 'route' });
    metrics.refusals.inc({ account: 'default', code: '105400', scope: 'command' });
    metrics.refusals.inc({ account: 'default', code: 'PROVIDER_HTTP_401', scope: 'account' });
    for (let i = 0; i < 100; i += 1) metrics.refusals.inc({ account: 'default', code: `9${String(i).padStart(5, '0')}`, scope: 'account' });
    const values = (await metrics.refusals.get()).values;
    const count = (code: string, scope: string): number | undefined => values.find((v) => v.labels.code === code && v.labels.scope === scope)?.value;
    expect(count('101301', 'route')).toBe(2);
    expect(count('105400', 'command')).toBe(1);
    expect(count('PROVIDER_HTTP_401', 'account')).toBe(1);
    // 3 codes seen first, then 17 more pass; the other 83 are one "other" series.
    expect(new Set(values.map((v) => v.labels.code)).size).toBe(21);
    expect(count('other', 'account')).toBe(83);
    expect(values.every((v) => (REFUSAL_SCOPES as readonly string[]).includes(String(v.labels.scope)))).toBe(true);
  });
});
