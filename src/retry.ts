/**
 * Jittered exponential backoff for retry loops, and a retry loop built on it. Generic on purpose:
 * the local stack, the benchmarks, the CLI and the tests use it, and so can the worker. (The
 * messaging-service client keeps its own policy in src/provider/backoff.ts: it also weighs
 * Retry-After, a time budget and failure classes.)
 */
import { setTimeout as sleep } from 'node:timers/promises';

export interface BackoffPolicy {
  /** Ceiling of the first retry's delay; each further retry doubles it… */
  readonly initialMs: number;
  /** …up to this. */
  readonly maxMs: number;
  /**
   * The random share of each delay, 0..1. 1 (default) is full jitter, uniform in [0, ceiling):
   * many clients hit by the same outage spread out instead of retrying in step. 0.5 keeps at least
   * half the ceiling, for loops that must not spin.
   */
  readonly jitter?: number;
}

/** Delay before the n-th retry (n ≥ 1). Pure: `random` is passed in, so every branch is testable. */
export function backoffDelay(retryNumber: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  // 2^n overflows to Infinity for huge n, and Math.min handles that.
  const ceiling = Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, retryNumber - 1));
  const jitter = Math.min(1, Math.max(0, policy.jitter ?? 1));
  return Math.floor(ceiling * (1 - jitter) + random() * ceiling * jitter);
}

export interface RetryOptions {
  /** Total attempts, including the first (1 = never retry). */
  readonly attempts: number;
  readonly backoff: BackoffPolicy;
  /** False stops at once with that error (default: every error is retried). */
  readonly retryable?: (error: unknown) => boolean;
  /** Told before each wait, e.g. to log the failure. */
  readonly onRetry?: (error: unknown, retryNumber: number, delayMs: number) => void;
  readonly random?: () => number;
}

/** Runs `work` until it succeeds, the error is not retryable, or the attempts are used up (the last error is thrown). */
export async function retry<T>(work: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work(attempt);
    } catch (error) {
      if (attempt >= options.attempts || options.retryable?.(error) === false) throw error;
      const delayMs = backoffDelay(attempt, options.backoff, options.random);
      options.onRetry?.(error, attempt, delayMs);
      await sleep(delayMs);
    }
  }
}
