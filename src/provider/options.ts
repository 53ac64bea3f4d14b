/**
 * Options of the messaging-service client, their defaults and their validation (fail fast, every
 * problem listed at once). Everything is injected; nothing here reads the environment.
 */
import { PROVIDER_DEFAULTS } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { AttemptInfo, FailureClass, OperationName } from './types.ts';
import type { RetryPolicy } from './backoff.ts';

// Declared in types.ts (ProviderClient.send takes an observer of it); re-exported with its sibling RetryInfo.
export type { AttemptInfo } from './types.ts';

/** Reported when a retry is scheduled, before waiting `delayMs`. */
export interface RetryInfo {
  readonly operation: OperationName;
  /** The attempt that failed (the retry will be attempt + 1). */
  readonly attempt: number;
  readonly failureClass: FailureClass;
  readonly code: string;
  readonly delayMs: number;
}

export interface ProviderClientOptions {
  /** Service origin (and optional path prefix), e.g. `https://uni.apistd.com`. */
  readonly baseUrl: string;
  readonly accessKeyId: string;
  /** When present, every attempt is HMAC-signed (see signing.ts). */
  readonly accessKeySecret?: string | undefined;
  /** Limit for each of DNS lookup, TCP connect and TLS handshake. @defaultValue PROVIDER_DEFAULTS.connectTimeoutMs */
  readonly connectTimeoutMs?: number;
  /**
   * Limit for sending the body, for the first response byte and for reading the whole body (an
   * answer that never ends stops here). @defaultValue PROVIDER_DEFAULTS.responseTimeoutMs
   */
  readonly responseTimeoutMs?: number;
  /** Largest answer body read; a bigger one is malformed. @defaultValue PROVIDER_DEFAULTS.maxResponseBytes */
  readonly maxResponseBytes?: number;
  readonly retry?: Partial<RetryPolicy>;
  /** Sockets per origin; size it to the worker's in-flight target. @defaultValue PROVIDER_DEFAULTS.maxSockets */
  readonly maxSockets?: number;
  /** Idle keep-alive sockets are closed after this long. @defaultValue PROVIDER_DEFAULTS.freeSocketTimeoutMs */
  readonly freeSocketTimeoutMs?: number;
  /** @defaultValue `sms-worker/<package version>` */
  readonly userAgent?: string;
  readonly onAttempt?: (info: AttemptInfo) => void;
  readonly onRetry?: (info: RetryInfo) => void;
  /** Jitter source; injectable so tests are deterministic. @defaultValue Math.random */
  readonly random?: () => number;
}

/** The worker's defaults (src/config/schema.ts is their one source; docs/configuration.md lists them). */
export const DEFAULT_RETRY_POLICY = {
  maxAttempts: PROVIDER_DEFAULTS.retryAttempts,
  budgetMs: PROVIDER_DEFAULTS.retryBudgetMs,
  baseDelayMs: PROVIDER_DEFAULTS.retryBaseMs,
  maxDelayMs: PROVIDER_DEFAULTS.retryMaxDelayMs,
  retryAmbiguous: PROVIDER_DEFAULTS.retryAmbiguous,
} as const satisfies RetryPolicy;

export const DEFAULT_CONNECT_TIMEOUT_MS = PROVIDER_DEFAULTS.connectTimeoutMs;
export const DEFAULT_RESPONSE_TIMEOUT_MS = PROVIDER_DEFAULTS.responseTimeoutMs;
export const DEFAULT_MAX_RESPONSE_BYTES = PROVIDER_DEFAULTS.maxResponseBytes;
export const DEFAULT_MAX_SOCKETS = PROVIDER_DEFAULTS.maxSockets;
export const DEFAULT_FREE_SOCKET_TIMEOUT_MS = PROVIDER_DEFAULTS.freeSocketTimeoutMs;

export interface ResolvedProviderOptions {
  readonly baseUrl: URL;
  readonly accessKeyId: string;
  readonly accessKeySecret: string | undefined;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  readonly maxResponseBytes: number;
  readonly retry: RetryPolicy;
  readonly maxSockets: number;
  readonly freeSocketTimeoutMs: number;
  readonly userAgent: string | undefined;
  readonly onAttempt: ((info: AttemptInfo) => void) | undefined;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
  readonly random: () => number;
}

function positiveInt(problems: string[], name: string, value: number, min = 1): void {
  if (!Number.isInteger(value) || value < min) problems.push(`${name} must be an integer ≥ ${min} (got ${value})`);
}

export function resolveProviderOptions(options: ProviderClientOptions): ResolvedProviderOptions {
  const problems: string[] = [];
  let baseUrl: URL | undefined;
  try {
    baseUrl = new URL(options.baseUrl);
    if (baseUrl.protocol !== 'http:' && baseUrl.protocol !== 'https:') problems.push('baseUrl must be http(s)');
    if (baseUrl.search !== '' || baseUrl.hash !== '') problems.push('baseUrl must not carry a query or fragment');
  } catch {
    problems.push('baseUrl is not a valid URL');
  }
  if (options.accessKeyId.trim() === '') problems.push('accessKeyId must not be empty');
  if (options.accessKeySecret !== undefined && options.accessKeySecret === '') {
    problems.push('accessKeySecret must not be empty when given');
  }
  const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const responseTimeoutMs = options.responseTimeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS;
  const maxSockets = options.maxSockets ?? DEFAULT_MAX_SOCKETS;
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const freeSocketTimeoutMs = options.freeSocketTimeoutMs ?? DEFAULT_FREE_SOCKET_TIMEOUT_MS;
  positiveInt(problems, 'connectTimeoutMs', connectTimeoutMs);
  positiveInt(problems, 'responseTimeoutMs', responseTimeoutMs);
  positiveInt(problems, 'maxResponseBytes', maxResponseBytes);
  positiveInt(problems, 'maxSockets', maxSockets);
  positiveInt(problems, 'freeSocketTimeoutMs', freeSocketTimeoutMs);
  positiveInt(problems, 'retry.maxAttempts', retry.maxAttempts);
  positiveInt(problems, 'retry.budgetMs', retry.budgetMs, 0);
  positiveInt(problems, 'retry.baseDelayMs', retry.baseDelayMs, 0);
  positiveInt(problems, 'retry.maxDelayMs', retry.maxDelayMs, 0);
  if (retry.maxDelayMs < retry.baseDelayMs) problems.push('retry.maxDelayMs must be ≥ retry.baseDelayMs');
  if (problems.length > 0 || baseUrl === undefined) throw new ConfigError(problems.map((p) => `provider: ${p}`));
  return {
    baseUrl,
    accessKeyId: options.accessKeyId,
    accessKeySecret: options.accessKeySecret,
    connectTimeoutMs,
    responseTimeoutMs,
    maxResponseBytes,
    retry,
    maxSockets,
    freeSocketTimeoutMs,
    userAgent: options.userAgent,
    onAttempt: options.onAttempt,
    onRetry: options.onRetry,
    random: options.random ?? Math.random,
  };
}
