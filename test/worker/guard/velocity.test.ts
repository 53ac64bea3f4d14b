import { describe, expect, it } from 'vitest';
import type { Destination } from '../../../src/contracts/recipients.ts';
import {
  BYTES_PER_TRACKED_KEY,
  DEFAULT_VELOCITY_SETTINGS,
  destinationPrefix,
  velocityEnabled,
  VelocityGuard,
  type VelocitySettings,
} from '../../../src/worker/guard/velocity.ts';

const dest = (national: string, region = 'GB', callingCode = '44', field = 'operation.to[0]'): Destination => ({
  field,
  given: `+${callingCode}${national}`,
  region,
  callingCode,
  national,
});

function settings(
  over: Partial<VelocitySettings> & { prefixMinute?: number; prefixDay?: number; regionMinute?: number; regionDay?: number },
): VelocitySettings {
  const { prefixMinute = 0, prefixDay = 0, regionMinute = 0, regionDay = 0, ...rest } = over;
  return {
    ...DEFAULT_VELOCITY_SETTINGS,
    limits: { prefix: { minute: prefixMinute, day: prefixDay }, region: { minute: regionMinute, day: regionDay } },
    ...rest,
  };
}

/** Screens and counts one recipient at a time, as the worker does for one-recipient commands. */
function send(guard: VelocityGuard, d: Destination, now: number) {
  const [refusal] = guard.screen([d], now);
  if (refusal === undefined) guard.commit([d], now);
  return refusal;
}

describe('velocity limits (pure)', () => {
  it('a prefix is the calling code and the first N national digits', () => {
    expect(destinationPrefix('44', '7700900123', 3)).toBe('+44 770');
    expect(destinationPrefix('44', '7700900123', 0)).toBe('+44');
    expect(destinationPrefix('1', '41', 5)).toBe('+1 41');
  });

  it('off unless a limit is set', () => {
    expect(velocityEnabled(DEFAULT_VELOCITY_SETTINGS)).toBe(false);
    expect(velocityEnabled(settings({ regionDay: 5 }))).toBe(true);
  });

  it('per prefix per minute: the burst is cut at the limit, the prefix is blocked for blockMs, other prefixes flow', () => {
    const guard = new VelocityGuard(settings({ prefixMinute: 3, blockMs: 600_000 }));
    const t = 1_000_000;
    expect([0, 1, 2].map((i) => send(guard, dest('7700900000'), t + i))).toEqual([undefined, undefined, undefined]);
    const over = send(guard, dest('7700900001'), t + 3);
    expect(over).toMatchObject({
      prefix: '+44 770',
      region: 'GB',
      kind: 'prefix',
      rule: 'VELOCITY_PREFIX_PER_MINUTE',
      limit: 3,
      blockedUntil: t + 3 + 600_000,
      newlyBlocked: true,
    });
    // Logged once: the next refusals of the same block are not new.
    expect(send(guard, dest('7700900002'), t + 4)).toMatchObject({ newlyBlocked: false });
    // Another prefix of the same region is not affected.
    expect(send(guard, dest('7800900000'), t + 5)).toBeUndefined();
    expect(guard.blocked(t + 10)).toEqual([{ kind: 'prefix', region: 'GB' }]);
    // Long after the minute, the block still holds until blockMs; then the prefix flows again.
    expect(send(guard, dest('7700900003'), t + 120_000)).toMatchObject({ newlyBlocked: false });
    expect(send(guard, dest('7700900003'), t + 3 + 600_000)).toBeUndefined();
    expect(guard.blocked(t + 700_000)).toEqual([]);
  });

  it('per region per day, and recipients of one command count against each other', () => {
    const guard = new VelocityGuard(settings({ regionDay: 2 }));
    const refusals = guard.screen(
      [dest('7700900000', 'GB', '44', 'operation.to[0]'), dest('7800900000', 'GB', '44', 'operation.to[1]'), dest('7900900000', 'GB', '44', 'operation.to[2]')],
      0,
    );
    expect(refusals.map((r) => r?.rule)).toEqual([undefined, undefined, 'VELOCITY_REGION_PER_DAY']);
    expect(refusals[2]).toMatchObject({ field: 'operation.to[2]', kind: 'region', limit: 2, deploymentLimit: 2 });
  });

  it('screening counts nothing: only committed recipients count', () => {
    const guard = new VelocityGuard(settings({ prefixMinute: 1 }));
    expect(guard.screen([dest('7700900000')], 0)).toEqual([undefined]);
    expect(guard.screen([dest('7700900000')], 1)).toEqual([undefined]);
    guard.commit([dest('7700900000')], 2);
    expect(guard.screen([dest('7700900000')], 3)[0]).toMatchObject({ rule: 'VELOCITY_PREFIX_PER_MINUTE' });
  });

  it("deployment-wide: this process applies its partitions' share, rounded down, at least 1", () => {
    const guard = new VelocityGuard(settings({ prefixMinute: 10 }));
    guard.setShare(3 / 12);
    expect([0, 1].map((i) => send(guard, dest('7700900000'), i))).toEqual([undefined, undefined]);
    expect(send(guard, dest('7700900000'), 2)).toMatchObject({ limit: 2, deploymentLimit: 10 });
    const tiny = new VelocityGuard(settings({ prefixMinute: 1 }));
    tiny.setShare(1 / 12);
    expect(send(tiny, dest('7700900000'), 0)).toBeUndefined();
    expect(() => tiny.setShare(0)).toThrow(RangeError);
  });

  it('dynamic: max(floor, multiple × trailing mean): a key with steady traffic gets a limit above its floor, and a burst over it is cut', () => {
    const guard = new VelocityGuard(settings({ prefixMinute: 30, dynamicMultiple: 3 }));
    // 20 per minute for two hours (one every 3 s): under the floor of 30; the mean rises to ~20.
    let t = 0;
    for (; t < 2 * 3_600_000; t += 3_000) expect(send(guard, dest('7700900000'), t)).toBeUndefined();
    // A burst: up to ~3 × 20 per minute in all passes (well above the floor), then it is blocked.
    let passed = 0;
    let refusal;
    for (let i = 0; i < 200 && refusal === undefined; i += 1) {
      refusal = send(guard, dest('7700900000'), t + i);
      if (refusal === undefined) passed += 1;
    }
    expect(refusal).toMatchObject({ rule: 'VELOCITY_PREFIX_PER_MINUTE' });
    expect(refusal?.limit).toBeGreaterThanOrEqual(45);
    expect(refusal?.limit).toBeLessThanOrEqual(75);
    expect(passed).toBeGreaterThan(30);
    expect(passed).toBeLessThan(refusal?.limit ?? 0);
  });

  it('bounded: at most maxTrackedKeys keys, the least recently seen forgotten first', () => {
    const guard = new VelocityGuard(settings({ prefixMinute: 1, prefixDigits: 4, maxTrackedKeys: 100 }));
    for (let i = 0; i < 150; i += 1) send(guard, dest(`7${String(i).padStart(3, '0')}000000`, 'GB', '44'), i);
    expect(guard.trackedKeys).toBe(100);
    // The first prefix was forgotten: it may send once more; a recent one may not.
    expect(send(guard, dest('7000000000'), 200)).toBeUndefined();
    expect(send(guard, dest('7149000000'), 201)).toMatchObject({ rule: 'VELOCITY_PREFIX_PER_MINUTE' });
    expect(BYTES_PER_TRACKED_KEY * DEFAULT_VELOCITY_SETTINGS.maxTrackedKeys).toBeLessThanOrEqual(16 * 1_048_576);
  });
});
