/**
 * The one error hierarchy of the worker. Every failure that crosses a module boundary is a
 * SmsWorkerError with a stable `code` and a `retryable` flag, so classification happens once
 * (where the failure is first understood) and everything downstream only reads these fields.
 */
export class SmsWorkerError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** Configuration that cannot work; thrown once at start-up with every problem listed. */
export class ConfigError extends SmsWorkerError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super('CONFIG_INVALID', `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

/** Normalises anything thrown into an Error, so catch blocks never handle `unknown` twice. */
export function coerceError(value: unknown): Error {
  if (value instanceof Error) return value;
  if (typeof value === 'string') return new Error(value);
  try {
    return new Error(JSON.stringify(value));
  } catch {
    return new Error(String(value));
  }
}
