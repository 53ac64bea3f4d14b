/**
 * The one place where an attempt's outcome becomes a success or a classified failure
 * (see FailureClass in types.ts). Pure: the client describes what happened (an HTTP answer, a
 * socket error code, a timeout phase) and every caller, the retry loop included, reads the verdict.
 *
 * Precedence for HTTP answers, and why:
 *  1. 429 / 503 → throttled, whatever the body: the service asks us to come back later.
 *  2. 500 / 502 / 504 → ambiguous, whatever the body: the send may have happened behind the error.
 *  3. A JSON envelope whose `code` is not "0" → business (105400 insufficient funds, 101301
 *     configuration, anything else generic), whatever the status: the spec says to branch on `code`.
 *  4. HTTP 200 with code "0" → success if `data` is well formed, else malformed.
 *  5. No usable envelope: 2xx → malformed; 401 / 403 / 404 / 407 → configuration (a revoked key,
 *     a wrong URL or proxy: every other command would get the same); other 5xx → ambiguous;
 *     anything else → business with code PROVIDER_HTTP_<status>.
 *
 * Text from the service is bounded before it goes anywhere (results, logs, errors): the message to
 * MAX_PROVIDER_MESSAGE characters, the request id to MAX_REQUEST_ID; a body over the client's byte
 * cap is never read to the end (`oversized`, malformed).
 */
import type { FailureClass, FailureFields, OperationName, SendResult } from './types.ts';
import { parseEnvelope } from './envelope.ts';
import { parseRetryAfter } from './retry-after.ts';

export const INSUFFICIENT_FUNDS_CODE = '105400';
export const NO_UPSTREAM_CODE = '101301';
/** The call was aborted by the caller (its signal, or the client's close()). */
export const ABORTED_CODE = 'PROVIDER_ABORTED';

/** The service's error message is cut to this many characters (a 2 MB message is not copied into results). */
export const MAX_PROVIDER_MESSAGE = 1_000;
/** The service's request id header is cut to this many characters. */
export const MAX_REQUEST_ID = 128;

/** HTTP statuses that, without an envelope, say "this client may not call this service" (key, URL, proxy). */
const REJECTING_STATUSES = new Set([401, 403, 404, 407]);

/** Cuts outside text to `max` characters, marking the cut. */
export function bounded(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** What happened on one attempt, stripped of any library object (and of the URL with the key). */
export type AttemptOutcome =
  | {
      readonly kind: 'response';
      readonly status: number;
      readonly body: string;
      readonly retryAfter?: string | undefined;
      readonly requestId?: string | undefined;
    }
  | {
      readonly kind: 'network';
      /** Node / got error code: ECONNREFUSED, ECONNRESET, ETIMEDOUT… */
      readonly errorCode: string | undefined;
      /** For got timeouts: the phase that timed out (lookup, connect, secureConnect, send, response, read, request, socket). */
      readonly timeoutPhase?: string | undefined;
    }
  /** An answer whose body exceeded the client's byte cap; it was not read to the end. */
  | { readonly kind: 'oversized'; readonly status: number; readonly limitBytes: number; readonly requestId?: string | undefined }
  | { readonly kind: 'aborted' };

export interface ClassifiedFailure extends FailureFields {
  /** Our one-line account of the failure (never contains a URL). */
  readonly detail: string;
  /** Always said of an attempt (see FailureFields). */
  readonly answered: boolean;
}

export type Classification =
  { readonly ok: true; readonly result: SendResult; readonly requestId: string | undefined } | { readonly ok: false; readonly failure: ClassifiedFailure };

/** Errors where the request surely never reached the service. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  // Node's own "never connected" errors (net autoSelectFamily timeout; socket closed while connecting).
  'ERR_SOCKET_CONNECTION_TIMEOUT',
  'ERR_SOCKET_CLOSED_BEFORE_CONNECTION',
]);
const NOT_SENT_TIMEOUT_PHASES = new Set(['lookup', 'connect', 'secureConnect']);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

/** Whether a failure class may be retried at all; ambiguity is the caller's policy choice. */
export function isRetryableClass(failureClass: FailureClass, retryAmbiguous: boolean): boolean {
  switch (failureClass) {
    case 'transport':
    case 'throttled':
      return true;
    case 'ambiguous':
      return retryAmbiguous;
    case 'business':
    case 'insufficient-funds':
    case 'configuration':
    case 'malformed':
      return false;
  }
}

export function businessClassOf(code: string): FailureClass {
  if (code === INSUFFICIENT_FUNDS_CODE) return 'insufficient-funds';
  if (code === NO_UPSTREAM_CODE) return 'configuration';
  return 'business';
}

/** A failure without an answer from the service. */
function unanswered(failureClass: FailureClass, code: string, detail: string): ClassifiedFailure {
  return { failureClass, code, providerMessage: '', answered: false, detail };
}

function classifyNetwork(errorCode: string | undefined, timeoutPhase: string | undefined): ClassifiedFailure {
  if (timeoutPhase !== undefined) {
    if (NOT_SENT_TIMEOUT_PHASES.has(timeoutPhase))
      return unanswered('transport', 'PROVIDER_CONNECT_TIMEOUT', `timed out in the ${timeoutPhase} phase, before the request was sent`);
    return unanswered(
      'ambiguous',
      'PROVIDER_TIMEOUT',
      `timed out in the ${timeoutPhase} phase after the request was sent; it may have been delivered (ambiguous)`,
    );
  }
  if (errorCode !== undefined && NOT_SENT_CODES.has(errorCode))
    return unanswered('transport', 'PROVIDER_CONNECTION_FAILED', `could not connect (${errorCode}); the request was not sent`);
  if (errorCode !== undefined && RESET_CODES.has(errorCode)) {
    return unanswered(
      'ambiguous',
      'PROVIDER_CONNECTION_RESET',
      `connection lost before an answer (${errorCode}); the request may have been delivered (ambiguous)`,
    );
  }
  // Unknown socket-level trouble: we cannot prove the request stayed home, so assume it may not have.
  return unanswered(
    'ambiguous',
    'PROVIDER_REQUEST_FAILED',
    `request failed (${bounded(errorCode ?? 'unknown error', 64)}); it may have been delivered (ambiguous)`,
  );
}

function classifyResponse(outcome: Extract<AttemptOutcome, { kind: 'response' }>, operation: OperationName, nowMs: number): Classification {
  const { status } = outcome;
  const requestId = outcome.requestId === undefined ? undefined : bounded(outcome.requestId, MAX_REQUEST_ID);
  /** A failure the service answered with (an HTTP status). */
  const answered = (
    failureClass: FailureClass,
    code: string,
    detail: string,
    providerMessage = '',
    extra: { retryAfterMs?: number | undefined } = {},
  ): Classification => ({
    ok: false,
    failure: { httpStatus: status, requestId, answered: true, failureClass, code, providerMessage, detail, ...extra },
  });
  const envelope = parseEnvelope(outcome.body, operation);
  const envelopeText = envelope.kind === 'failure' ? bounded(`${envelope.code} ${envelope.message}`, MAX_PROVIDER_MESSAGE) : '';
  if (status === 429 || status === 503) {
    const retryAfterMs = parseRetryAfter(outcome.retryAfter, nowMs);
    const code = status === 429 ? 'PROVIDER_THROTTLED' : 'PROVIDER_UNAVAILABLE';
    return answered('throttled', code, `HTTP ${status}${retryAfterMs === undefined ? '' : `, retry after ${retryAfterMs} ms`}`, envelopeText, { retryAfterMs });
  }
  if (status === 500 || status === 502 || status === 504) {
    return answered('ambiguous', `PROVIDER_HTTP_${status}`, `HTTP ${status}; the request may have been delivered (ambiguous)`, envelopeText);
  }
  if (envelope.kind === 'failure') {
    const message = bounded(envelope.message, MAX_PROVIDER_MESSAGE);
    return answered(businessClassOf(envelope.code), envelope.code, `the service answered ${envelope.code} ${message} (HTTP ${status})`, message);
  }
  if (status === 200 && envelope.kind === 'success') return { ok: true, result: envelope.result, requestId };
  if (status >= 200 && status < 300) {
    const problem = envelope.kind === 'success' ? `unexpected HTTP ${status} for a success` : envelope.problem;
    return answered('malformed', 'PROVIDER_MALFORMED_RESPONSE', `malformed answer (${bounded(problem, 300)}); the request may have been delivered`);
  }
  if (status >= 500)
    return answered('ambiguous', `PROVIDER_HTTP_${status}`, `HTTP ${status} without an envelope; the request may have been delivered (ambiguous)`);
  if (REJECTING_STATUSES.has(status)) {
    return answered(
      'configuration',
      `PROVIDER_HTTP_${status}`,
      `HTTP ${status} without an envelope: the service refuses this client (access key, base URL or proxy)`,
    );
  }
  return answered('business', `PROVIDER_HTTP_${status}`, `HTTP ${status} without an envelope`);
}

export function classifyOutcome(outcome: AttemptOutcome, operation: OperationName, nowMs: number): Classification {
  switch (outcome.kind) {
    case 'response':
      return classifyResponse(outcome, operation, nowMs);
    case 'network':
      return { ok: false, failure: classifyNetwork(outcome.errorCode, outcome.timeoutPhase) };
    case 'oversized':
      return {
        ok: false,
        failure: {
          failureClass: 'malformed',
          code: 'PROVIDER_RESPONSE_TOO_LARGE',
          providerMessage: '',
          answered: true,
          httpStatus: outcome.status,
          requestId: outcome.requestId === undefined ? undefined : bounded(outcome.requestId, MAX_REQUEST_ID),
          detail: `answer body over the ${outcome.limitBytes}-byte limit (HTTP ${outcome.status}), not read to the end; the request may have been delivered`,
        },
      };
    case 'aborted':
      return {
        ok: false,
        failure: {
          failureClass: 'ambiguous',
          code: ABORTED_CODE,
          providerMessage: '',
          answered: false,
          detail: 'aborted by the caller (shutdown); the request may have been delivered (ambiguous)',
        },
      };
  }
}
