/**
 * Jittered exponential backoff for retry loops, and a retry loop built on it. Generic on purpose:
 * the worker (topic set-up, registry decodes, transaction commits), the local stack, the
 * benchmarks, the CLI and the tests use it. (The
 * messaging-service client decides its retries in src/provider/backoff.ts, on this formula: it
 * also weighs Retry-After, a time budget and failure classes.)
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

/** Upper bound of the n-th retry's delay (n ≥ 1): min(max, initial · 2^(n-1)). */
export function backoffCeiling(retryNumber: number, initialMs: number, maxMs: number): number {
  // 2^n overflows to Infinity for huge n, and Math.min handles that.
  return Math.min(maxMs, initialMs * 2 ** Math.max(0, retryNumber - 1));
}

/** Delay before the n-th retry (n ≥ 1). Pure: `random` is passed in, so every branch is testable. */
export function backoffDelay(retryNumber: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = backoffCeiling(retryNumber, policy.initialMs, policy.maxMs);
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
  /** Aborting it ends a wait between attempts: `retry` then throws RetryAborted (a running attempt is not interrupted). */
  readonly signal?: AbortSignal;
}

/** `retry` stopped because its signal aborted a wait between attempts; `cause` is the last attempt's error. */
export class RetryAborted extends Error {
  constructor(cause: unknown) {
    super('retry abandoned: the signal aborted the wait before the next attempt', { cause });
    this.name = 'RetryAborted';
  }
}

/**
 * Runs `work` until it succeeds, the error is not retryable, or the attempts are used up (the last
 * error is thrown). `attempts: Infinity` retries until success, a non-retryable error or the signal.
 */
export async function retry<T>(work: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await work(attempt);
    } catch (error) {
      if (attempt >= options.attempts || options.retryable?.(error) === false) throw error;
      const delayMs = backoffDelay(attempt, options.backoff, options.random);
      options.onRetry?.(error, attempt, delayMs);
      try {
        await sleep(delayMs, undefined, { signal: options.signal });
      } catch {
        throw new RetryAborted(error);
      }
    }
  }
}
