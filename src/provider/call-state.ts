/**
 * One call's bookkeeping across its attempts, and how a got failure becomes an AttemptOutcome
 * (without keeping got's error objects: they hold the signed URL).
 */
import { performance } from 'node:perf_hooks';
import { CancelError, HTTPError, RequestError, TimeoutError } from 'got';
import type { RetryDecision } from './backoff.ts';
import type { AttemptOutcome, Classification, ClassifiedFailure } from './classify.ts';
import type { AttemptInfo } from './options.ts';
import type { OperationName } from './types.ts';

export const REQUEST_ID_HEADER = 'x-uni-request-id';

/**
 * Mutable bookkeeping of one `send` call across its attempts. It rides in got's `context`
 * option, so the retry hook and the request hook are defined once on the instance rather than
 * merged into every call's options (got's per-call option merging is its main CPU cost).
 */
export class CallState {
  readonly operation: OperationName;
  readonly signal: AbortSignal | undefined;
  readonly deadline: number | undefined;
  readonly startedAt = performance.now();
  attempts = 0;
  attemptStartedAt = performance.now();
  /** Attempt number whose outcome was already reported through onAttempt. */
  reportedAttempt = 0;
  lastFailure: ClassifiedFailure | undefined;
  /** An attempt before the last one ended ambiguously (it may have reached the service): retried only under retryAmbiguous. */
  earlierAttemptAmbiguous = false;
  lastDecision: RetryDecision | undefined;
  /** Status and request id of the latest answer's head, known before its body is read. */
  answerHead: { status: number; requestId: string | undefined } | undefined;
  /** Set when the answer's body went over the byte cap and the call was cancelled for it. */
  oversized = false;

  /** This call's own attempt observer (SendOptions.onAttempt), after the client's. */
  readonly onAttempt: ((info: AttemptInfo) => void) | undefined;

  constructor(operation: OperationName, signal: AbortSignal | undefined, deadline: number | undefined, onAttempt?: (info: AttemptInfo) => void) {
    this.operation = operation;
    this.signal = signal;
    this.deadline = deadline;
    this.onAttempt = onAttempt;
  }
}

export const CONTEXT_KEY = 'smsWorkerCall';

export function callOf(context: Readonly<Record<string, unknown>>): CallState | undefined {
  const call = context[CONTEXT_KEY];
  return call instanceof CallState ? call : undefined;
}

export function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Describes a got failure without keeping the error object (it holds the signed URL). */
export function outcomeOfError(error: unknown, call: CallState, limitBytes: number): AttemptOutcome {
  if (call.oversized) return oversizedOutcome(call, limitBytes);
  if (call.signal?.aborted === true) return { kind: 'aborted' };
  if (error instanceof HTTPError) {
    const response = error.response;
    return {
      kind: 'response',
      status: response.statusCode,
      body: typeof response.body === 'string' ? response.body : String(response.body),
      retryAfter: header(response.headers['retry-after']),
      requestId: header(response.headers[REQUEST_ID_HEADER]),
    };
  }
  if (error instanceof TimeoutError) return { kind: 'network', errorCode: 'ETIMEDOUT', timeoutPhase: error.event };
  if (error instanceof RequestError) {
    if (error.code === 'ERR_ABORTED' || error instanceof CancelError) return { kind: 'aborted' };
    return { kind: 'network', errorCode: error.code };
  }
  return { kind: 'network', errorCode: undefined };
}

export function oversizedOutcome(call: CallState, limitBytes: number): AttemptOutcome {
  return { kind: 'oversized', status: call.answerHead?.status ?? 0, requestId: call.answerHead?.requestId, limitBytes };
}

const UNKNOWN_FAILURE: ClassifiedFailure = {
  failureClass: 'ambiguous',
  code: 'PROVIDER_REQUEST_FAILED',
  providerMessage: '',
  answered: false,
  detail: 'request failed for an unknown reason; it may have been delivered (ambiguous)',
};

export function failureOf(verdict: Classification): ClassifiedFailure {
  return verdict.ok ? UNKNOWN_FAILURE : verdict.failure;
}

export function safeCall<T>(hook: ((info: T) => void) | undefined, info: T): void {
  if (hook === undefined) return;
  try {
    hook(info);
  } catch {
    // An observer's bug must not change the outcome of a send.
  }
}
