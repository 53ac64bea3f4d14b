/**
 * Pure retry arithmetic: exponential backoff with full jitter, and the decision to retry under an
 * attempt limit, a total time budget and the command's own deadline (its expiry). No clock, no
 * timers: callers pass `elapsedMs`, `untilDeadlineMs` and `random`, so every branch is unit-testable.
 */
import type { FailureClass } from './types.ts';
import { isRetryableClass } from './classify.ts';
import { backoffDelay } from '../retry.ts';

export interface RetryPolicy {
  /** Total HTTP attempts, including the first (1 = never retry). */
  readonly maxAttempts: number;
  /** No retry is started if waiting for it would end after this many ms since the call began. */
  readonly budgetMs: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Retry failures after which the message may have been sent anyway (duplicates possible). */
  readonly retryAmbiguous: boolean;
}

/** Upper bound of the n-th retry's delay (n ≥ 1): min(maxDelay, base · 2^(n-1)); the one formula, in src/retry.ts. */
export { backoffCeiling } from '../retry.ts';

/**
 * Full jitter (AWS architecture blog, "Exponential Backoff And Jitter"): uniformly random in
 * [0, ceiling). Spreads retries of many workers hit by the same outage instead of synchronising them.
 */
export function fullJitterDelay(retryNumber: number, baseDelayMs: number, maxDelayMs: number, random: () => number = Math.random): number {
  return backoffDelay(retryNumber, { initialMs: baseDelayMs, maxMs: maxDelayMs, jitter: 1 }, random);
}

export type RetryDecision =
  | { readonly retry: true; readonly delayMs: number; readonly basis: 'backoff' | 'retry-after' }
  | {
      readonly retry: false;
      readonly reason: StopReason;
    };

/**
 * Why no further attempt is made. `deadline` wins over the budget reasons: a retry that would
 * start at or after the command's deadline is pointless whatever the budget says.
 */
export type StopReason = 'not-retryable' | 'attempts-exhausted' | 'budget-exhausted' | 'retry-after-exceeds-budget' | 'deadline';

export interface RetryInput {
  readonly failureClass: FailureClass;
  /** Parsed Retry-After of the failed attempt, if it carried one. */
  readonly retryAfterMs?: number | undefined;
  /** Attempts already made, including the one that just failed (≥ 1). */
  readonly attemptsMade: number;
  /** Time since the call began. */
  readonly elapsedMs: number;
  /** Time left until the call's deadline (e.g. the command's expiresAt), when it has one. */
  readonly untilDeadlineMs?: number | undefined;
  readonly policy: RetryPolicy;
  readonly random?: () => number;
}

export function decideRetry(input: RetryInput): RetryDecision {
  const { failureClass, retryAfterMs, attemptsMade, elapsedMs, policy } = input;
  if (!isRetryableClass(failureClass, policy.retryAmbiguous)) return { retry: false, reason: 'not-retryable' };
  if (attemptsMade >= policy.maxAttempts) return { retry: false, reason: 'attempts-exhausted' };
  const remainingMs = policy.budgetMs - elapsedMs;
  const untilDeadlineMs = input.untilDeadlineMs ?? Infinity;
  if (retryAfterMs !== undefined) {
    // The service told us when; retrying earlier would only be throttled again.
    if (retryAfterMs >= untilDeadlineMs) return { retry: false, reason: 'deadline' };
    if (retryAfterMs > remainingMs) return { retry: false, reason: 'retry-after-exceeds-budget' };
    return { retry: true, delayMs: retryAfterMs, basis: 'retry-after' };
  }
  const delayMs = fullJitterDelay(attemptsMade, policy.baseDelayMs, policy.maxDelayMs, input.random);
  if (delayMs >= untilDeadlineMs) return { retry: false, reason: 'deadline' };
  if (delayMs > remainingMs) return { retry: false, reason: 'budget-exhausted' };
  return { retry: true, delayMs, basis: 'backoff' };
}
