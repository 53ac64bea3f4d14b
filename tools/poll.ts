/**
 * The one polling helper of the tooling (local stack, benchmarks, test helpers): wait for an
 * asynchronous effect without fixed sleeps, with a deadline that names what did not happen; and
 * `within`, the one way they bound a single step.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelay, type BackoffPolicy } from '../src/retry.ts';

/** Thrown by `check` to stop polling at once (e.g. the process being waited for has died). */
export class PollAbort extends Error {
  override readonly name = 'PollAbort';
}

/** The deadline passed; the message names what was awaited and the last error `check` threw. */
export class PollTimeout extends Error {
  override readonly name = 'PollTimeout';
}

export interface PollOptions {
  /** Between checks: starts near `initialMs`, grows to `maxMs`, jittered so parallel pollers do not align. */
  readonly interval?: BackoffPolicy;
  /** Called between checks (progress output). */
  readonly onTick?: () => void;
}

const DEFAULT_INTERVAL: BackoffPolicy = { initialMs: 50, maxMs: 250, jitter: 0.5 };

/**
 * Polls `check` until it returns something other than undefined or false, and returns that; after
 * `timeoutMs` throws PollTimeout naming `what` (a function, for a message built at the time). An
 * error thrown by `check` counts as "not yet" (and is quoted if time runs out), except PollAbort,
 * which is rethrown at once.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  what: string | (() => string) = 'condition',
  options: PollOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const interval = options.interval ?? DEFAULT_INTERVAL;
  let last: unknown;
  for (let round = 1; ; round += 1) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      if (error instanceof PollAbort) throw error;
      last = error;
    }
    if (Date.now() > deadline) {
      throw new PollTimeout(`timed out waiting for ${typeof what === 'function' ? what() : what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    options.onTick?.();
    await sleep(Math.min(backoffDelay(round, interval), Math.max(0, deadline - Date.now()) + 1));
  }
}

/** Bounds a step: rejects with "<what> did not complete within <ms> ms" if it takes longer. The step itself is not cancelled. */
export async function within<T>(ms: number, what: string, step: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not complete within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([step, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
