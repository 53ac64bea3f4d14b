import { describe, expect, it } from 'vitest';
import { backoffCeiling, decideRetry, fullJitterDelay } from '../../src/provider/backoff.ts';
import type { RetryPolicy } from '../../src/provider/backoff.ts';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from '../../src/provider/retry-after.ts';

const policy: RetryPolicy = { maxAttempts: 4, budgetMs: 10_000, baseDelayMs: 100, maxDelayMs: 1_000, retryAmbiguous: false };

describe('backoff', () => {
  it('doubles the ceiling per retry and caps it', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffCeiling(n, 100, 1_000))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(backoffCeiling(2_000, 100, 1_000)).toBe(1_000);
  });

  it('full jitter is uniform in [0, ceiling)', () => {
    expect(fullJitterDelay(3, 100, 1_000, () => 0)).toBe(0);
    expect(fullJitterDelay(3, 100, 1_000, () => 0.5)).toBe(200);
    expect(fullJitterDelay(3, 100, 1_000, () => 0.999999)).toBe(399);
  });

  it('retries retryable classes with jittered backoff', () => {
    expect(decideRetry({ failureClass: 'transport', attemptsMade: 1, elapsedMs: 0, policy, random: () => 0.5 })).toEqual({
      retry: true,
      delayMs: 50,
      basis: 'backoff',
    });
    expect(decideRetry({ failureClass: 'throttled', attemptsMade: 2, elapsedMs: 0, policy, random: () => 0.5 })).toEqual({
      retry: true,
      delayMs: 100,
      basis: 'backoff',
    });
  });

  it('never retries business, funds, configuration or malformed failures', () => {
    for (const failureClass of ['business', 'insufficient-funds', 'configuration', 'malformed'] as const) {
      expect(decideRetry({ failureClass, attemptsMade: 1, elapsedMs: 0, policy })).toEqual({ retry: false, reason: 'not-retryable' });
    }
  });

  it('retries ambiguous failures only when the policy allows it', () => {
    expect(decideRetry({ failureClass: 'ambiguous', attemptsMade: 1, elapsedMs: 0, policy })).toEqual({
      retry: false,
      reason: 'not-retryable',
    });
    const allowed = decideRetry({
      failureClass: 'ambiguous',
      attemptsMade: 1,
      elapsedMs: 0,
      policy: { ...policy, retryAmbiguous: true },
      random: () => 0,
    });
    expect(allowed.retry).toBe(true);
  });

  it('stops after maxAttempts', () => {
    expect(decideRetry({ failureClass: 'transport', attemptsMade: 4, elapsedMs: 0, policy })).toEqual({
      retry: false,
      reason: 'attempts-exhausted',
    });
  });

  it('stops when the delay would overrun the budget', () => {
    expect(decideRetry({ failureClass: 'transport', attemptsMade: 3, elapsedMs: 9_900, policy, random: () => 0.9 })).toEqual({
      retry: false,
      reason: 'budget-exhausted',
    });
  });

  it('honours Retry-After over the backoff, and gives up when it does not fit the budget', () => {
    expect(decideRetry({ failureClass: 'throttled', retryAfterMs: 2_000, attemptsMade: 1, elapsedMs: 0, policy })).toEqual({
      retry: true,
      delayMs: 2_000,
      basis: 'retry-after',
    });
    expect(decideRetry({ failureClass: 'throttled', retryAfterMs: 2_000, attemptsMade: 1, elapsedMs: 8_500, policy })).toEqual({
      retry: false,
      reason: 'retry-after-exceeds-budget',
    });
  });
});

describe("decideRetry with a deadline (the command's expiry)", () => {
  it('makes no retry that would start at or after the deadline, even within the budget', () => {
    // random 0.5 on the first retry: 50 ms of backoff.
    const base = { failureClass: 'transport' as const, attemptsMade: 1, elapsedMs: 0, policy, random: () => 0.5 };
    expect(decideRetry({ ...base, untilDeadlineMs: 51 })).toEqual({ retry: true, delayMs: 50, basis: 'backoff' });
    expect(decideRetry({ ...base, untilDeadlineMs: 50 })).toEqual({ retry: false, reason: 'deadline' });
    expect(decideRetry({ ...base, untilDeadlineMs: -5 })).toEqual({ retry: false, reason: 'deadline' });
  });

  it('a Retry-After that ends at or after the deadline stops with `deadline`, before the budget is considered', () => {
    const base = { failureClass: 'throttled' as const, attemptsMade: 1, elapsedMs: 0, policy };
    expect(decideRetry({ ...base, retryAfterMs: 1_000, untilDeadlineMs: 1_000 })).toEqual({ retry: false, reason: 'deadline' });
    expect(decideRetry({ ...base, retryAfterMs: 60_000, untilDeadlineMs: 30_000 })).toEqual({ retry: false, reason: 'deadline' });
    expect(decideRetry({ ...base, retryAfterMs: 60_000, untilDeadlineMs: 120_000 })).toEqual({ retry: false, reason: 'retry-after-exceeds-budget' });
    expect(decideRetry({ ...base, retryAfterMs: 1_000, untilDeadlineMs: 1_001 })).toEqual({ retry: true, delayMs: 1_000, basis: 'retry-after' });
  });

  it('the budget still stops retries before a later deadline', () => {
    expect(decideRetry({ failureClass: 'transport', attemptsMade: 1, elapsedMs: 9_990, policy, random: () => 0.5, untilDeadlineMs: 60_000 })).toEqual({
      retry: false,
      reason: 'budget-exhausted',
    });
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delay-seconds', () => {
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
  });
  it('reads an HTTP date relative to now, past dates as 0', () => {
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
  });
  it('caps absurd waits at one day (400 digits, a far date)', () => {
    expect(parseRetryAfter('9'.repeat(400), 0)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', 0)).toBe(MAX_RETRY_AFTER_MS);
  });

  it('ignores absent or unparsable values', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
  });
});
