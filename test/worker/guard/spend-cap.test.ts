import { describe, expect, it } from 'vitest';
import type { MessageReport } from '../../../src/provider/types.ts';
import { MAX_UNPRICED_ENTRIES, SpendCap } from '../../../src/worker/guard/spend-cap.ts';
import { SpendWindow } from '../../../src/worker/guard/spend-window.ts';
import { formatMicros } from '../../../src/worker/guard/amounts.ts';

const HOUR = 3_600_000;
const report = (regionCode: string, price: string, messageCount = 1): MessageReport => ({
  id: 'm',
  to: '+1',
  regionCode,
  countryCode: '1',
  messageCount,
  status: 'Sent',
  upstream: 'u',
  price,
});
const fp = (regions: string[], costUnits = 1) => ({ operation: 'sms.message.send' as const, regions, costUnits });

describe('SpendWindow (pure)', () => {
  it('sums exactly in micro-units and forgets a bucket between one window and one window + one bucket later', () => {
    const w = new SpendWindow(HOUR, 60, 0);
    w.add(0, 100_000n);
    w.add(30 * 60_000, 50_000n);
    expect(w.total(HOUR - 1)).toBe(150_000n);
    expect(w.total(HOUR + 59_999)).toBe(150_000n);
    expect(w.total(HOUR + 60_000)).toBe(50_000n);
    const v = new SpendWindow(HOUR, 60, 0);
    v.add(0, 100_000n);
    v.add(30 * 60_000, 50_000n);
    // Room for 60_000: the first bucket must leave, at the end of its window and one bucket.
    expect(v.timeWhenAtMost(60_000n, HOUR)).toBe(HOUR + 60_000);
    expect(v.timeWhenAtMost(200_000n, HOUR)).toBe(HOUR);
  });
});

describe('SpendCap (pure)', () => {
  it('counts a send whose outcome stayed unknown before any price was known at the first price learned', () => {
    const cap = new SpendCap({ caps: { hour: '0.1', day: undefined }, hourMs: HOUR }, 0);
    // No price yet: the first send goes alone, with no estimate; its outcome stays unknown.
    const first = cap.admit(fp(['CN'], 2), 0);
    expect(first).toEqual({ kind: 'go', estimate: 0n });
    cap.reserve(0n);
    cap.settle(0n, 'maybe', 0, 2);
    const second = cap.admit(fp(['CN']), 1);
    expect(second).toEqual({ kind: 'go', estimate: 0n });
    cap.reserve(0n);
    cap.settle(0n, [report('CN', '0.030000')], 1);
    // The first send's two units at 0.03, and the second's 0.03: 0.09 of 0.1, no room for a third.
    expect(formatMicros(cap.spent('hour', 2))).toBe('0.090000');
    expect(cap.admit(fp(['CN']), 2).kind).toBe('wait');
  });

  it('counts an unknown-outcome send made while only zero prices are known at the first price above zero', () => {
    const cap = new SpendCap({ caps: { hour: '1', day: undefined }, hourMs: HOUR }, 0);
    // A free region's price is the only one known: a send to another region has no estimate.
    cap.reserve(0n);
    cap.settle(0n, [report('XX', '0.000000')], 0);
    for (let t = 1; t <= 5; t++) {
      const send = cap.admit(fp(['CN']), t);
      expect(send).toEqual({ kind: 'go', estimate: 0n });
      cap.reserve(0n);
      cap.settle(0n, 'maybe', t);
    }
    expect(cap.unpricedEntries).toBe(5);
    cap.reserve(0n);
    cap.settle(0n, [report('CN', '0.100000')], 10);
    // The five that may have been charged, at 0.1 each, and the one that told the price.
    expect(formatMicros(cap.spent('hour', 10))).toBe('0.600000');
  });

  it('counts each unknown-outcome send made before any price at its own time: out of the windows it has left', () => {
    const cap = new SpendCap({ caps: { hour: '100', day: '1000' }, hourMs: HOUR }, 0);
    const maybe = (atMs: number, units: number): void => {
      cap.reserve(0n);
      cap.settle(0n, 'maybe', atMs, units);
    };
    maybe(0, 5); // 27 h before the first price: past the day too
    maybe(3 * HOUR, 2); // 24 h before: past the hour, within the day
    maybe(26 * HOUR, 1); // 1 h before: within both
    cap.reserve(0n);
    const charged = cap.settle(0n, [report('GB', '0.030000')], 27 * HOUR);
    // The 1-unit send and the answered one in the hour; in the day, the 2-unit send as well.
    expect(formatMicros(cap.spent('hour', 27 * HOUR))).toBe('0.060000');
    expect(formatMicros(cap.spent('day', 27 * HOUR))).toBe('0.120000');
    expect(formatMicros(charged)).toBe('0.120000');
    // Each leaves the hour at its own time, as ordinary spend does: the 1-unit send before the answered one.
    expect(formatMicros(cap.spent('hour', 27 * HOUR + 60_000))).toBe('0.030000');
    expect(cap.unpricedEntries).toBe(0);
  });

  it('keeps at most MAX_UNPRICED_ENTRIES unknown-outcome sends before any price, and loses none of their units', () => {
    const cap = new SpendCap({ caps: { hour: undefined, day: '1000' }, hourMs: HOUR }, 0);
    const sends = 1_200;
    expect(MAX_UNPRICED_ENTRIES).toBeLessThan(sends);
    let units = 0;
    for (let i = 0; i < sends; i += 1) {
      cap.reserve(0n);
      cap.settle(0n, 'maybe', i * 1_000, 1 + (i % 3));
      units += 1 + (i % 3);
      expect(cap.unpricedEntries).toBeLessThanOrEqual(MAX_UNPRICED_ENTRIES);
    }
    expect(cap.unpricedEntries).toBe(MAX_UNPRICED_ENTRIES);
    const now = sends * 1_000;
    cap.reserve(0n);
    cap.settle(0n, [report('GB', '0.010000'), report('DE', '0.050000')], now);
    // Every unit at the highest unit price (0.05), besides what the answer charged: never less.
    const atLeast = BigInt(units) * 50_000n + 60_000n;
    expect(cap.spent('day', now)).toBeGreaterThanOrEqual(atLeast);
    expect(cap.spent('hour', now)).toBeGreaterThanOrEqual(atLeast);
    expect(cap.unpricedEntries).toBe(0);
  });

  it('sending goes on before the cap and waits at it, until the window has room', () => {
    const cap = new SpendCap({ caps: { hour: '1', day: undefined }, hourMs: HOUR }, 0);
    let t = 0;
    let sent = 0;
    for (;;) {
      const a = cap.admit(fp(['GB']), t);
      if (a.kind === 'wait') {
        expect(a).toMatchObject({ window: 'hour' });
        expect(a.untilMs).toBeGreaterThanOrEqual(HOUR);
        break;
      }
      cap.reserve(a.estimate);
      cap.settle(a.estimate, [report('GB', '0.300000')], t);
      sent += 1;
      t += 1_000;
    }
    // 0.3 each: three fit under 1, the fourth would overshoot. Charged exactly, never as floats.
    expect(sent).toBe(3);
    expect(formatMicros(cap.spent('hour', t))).toBe('0.900000');
    const wait = cap.admit(fp(['GB']), t);
    expect(wait.kind === 'wait' && wait.untilMs !== undefined && cap.admit(fp(['GB']), wait.untilMs).kind).toBe('go');
  });

  it('a wave in flight cannot overshoot: reservations of its estimates count until they settle', () => {
    const cap = new SpendCap({ caps: { hour: '1', day: undefined }, hourMs: HOUR }, 0);
    const first = cap.admit(fp(['GB']), 0);
    expect(first).toEqual({ kind: 'go', estimate: 0n });
    cap.reserve(0n);
    // No price known yet and one send in flight: the next waits for it to settle.
    expect(cap.admit(fp(['GB']), 1)).toEqual({ kind: 'wait', window: 'hour', untilMs: undefined, priceUnknown: true });
    cap.settle(0n, [report('GB', '0.300000')], 2);
    // Now GB costs ~0.3: two more reserve 0.6; a third in flight would make 1.2 > 1.
    for (let i = 0; i < 2; i += 1) {
      const a = cap.admit(fp(['GB']), 3);
      expect(a).toEqual({ kind: 'go', estimate: 300_000n });
      cap.reserve(300_000n);
    }
    expect(cap.admit(fp(['GB']), 3).kind).toBe('wait');
    expect(cap.reserved).toBe(600_000n);
  });

  it('estimates per region from recent unit prices; an unpriced region at the highest seen anywhere; units multiply', () => {
    const cap = new SpendCap({ caps: { hour: '100', day: undefined }, hourMs: HOUR }, 0);
    cap.reserve(0n);
    cap.settle(0n, [report('CN', '0.045000'), report('DE', '1.200000', 2)], 0);
    expect(cap.estimate(fp(['CN']))).toBe(45_000n);
    expect(cap.estimate(fp(['DE']))).toBe(600_000n);
    expect(cap.estimate(fp(['XX']))).toBe(600_000n);
    expect(cap.estimate(fp(['CN', 'DE'], 3))).toBe(1_800_000n);
  });

  it('an outcome unknown counts its estimate; one surely not sent counts nothing', () => {
    const cap = new SpendCap({ caps: { hour: '10', day: '20' }, hourMs: HOUR }, 0);
    cap.reserve(0n);
    cap.settle(0n, [report('GB', '0.500000')], 0);
    cap.reserve(500_000n);
    cap.settle(500_000n, 'maybe', 1);
    cap.reserve(500_000n);
    cap.settle(500_000n, 'none', 2);
    expect(cap.spent('hour', 3)).toBe(1_000_000n);
    expect(cap.spent('day', 3)).toBe(1_000_000n);
    expect(cap.reserved).toBe(0n);
  });

  it("deployment-wide: this process's cap is its partitions' share, rounded down", () => {
    const cap = new SpendCap({ caps: { hour: '10', day: undefined }, hourMs: HOUR }, 0);
    cap.setShare(1, 3);
    expect(cap.cap('hour')).toBe(3_333_333n);
    expect(cap.cap('day')).toBeUndefined();
  });

  it('a command estimated above the whole cap goes alone: when nothing else is spent or in flight in the window', () => {
    const cap = new SpendCap({ caps: { hour: '1', day: undefined }, hourMs: HOUR }, 0);
    cap.reserve(0n);
    cap.settle(0n, [report('DE', '0.600000')], 0);
    // Spent 0.6: a 3-unit DE command (1.8) waits until that spend has left the window…
    const wait = cap.admit(fp(['DE'], 3), 1);
    expect(wait).toEqual({ kind: 'wait', window: 'hour', untilMs: HOUR + 60_000 });
    // …then goes alone, and nothing goes beside it.
    const alone = cap.admit(fp(['DE'], 3), HOUR + 60_000);
    expect(alone).toEqual({ kind: 'go', estimate: 1_800_000n });
    cap.reserve(1_800_000n);
    expect(cap.admit(fp(['DE'], 3), HOUR + 60_001)).toEqual({ kind: 'wait', window: 'hour', untilMs: undefined });
  });

  it('the day window is 24 of the configured hours', () => {
    const cap = new SpendCap({ caps: { hour: undefined, day: '1' }, hourMs: 1_000 }, 0);
    cap.reserve(0n);
    cap.settle(0n, [report('GB', '1.000000')], 0);
    const wait = cap.admit(fp(['GB']), 10);
    expect(wait).toMatchObject({ kind: 'wait', window: 'day' });
    expect(wait.kind === 'wait' && wait.untilMs).toBe(25_000);
  });
});
