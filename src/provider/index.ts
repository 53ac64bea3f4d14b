export type * from './types.ts';
export { createProviderClient, CORRELATION_HEADER, REQUEST_ID_HEADER } from './client.ts';
export type { SendOptions } from './client.ts';
export { ProviderError, isProviderError } from './provider-error.ts';
export type { ProviderErrorFields } from './provider-error.ts';
export {
  classifyOutcome,
  isRetryableClass,
  businessClassOf,
  INSUFFICIENT_FUNDS_CODE,
  NO_UPSTREAM_CODE,
  ABORTED_CODE,
  MAX_PROVIDER_MESSAGE,
  MAX_REQUEST_ID,
} from './classify.ts';
export type { AttemptOutcome, Classification, ClassifiedFailure } from './classify.ts';
export { backoffCeiling, fullJitterDelay, decideRetry } from './backoff.ts';
export type { RetryPolicy, RetryDecision, RetryInput, StopReason } from './backoff.ts';
export { parseRetryAfter, MAX_RETRY_AFTER_MS } from './retry-after.ts';
export { parseEnvelope, DECIMAL_PATTERN, ZERO_AMOUNT, MAX_COUNT, MAX_REPORT_TEXT, MAX_CODE_LENGTH } from './envelope.ts';
export type { ParsedEnvelope } from './envelope.ts';
export { computeSignature, stringToSign, signingQuery, createNonce, SIGNING_ALGORITHM } from './signing.ts';
export { redactUrl, redactText, REDACTED } from './redact.ts';
export {
  resolveProviderOptions,
  DEFAULT_RETRY_POLICY,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_RESPONSE_TIMEOUT_MS,
  DEFAULT_MAX_SOCKETS,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_FREE_SOCKET_TIMEOUT_MS,
} from './options.ts';
export type { ProviderClientOptions, ResolvedProviderOptions, AttemptInfo, RetryInfo } from './options.ts';
export { DEFAULT_USER_AGENT } from './user-agent.ts';
