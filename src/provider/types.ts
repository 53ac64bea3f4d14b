/**
 * Shapes of the messaging service's two operations, as the spec
 * (summarised in docs/messaging-service-api.md) describes them. Money is kept as the decimal strings
 * the service sends: never parsed into a float.
 */

export type OperationName = 'sms.message.send' | 'sms.voice.verification.send';

/** Body of `sms.message.send`. Exactly one of `content` and `templateId`. */
export interface TextMessageRequest {
  readonly to: readonly string[];
  readonly signature: string;
  readonly content?: string;
  readonly templateId?: string;
  readonly templateData?: Readonly<Record<string, string>>;
}

/** Body of `sms.voice.verification.send`: one domestic callee (national number), 4 or 6 digits. */
export interface VoiceVerificationRequest {
  readonly to: string;
  readonly code: string;
}

export type ProviderRequest =
  | { readonly operation: 'sms.message.send'; readonly body: TextMessageRequest }
  | { readonly operation: 'sms.voice.verification.send'; readonly body: VoiceVerificationRequest };

/** One report per recipient (spec 2.4); identical for both operations. */
export interface MessageReport {
  readonly id: string;
  readonly to: string;
  readonly regionCode: string;
  readonly countryCode: string;
  readonly messageCount: number;
  readonly status: string;
  readonly upstream: string;
  readonly price: string;
}

/** `data` of a successful answer (spec 2.2 / 2.3). Amounts are decimal strings as received. */
export interface SendResult {
  readonly recipients: number;
  readonly messageCount: number;
  readonly totalAmount: string;
  readonly payAmount: string;
  /** Not listed for voice in the spec's table but present in its example; "0.000000" stands in when absent. */
  readonly virtualAmount: string;
  readonly messages: readonly MessageReport[];
}

export interface ProviderSuccess {
  readonly result: SendResult;
  /** The service's `x-uni-request-id`, when it sent one. */
  readonly requestId: string | undefined;
  /** Number of HTTP attempts made (1 = no retry). */
  readonly attempts: number;
}

/**
 * How a failed call is to be treated everywhere else (worker, metrics, results).
 * - `transport`: the request surely did not reach the service (refused, DNS, connect timeout). Retryable.
 * - `throttled`: 429 or 503. Retryable, `Retry-After` honoured.
 * - `ambiguous`: may have been sent (timeout after sending, reset, 500/502/504). Retry is a policy choice.
 * - `business`: HTTP 400 with a non-`0` code. Never retried.
 * - `insufficient-funds`: business error 105400. Never retried; the worker pauses.
 * - `configuration`: business error 101301 (no valid upstream). Never retried.
 * - `malformed`: the answer is not the envelope the spec describes. Not retried (it may have been sent).
 */
export type FailureClass = 'transport' | 'throttled' | 'ambiguous' | 'business' | 'insufficient-funds' | 'configuration' | 'malformed';

/** What a failed attempt (ClassifiedFailure) and the error a call ends with (ProviderErrorFields) both say of the failure. */
export interface FailureFields {
  readonly failureClass: FailureClass;
  /** The service's code when it sent one, else a stable PROVIDER_* code of ours. */
  readonly code: string;
  /** The service's message, or '' when it sent none. */
  readonly providerMessage: string;
  readonly httpStatus?: number | undefined;
  readonly requestId?: string | undefined;
  readonly retryAfterMs?: number | undefined;
  /** The service sent an HTTP answer (any status, even 5xx or a malformed body): the failure is the service's, not the transport's. */
  readonly answered?: boolean;
}

/** Reported after every HTTP attempt, for metrics and logs. */
export interface AttemptInfo {
  readonly operation: OperationName;
  /** 1-based attempt number within the call. */
  readonly attempt: number;
  readonly durationMs: number;
  readonly outcome: 'success' | FailureClass;
  readonly httpStatus?: number | undefined;
  /** The provider's or our PROVIDER_* code, for failures. */
  readonly code?: string | undefined;
  /** The service's `x-uni-request-id` of this attempt's answer, when it sent one (bounded, scrubbed of the key id and secret). */
  readonly requestId?: string | undefined;
}

export interface ProviderClient {
  /**
   * `correlationId` is sent as the `X-Correlation-Id` header so the service side can tie requests
   * to commands. `deadline` (epoch ms, e.g. the command's expiresAt): no retry starts at or after
   * it (the error's stopReason is then `deadline`). `onAttempt` observes this call's attempts
   * (after the client's own observer): how a command's trace gets one span per HTTP attempt.
   */
  send(
    request: ProviderRequest,
    options?: { signal?: AbortSignal; correlationId?: string; deadline?: number; onAttempt?: (info: AttemptInfo) => void },
  ): Promise<ProviderSuccess>;
  /** Frees the sockets and aborts every call still in flight (code PROVIDER_ABORTED); later calls fail at once the same way. */
  close(): void;
}
