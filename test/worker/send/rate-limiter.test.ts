import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RateLimiter, tokensOfBoth } from '../../../src/worker/send/rate-limiter.ts';

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

const now = (): number => Date.now();

/** Starts `n` takes and records when each is granted (fake time since the start). */
function takes(limiter: RateLimiter, n: number, signal?: AbortSignal): { granted: number[]; settled: Promise<unknown>[] } {
  const start = Date.now();
  const granted: number[] = [];
  const settled = Array.from({ length: n }, () =>
    limiter.take(signal).then(
      () => void granted.push(Date.now() - start),
      () => undefined,
    ),
  );
  return { granted, settled };
}

describe('RateLimiter', () => {
  it('is disabled at 0/s: every take is granted at once', async () => {
    const limiter = new RateLimiter(0, now);
    expect(limiter.enabled).toBe(false);
    const { granted, settled } = takes(limiter, 1_000);
    await Promise.all(settled);
    expect(granted).toHaveLength(1_000);
    expect(new Set(granted)).toEqual(new Set([0]));
  });

  it("allows a burst of one second's worth, then grants 1000/R ms apart, first come first served", async () => {
    const limiter = new RateLimiter(10, now);
    const { granted } = takes(limiter, 14);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(granted).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 100, 200, 300, 400]);
  });

  it('a caller that gives up while waiting takes nothing: the next one is granted in its place, not after it', async () => {
    const limiter = new RateLimiter(10, now);
    takes(limiter, 10); // the burst
    const gone = new AbortController();
    const abandoned = takes(limiter, 20, gone.signal); // would wait 100 … 2,000 ms
    gone.abort(new Error('the partition moved'));
    await Promise.all(abandoned.settled);
    expect(limiter.waiting).toBe(0);
    const next = takes(limiter, 2);
    await vi.advanceTimersByTimeAsync(300);
    expect(abandoned.granted).toEqual([]);
    expect(next.granted).toEqual([100, 200]);
  });

  it('a new rate applies to everyone still waiting (a share that shrinks at a rebalance does not keep the old pace)', async () => {
    const limiter = new RateLimiter(10, now);
    takes(limiter, 10);
    const waiting = takes(limiter, 4);
    limiter.setRate(2);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(waiting.granted).toEqual([500, 1_000, 1_500, 2_000]);
  });

  it('grants nothing while paused (rebalancing), and resumes from an empty bucket', async () => {
    const limiter = new RateLimiter(10, now);
    limiter.pause();
    const held = takes(limiter, 3);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(held.granted).toEqual([]);
    limiter.resume();
    await vi.advanceTimersByTimeAsync(300);
    expect(held.granted).toEqual([5_100, 5_200, 5_300]);
  });

  it("after idleness the burst is one second's worth at the current rate, and not more", async () => {
    const limiter = new RateLimiter(10, now);
    limiter.setRate(4);
    await vi.advanceTimersByTimeAsync(5_000);
    const { granted } = takes(limiter, 5);
    await vi.advanceTimersByTimeAsync(300);
    expect(granted).toEqual([0, 0, 0, 0, 250]);
  });

  it('a take whose signal is already aborted, or aborts while waiting, rejects', async () => {
    const limiter = new RateLimiter(1, now);
    await limiter.take();
    const controller = new AbortController();
    const waiting = limiter.take(controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    await expect(limiter.take(controller.signal)).rejects.toThrow('stop');
  });

  it('setRate() refuses a rate that is not > 0, and a limiter built without a limit', () => {
    const limited = new RateLimiter(10);
    expect(() => limited.setRate(0)).toThrow(/rate must be a finite number > 0/);
    expect(() => limited.setRate(Number.POSITIVE_INFINITY)).toThrow(/rate must be/);
    expect(() => new RateLimiter(0).setRate(5)).toThrow(/without a limit/);
  });
});

describe('RateLimiter with priorities', () => {
  it('grants a waiting high caller the next token before normal callers that queued earlier, and keeps the normal share', async () => {
    const limiter = new RateLimiter(10, now, 0.25);
    // Use up the first second's burst.
    await Promise.all(Array.from({ length: 10 }, () => limiter.take()));
    const order: string[] = [];
    const normal = Array.from({ length: 4 }, (_, i) => limiter.take(undefined, 'normal').then(() => order.push(`n${i}`)));
    const high = Array.from({ length: 6 }, (_, i) => limiter.take(undefined, 'high').then(() => order.push(`h${i}`)));
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all([...normal, ...high]);
    // Every 4th token while both wait goes to normal (0.25); the rest to high, in arrival order.
    expect(order).toEqual(['h0', 'h1', 'h2', 'n0', 'h3', 'h4', 'h5', 'n1', 'n2', 'n3']);
  });

  it("a rebalance of one priority's group holds only that priority's tokens", async () => {
    const limiter = new RateLimiter(10, now, 0.1);
    limiter.pause('normal');
    const order: string[] = [];
    const normal = limiter.take(undefined, 'normal').then(() => order.push('normal'));
    const high = limiter.take(undefined, 'high').then(() => order.push('high'));
    await vi.advanceTimersByTimeAsync(500);
    expect(order).toEqual(['high']);
    limiter.resume('normal');
    await vi.advanceTimersByTimeAsync(500);
    await Promise.all([normal, high]);
    expect(order).toEqual(['high', 'normal']);
  });

  it('grants nothing while every priority is paused, and resumes from an empty bucket', async () => {
    const limiter = new RateLimiter(10, now);
    limiter.pause();
    const granted: number[] = [];
    const start = Date.now();
    const taken = limiter.take(undefined, 'high').then(() => granted.push(Date.now() - start));
    await vi.advanceTimersByTimeAsync(2_000);
    expect(granted).toEqual([]);
    limiter.resume('high');
    await vi.advanceTimersByTimeAsync(200);
    await taken;
    // Empty at resume: the first token a tenth of a second later, not the second's worth banked while paused.
    expect(granted).toEqual([2_100]);
  });

  it('for(priority) takes at that priority', async () => {
    const limiter = new RateLimiter(1, now);
    await limiter.take();
    const order: string[] = [];
    const normal = limiter
      .for('normal')
      .take()
      .then(() => order.push('normal'));
    const high = limiter
      .for('high')
      .take()
      .then(() => order.push('high'));
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all([normal, high]);
    expect(order).toEqual(['high', 'normal']);
  });
});

describe('tokensOfBoth: an account limit of its own under the deployment-wide one', () => {
  it('grants at the slower pace of the two, and a command waiting on its account holds no global token meanwhile', async () => {
    const global = new RateLimiter(10, now);
    const slowAccount = new RateLimiter(2, now);
    const throughSlow = tokensOfBoth(slowAccount.for('normal'), global.for('normal'));
    const slow: number[] = [];
    const start = Date.now();
    const slowTakes = Array.from({ length: 4 }, () => throughSlow.take().then(() => void slow.push(Date.now() - start)));
    // The other account (no limit of its own) takes the global tokens the slow one is not using.
    const other = takes(global, 8);
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(slowTakes);
    expect(slow).toEqual([0, 0, 500, 1_000]);
    // 10 global tokens in the first second's burst: 2 for the slow account, 8 for the other at once.
    expect(other.granted).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
  });
});

describe('RateLimiter below one call a second', () => {
  it('a share of 0.5/s (2/s over 4 partitions, one owned) still grants: one token at once, then one every 2 s', async () => {
    const limiter = new RateLimiter(2, now);
    limiter.setRate(0.5);
    const { granted } = takes(limiter, 3);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(granted).toEqual([0, 2_000, 4_000]);
  });
});
