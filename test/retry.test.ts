import { describe, expect, it } from 'vitest';
import { backoffDelay, retry, RetryAborted } from '../src/retry.ts';

describe('backoffDelay', () => {
  const policy = { initialMs: 100, maxMs: 1_000 };

  it('doubles the ceiling per retry up to the maximum (full jitter by default: random 0.999… ≈ the ceiling)', () => {
    const top = (): number => 0.999_999;
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(n, policy, top))).toEqual([99, 199, 399, 799, 999, 999]);
  });

  it('full jitter can wait nothing; a jitter share keeps a floor of (1 - jitter) × ceiling', () => {
    expect(backoffDelay(3, policy, () => 0)).toBe(0);
    expect(backoffDelay(3, { ...policy, jitter: 0.5 }, () => 0)).toBe(200);
    expect(backoffDelay(3, { ...policy, jitter: 0.5 }, () => 0.5)).toBe(300);
    expect(backoffDelay(3, { ...policy, jitter: 0 }, () => 0.9)).toBe(400);
  });

  it('stays bounded for huge retry numbers and clamps nonsense jitter', () => {
    expect(backoffDelay(10_000, policy, () => 0.5)).toBe(500);
    expect(backoffDelay(0, policy, () => 0.5)).toBe(50);
    expect(backoffDelay(1, { ...policy, jitter: 7 }, () => 0)).toBe(0);
    expect(backoffDelay(1, { ...policy, jitter: -1 }, () => 0)).toBe(100);
  });
});

describe('retry', () => {
  const fast = { initialMs: 1, maxMs: 2 };

  it('returns the first success, after retrying failures, and reports each retry', async () => {
    const seen: number[] = [];
    const retries: number[] = [];
    const value = await retry(
      async (attempt) => {
        seen.push(attempt);
        if (attempt < 3) throw new Error(`fail ${attempt}`);
        return 'ok';
      },
      { attempts: 5, backoff: fast, onRetry: (_error, n) => retries.push(n) },
    );
    expect(value).toBe('ok');
    expect(seen).toEqual([1, 2, 3]);
    expect(retries).toEqual([1, 2]);
  });

  it('throws the last error when the attempts are used up', async () => {
    let calls = 0;
    await expect(
      retry(
        async (attempt) => {
          calls += 1;
          throw new Error(`fail ${attempt}`);
        },
        { attempts: 3, backoff: fast },
      ),
    ).rejects.toThrow('fail 3');
    expect(calls).toBe(3);
  });

  it('stops at once on an error that is not retryable', async () => {
    let calls = 0;
    await expect(
      retry(
        async () => {
          calls += 1;
          throw new TypeError('business error');
        },
        { attempts: 5, backoff: fast, retryable: (error) => !(error instanceof TypeError) },
      ),
    ).rejects.toThrow('business error');
    expect(calls).toBe(1);
  });

  it('without a limit, retries until the signal aborts a wait, then throws RetryAborted with the last error', async () => {
    const controller = new AbortController();
    let calls = 0;
    const error = await retry(
      async (attempt) => {
        calls += 1;
        if (attempt === 3) controller.abort();
        throw new Error(`fail ${attempt}`);
      },
      { attempts: Infinity, backoff: fast, signal: controller.signal },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetryAborted);
    expect((error as RetryAborted).cause).toEqual(new Error('fail 3'));
    expect(calls).toBe(3);
  });
});
