import { describe, expect, it } from 'vitest';
import { RateLimiter } from '../../src/worker/rate-limiter.ts';

/** A clock the test moves by hand. */
function manualClock(start: number): { now: () => number; set: (t: number) => void; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, set: (value) => (t = value), advance: (ms) => (t += ms) };
}

describe('RateLimiter', () => {
  it('is disabled at 0/s: every reservation is free', async () => {
    const clock = manualClock(0);
    const limiter = new RateLimiter(0, clock.now);
    expect(limiter.enabled).toBe(false);
    expect(Array.from({ length: 1_000 }, () => limiter.reserve())).toEqual(Array.from({ length: 1_000 }, () => 0));
    await expect(limiter.take()).resolves.toBeUndefined();
  });

  it("allows a burst of one second's worth after idleness, then spaces reservations 1000/R ms apart", () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(10, clock.now);
    expect(limiter.enabled).toBe(true);
    const burst = Array.from({ length: 10 }, () => limiter.reserve());
    expect(burst).toEqual(Array.from({ length: 10 }, () => 0));
    const queued = Array.from({ length: 4 }, () => limiter.reserve());
    expect(queued).toEqual([100, 200, 300, 400]);
  });

  it('spaces reservations 1000/R ms apart at other rates, fractional intervals included', () => {
    for (const perSecond of [4, 3, 250]) {
      const clock = manualClock(1_000_000);
      const limiter = new RateLimiter(perSecond, clock.now);
      for (let i = 0; i < perSecond; i += 1) limiter.reserve();
      const waits = Array.from({ length: 5 }, () => limiter.reserve());
      const interval = 1000 / perSecond;
      waits.forEach((wait, i) => expect(wait).toBeCloseTo(interval * (i + 1), 9));
    }
  });

  it('a caller arriving every 1000/R ms never waits; the burst allowance refills only with idle time', () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(10, clock.now);
    for (let i = 0; i < 50; i += 1) {
      expect(limiter.reserve()).toBe(0);
      clock.advance(100);
    }
    // Used the burst up at once: half a second later, half a second's worth is free again.
    const drained = manualClock(60_000);
    const burstLimiter = new RateLimiter(10, drained.now);
    for (let i = 0; i < 10; i += 1) burstLimiter.reserve();
    drained.advance(500);
    expect(Array.from({ length: 6 }, () => burstLimiter.reserve())).toEqual([0, 0, 0, 0, 0, 100]);
    // After a full second of idleness the whole burst is available again, and not more.
    drained.advance(10_000);
    const afterIdle = Array.from({ length: 11 }, () => burstLimiter.reserve());
    expect(afterIdle.slice(0, 10)).toEqual(Array.from({ length: 10 }, () => 0));
    expect(afterIdle[10]).toBe(100);
  });

  it('hands out slots first come, first served', () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(20, clock.now);
    for (let i = 0; i < 20; i += 1) limiter.reserve();
    // Callers arriving at different times: each one's slot (arrival + wait) comes after the previous one's.
    const slots: number[] = [];
    for (const gap of [0, 3, 0, 17, 1, 0, 40]) {
      clock.advance(gap);
      slots.push(clock.now() + limiter.reserve());
    }
    for (let i = 1; i < slots.length; i += 1) expect(slots[i]).toBeCloseTo((slots[i - 1] ?? 0) + 50, 9);
  });

  it('take() callers proceed in the order they asked', async () => {
    const clock = manualClock(60_000);
    // 500/s: 2 ms between slots, so the queued takes sleep only a few real milliseconds.
    const limiter = new RateLimiter(500, clock.now);
    for (let i = 0; i < 500; i += 1) limiter.reserve();
    const order: number[] = [];
    await Promise.all([0, 1, 2, 3, 4].map((i) => limiter.take().then(() => order.push(i))));
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('take() gives up when its signal is aborted while it waits for its slot', async () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(1, clock.now);
    limiter.reserve();
    const controller = new AbortController();
    const waiting = limiter.take(controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow();
  });

  it('setRate() spaces the reservations after it at the new rate, keeping the slots already handed out', () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(10, clock.now);
    for (let i = 0; i < 10; i += 1) limiter.reserve();
    expect([limiter.reserve(), limiter.reserve()]).toEqual([100, 200]);
    limiter.setRate(5);
    expect(limiter.perSecond).toBe(5);
    // The last slot was at +200 ms; the next ones come 200 ms apart from there.
    expect([limiter.reserve(), limiter.reserve()]).toEqual([400, 600]);
    limiter.setRate(20);
    expect([limiter.reserve(), limiter.reserve()]).toEqual([650, 700]);
  });

  it("after setRate() the burst following idleness is one second's worth at the new rate", () => {
    const clock = manualClock(60_000);
    const limiter = new RateLimiter(10, clock.now);
    limiter.setRate(4);
    clock.advance(5_000);
    const waits = Array.from({ length: 5 }, () => limiter.reserve());
    expect(waits).toEqual([0, 0, 0, 0, 250]);
  });

  it('setRate() refuses a rate that is not > 0, and a limiter built without a limit', () => {
    const limited = new RateLimiter(10);
    expect(() => limited.setRate(0)).toThrow(/rate must be a finite number > 0/);
    expect(() => limited.setRate(Number.POSITIVE_INFINITY)).toThrow(/rate must be/);
    expect(() => new RateLimiter(0).setRate(5)).toThrow(/without a limit/);
  });
});
