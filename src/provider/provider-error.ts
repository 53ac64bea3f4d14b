/**
 * The one error the client throws. It carries copies of what the worker needs (class, code,
 * status, request id, attempts) and never the HTTP library's error: that object holds the URL,
 * whose query string has the access key id and the signature.
 */
import { SmsWorkerError } from '../errors.ts';
import type { StopReason } from './backoff.ts';
import { ABORTED_CODE } from './classify.ts';
import type { FailureClass, FailureFields, OperationName } from './types.ts';

/** Failure classes after which the request may have reached the service although no clean answer came. */
export const AMBIGUOUS_FAILURE_CLASSES: ReadonlySet<FailureClass> = new Set(['ambiguous', 'malformed']);

export interface ProviderErrorFields extends FailureFields {
  readonly operation: OperationName;
  readonly message: string;
  readonly retryable: boolean;
  readonly attempts: number;
  /** Why the client made no further attempt (undefined when the call ended some other way, e.g. aborted). */
  readonly stopReason?: StopReason | undefined;
  /** An earlier attempt of this call ended ambiguously and was retried (PROVIDER_RETRY_AMBIGUOUS): see `ambiguous`. */
  readonly earlierAttemptAmbiguous?: boolean;
}

export class ProviderError extends SmsWorkerError {
  readonly operation: OperationName;
  readonly providerMessage: string;
  readonly failureClass: FailureClass;
  readonly attempts: number;
  readonly httpStatus: number | undefined;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;
  /**
   * The service sent an HTTP answer: a result's error stage is PROVIDER; otherwise (no answer:
   * refused, reset, timed out) it is TRANSPORT.
   */
  readonly answered: boolean;
  readonly stopReason: StopReason | undefined;
  /** An earlier attempt of this call may have reached the service (retried after an ambiguous answer). */
  readonly earlierAttemptAmbiguous: boolean;

  constructor(fields: ProviderErrorFields) {
    super(fields.code, fields.message, { retryable: fields.retryable });
    this.operation = fields.operation;
    this.providerMessage = fields.providerMessage;
    this.failureClass = fields.failureClass;
    this.attempts = fields.attempts;
    this.httpStatus = fields.httpStatus;
    this.requestId = fields.requestId;
    this.retryAfterMs = fields.retryAfterMs;
    this.answered = fields.answered ?? false;
    this.stopReason = fields.stopReason;
    this.earlierAttemptAmbiguous = fields.earlierAttemptAmbiguous ?? false;
  }

  /** The caller ended the call (signal or the client's close(), i.e. shutdown): not a failure of the service. */
  get aborted(): boolean {
    return this.code === ABORTED_CODE;
  }

  /**
   * No attempt of this call reached the service (the last was refused a connection, timed out
   * connecting, or got 429/503, and no earlier one may have reached it). `failureClass` is the last
   * attempt's.
   */
  get surelyNotSent(): boolean {
    return !this.earlierAttemptAmbiguous && (this.failureClass === 'transport' || this.failureClass === 'throttled');
  }

  /** The service answered and refused the command (a business error, 105400, 101301), and no earlier attempt may have reached it: it surely did not send it. */
  get refused(): boolean {
    return (
      !this.earlierAttemptAmbiguous && (this.failureClass === 'business' || this.failureClass === 'insufficient-funds' || this.failureClass === 'configuration')
    );
  }

  /** A request of this call may have reached the service although we saw no clean answer (its last attempt, or an earlier one). */
  get ambiguous(): boolean {
    return this.earlierAttemptAmbiguous || AMBIGUOUS_FAILURE_CLASSES.has(this.failureClass);
  }

  /** Safe, flat form for structured logs and results (no stack, nothing secret). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      operation: this.operation,
      failureClass: this.failureClass,
      retryable: this.retryable,
      ambiguous: this.ambiguous,
      attempts: this.attempts,
      providerMessage: this.providerMessage,
      httpStatus: this.httpStatus,
      requestId: this.requestId,
      retryAfterMs: this.retryAfterMs,
      answered: this.answered,
      stopReason: this.stopReason,
    };
  }
}

export function isProviderError(value: unknown): value is ProviderError {
  return value instanceof ProviderError || (value instanceof Error && value.name === 'ProviderError');
}
