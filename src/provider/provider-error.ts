/**
 * The one error the client throws. It carries copies of what the worker needs (class, code,
 * status, request id, attempts) and never the HTTP library's error: that object holds the URL,
 * whose query string has the access key id and the signature.
 */
import { SmsWorkerError } from '../errors.ts';
import type { FailureClass, OperationName } from './types.ts';

export interface ProviderErrorFields {
  readonly operation: OperationName;
  readonly code: string;
  readonly message: string;
  readonly providerMessage: string;
  readonly failureClass: FailureClass;
  readonly retryable: boolean;
  readonly attempts: number;
  readonly httpStatus?: number | undefined;
  readonly requestId?: string | undefined;
  readonly retryAfterMs?: number | undefined;
}

export class ProviderError extends SmsWorkerError {
  readonly operation: OperationName;
  readonly providerMessage: string;
  readonly failureClass: FailureClass;
  readonly attempts: number;
  readonly httpStatus: number | undefined;
  readonly requestId: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(fields: ProviderErrorFields) {
    super(fields.code, fields.message, { retryable: fields.retryable });
    this.operation = fields.operation;
    this.providerMessage = fields.providerMessage;
    this.failureClass = fields.failureClass;
    this.attempts = fields.attempts;
    this.httpStatus = fields.httpStatus;
    this.requestId = fields.requestId;
    this.retryAfterMs = fields.retryAfterMs;
  }

  /** The request may have reached the service although we saw no clean answer. */
  get ambiguous(): boolean {
    return this.failureClass === 'ambiguous' || this.failureClass === 'malformed';
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
    };
  }
}

export function isProviderError(value: unknown): value is ProviderError {
  return value instanceof ProviderError || (value instanceof Error && value.name === 'ProviderError');
}
