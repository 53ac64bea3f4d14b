/**
 * The messaging-service client: one POST per attempt through got, retries through got's own
 * retry machinery (POST enabled, `calculateDelay` delegating to the pure decideRetry), every
 * outcome judged by classifyOutcome. Effects live here; the decisions live in classify.ts,
 * backoff.ts and signing.ts.
 *
 * Secrets: the URL (with accessKeyId and signature) exists only inside got. Nothing of got's
 * error objects is kept: the thrown ProviderError is built from copied fields, and any text
 * the service sends back is scrubbed of the key id and secret.
 */
import http from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import got from 'got';
import type { CancelableRequest, Got, Progress, Response, RetryObject } from 'got';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from './types.ts';
import { ABORTED_CODE, classifyOutcome, isRetryableClass } from './classify.ts';
import type { AttemptOutcome, ClassifiedFailure } from './classify.ts';
import { decideRetry } from './backoff.ts';
import type { RetryDecision } from './backoff.ts';
import { AMBIGUOUS_FAILURE_CLASSES, ProviderError } from './provider-error.ts';
import { redactText } from './redact.ts';
import { requestFunction } from './request-function.ts';
import { signingQuery } from './signing.ts';
import { resolveProviderOptions } from './options.ts';
import type { AttemptInfo, ProviderClientOptions, ResolvedProviderOptions } from './options.ts';
import { DEFAULT_USER_AGENT } from './user-agent.ts';
import { CallState, callOf, CONTEXT_KEY, failureOf, header, outcomeOfError, REQUEST_ID_HEADER, safeCall } from './call-state.ts';

export const CORRELATION_HEADER = 'x-correlation-id';
export { REQUEST_ID_HEADER };

/** `signal`, `correlationId` (sent as the `X-Correlation-Id` header) and `deadline` (epoch ms). */
export type SendOptions = NonNullable<Parameters<ProviderClient['send']>[1]>;

const STOP_REASONS: Record<Extract<RetryDecision, { retry: false }>['reason'], string> = {
  'not-retryable': '',
  'attempts-exhausted': '; retry attempts exhausted',
  'budget-exhausted': '; retry time budget exhausted',
  'retry-after-exceeds-budget': '; Retry-After exceeds the remaining retry budget',
  deadline: '; the command expires before a retry could start',
};

function plural(n: number): string {
  return `${n} attempt${n === 1 ? '' : 's'}`;
}

export function createProviderClient(options: ProviderClientOptions): ProviderClient {
  const config: ResolvedProviderOptions = resolveProviderOptions(options);
  const secrets = [config.accessKeyId, ...(config.accessKeySecret === undefined ? [] : [config.accessKeySecret])];
  // Keep-alive, LIFO so a burst reuses warm sockets and idle ones age out; sized for the in-flight target.
  // `timeout` closes an idle keep-alive socket before the server does (see PROVIDER_DEFAULTS.
  // freeSocketTimeoutMs): a request written to a socket the server is closing fails with an
  // ECONNRESET that we cannot tell from a reset after delivery (nodejs/node#47130), so it is ambiguous.
  // Node's agent only destroys *free* sockets on this timeout; sockets in use are timed by got.
  const agentOptions = {
    keepAlive: true,
    maxSockets: config.maxSockets,
    maxFreeSockets: config.maxSockets,
    scheduling: 'lifo',
    timeout: config.freeSocketTimeoutMs,
  } as const;
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  // Aborts every call in flight when the client is closed (shutdown): their commands are abandoned.
  const closing = new AbortController();
  const limitBytes = config.maxResponseBytes;
  const endpoint = config.baseUrl.href.replace(/\/+$/, '') + '/';

  const client: Got = got.extend({
    agent: agents,
    http2: false,
    request: requestFunction,
    followRedirect: false,
    throwHttpErrors: true,
    responseType: 'text',
    timeout: {
      lookup: config.connectTimeoutMs,
      connect: config.connectTimeoutMs,
      secureConnect: config.connectTimeoutMs,
      send: config.responseTimeoutMs,
      response: config.responseTimeoutMs,
      read: config.responseTimeoutMs,
    },
    headers: {
      'content-type': 'application/json;charset=utf-8',
      accept: 'application/json',
      'user-agent': config.userAgent ?? DEFAULT_USER_AGENT,
    },
    retry: {
      limit: config.retry.maxAttempts - 1,
      methods: ['POST'],
      // calculateDelay decides everything (enforceRetryRules is off); these lists are informative.
      statusCodes: [429, 500, 502, 503, 504],
      errorCodes: ['ETIMEDOUT', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN'],
      enforceRetryRules: false,
      calculateDelay: (retryObject) => {
        const call = callOf(retryObject.error.options.context);
        return call === undefined ? 0 : calculateDelay(call, retryObject);
      },
    },
    // The body is read with a byte cap, the way got's documentation limits downloads
    // ("Limiting download & upload size"): count the bytes as they arrive and cancel the call once
    // the answer (or its Content-Length) is over the cap, so at most the cap plus one chunk is held.
    handlers: [
      (gotOptions, next) => {
        const result = next(gotOptions);
        const call = callOf(gotOptions.context);
        if (call === undefined || gotOptions.isStream) return result;
        const pending = result as CancelableRequest<Response<string>>;
        // got emits `response` only once the body is read: take the head from the native request,
        // ahead of got's own listener (which reports the first progress, Content-Length included).
        void pending.on('request', (request: ClientRequest) => {
          request.prependOnceListener('response', (head: IncomingMessage) => {
            call.answerHead = { status: head.statusCode ?? 0, requestId: header(head.headers[REQUEST_ID_HEADER]) };
          });
        });
        void pending.on('downloadProgress', (progress: Progress) => {
          if (call.oversized) return;
          if (progress.transferred > limitBytes || (progress.total ?? 0) > limitBytes) {
            call.oversized = true;
            pending.cancel(`answer over ${limitBytes} bytes`);
          }
        });
        return result;
      },
    ],
    hooks: {
      beforeRequest: [
        (gotOptions) => {
          const call = callOf(gotOptions.context);
          if (call === undefined) return;
          call.attempts += 1;
          call.attemptStartedAt = performance.now();
          // Fresh timestamp and nonce per attempt: a retry must not look like a replay.
          if (config.accessKeySecret !== undefined && gotOptions.url instanceof URL) {
            const signed = signingQuery(config.accessKeyId, call.operation, config.accessKeySecret);
            for (const [key, value] of Object.entries(signed)) gotOptions.url.searchParams.set(key, value);
          }
        },
      ],
    },
  });

  function reportAttempt(call: CallState, outcome: 'success' | ClassifiedFailure, successRequestId?: string): void {
    if (call.reportedAttempt === call.attempts) return;
    call.reportedAttempt = call.attempts;
    const durationMs = performance.now() - call.attemptStartedAt;
    const rawRequestId = outcome === 'success' ? successRequestId : outcome.requestId;
    const requestId = rawRequestId === undefined ? undefined : redactText(rawRequestId, secrets);
    const info: AttemptInfo =
      outcome === 'success'
        ? { operation: call.operation, attempt: call.attempts, durationMs, outcome, httpStatus: 200, requestId }
        : {
            operation: call.operation,
            attempt: call.attempts,
            durationMs,
            outcome: outcome.failureClass,
            httpStatus: outcome.httpStatus,
            code: outcome.code,
            requestId,
          };
    safeCall(config.onAttempt, info);
    safeCall(call.onAttempt, info);
  }

  /** got's retry hook: classify the failed attempt, report it, and decide. 0 means "stop". */
  function calculateDelay(call: CallState, retryObject: RetryObject): number {
    const now = Date.now();
    const verdict = classifyOutcome(outcomeOfError(retryObject.error, call, limitBytes), call.operation, now);
    if (verdict.ok) return 0;
    // The failure this attempt replaces as the last one: if it may have reached the service, the
    // command may have been sent whatever the later attempts get.
    if (call.lastFailure !== undefined && AMBIGUOUS_FAILURE_CLASSES.has(call.lastFailure.failureClass)) call.earlierAttemptAmbiguous = true;
    call.lastFailure = verdict.failure;
    reportAttempt(call, verdict.failure);
    const decision = decideRetry({
      failureClass: verdict.failure.failureClass,
      retryAfterMs: verdict.failure.retryAfterMs,
      attemptsMade: call.attempts,
      elapsedMs: performance.now() - call.startedAt,
      untilDeadlineMs: call.deadline === undefined ? undefined : call.deadline - now,
      policy: config.retry,
      random: config.random,
    });
    call.lastDecision = decision;
    if (!decision.retry) return 0;
    safeCall(config.onRetry, {
      operation: call.operation,
      attempt: call.attempts,
      failureClass: verdict.failure.failureClass,
      code: verdict.failure.code,
      delayMs: decision.delayMs,
    });
    // got treats 0 as "do not retry"; a jittered 0 ms still means "retry now".
    return Math.max(1, decision.delayMs);
  }

  function toError(call: CallState, failure: ClassifiedFailure): ProviderError {
    const stopReason = call.lastDecision !== undefined && !call.lastDecision.retry ? call.lastDecision.reason : undefined;
    const stop = stopReason === undefined ? '' : STOP_REASONS[stopReason];
    const providerMessage = redactText(failure.providerMessage, secrets);
    const requestId = failure.requestId === undefined ? undefined : redactText(failure.requestId, secrets);
    const code = redactText(failure.code, secrets);
    const detail = redactText(failure.detail, secrets);
    const context = [
      failure.httpStatus === undefined ? undefined : `HTTP ${failure.httpStatus}`,
      requestId === undefined ? undefined : `request id ${requestId}`,
      plural(call.attempts),
    ].filter((part) => part !== undefined);
    return new ProviderError({
      operation: call.operation,
      code,
      message: `${call.operation} failed [${failure.failureClass}] ${code}: ${detail} (${context.join(', ')}${stop})`,
      providerMessage,
      failureClass: failure.failureClass,
      // An abort is the caller's decision, not a failure to retry.
      retryable: failure.code !== ABORTED_CODE && isRetryableClass(failure.failureClass, config.retry.retryAmbiguous),
      attempts: call.attempts,
      httpStatus: failure.httpStatus,
      requestId,
      retryAfterMs: failure.retryAfterMs,
      answered: failure.answered,
      stopReason,
      // Also the attempt judged before this failure, when this one was judged elsewhere (an abort, an answer read in full).
      earlierAttemptAmbiguous:
        call.earlierAttemptAmbiguous ||
        (call.lastFailure !== undefined && call.lastFailure !== failure && AMBIGUOUS_FAILURE_CLASSES.has(call.lastFailure.failureClass)),
    });
  }

  async function send(request: ProviderRequest, sendOptions: SendOptions = {}): Promise<ProviderSuccess> {
    const { correlationId, deadline } = sendOptions;
    const signal = sendOptions.signal === undefined ? closing.signal : AbortSignal.any([closing.signal, sendOptions.signal]);
    const call = new CallState(request.operation, signal, deadline, sendOptions.onAttempt);
    if (signal.aborted) throw toError(call, failureOf(classifyOutcome({ kind: 'aborted' }, call.operation, Date.now())));
    const url = `${endpoint}?action=${encodeURIComponent(request.operation)}&accessKeyId=${encodeURIComponent(config.accessKeyId)}`;

    let response;
    try {
      response = await client.post(url, {
        body: JSON.stringify(request.body),
        context: { [CONTEXT_KEY]: call },
        ...(correlationId === undefined ? {} : { headers: { [CORRELATION_HEADER]: correlationId } }),
        signal,
      });
    } catch (error) {
      // Normally calculateDelay has already judged the final attempt; an abort (or a failure got
      // raised outside its retry path) is judged here, from the same pure function.
      const judged = !signal.aborted && !call.oversized && call.reportedAttempt === call.attempts ? call.lastFailure : undefined;
      const failure = judged ?? failureOf(classifyOutcome(outcomeOfError(error, call, limitBytes), call.operation, Date.now()));
      reportAttempt(call, failure);
      throw toError(call, failure);
    }

    // A body whose last chunk took it over the cap can still resolve: it is over the cap all the same.
    const outcome: AttemptOutcome =
      call.oversized || Buffer.byteLength(response.body) > limitBytes
        ? { kind: 'oversized', status: response.statusCode, requestId: header(response.headers[REQUEST_ID_HEADER]), limitBytes }
        : {
            kind: 'response',
            status: response.statusCode,
            body: response.body,
            retryAfter: header(response.headers['retry-after']),
            requestId: header(response.headers[REQUEST_ID_HEADER]),
          };
    const verdict = classifyOutcome(outcome, call.operation, Date.now());
    if (!verdict.ok) {
      reportAttempt(call, verdict.failure);
      throw toError(call, verdict.failure);
    }
    reportAttempt(call, 'success', verdict.requestId);
    return { result: verdict.result, requestId: verdict.requestId, attempts: call.attempts };
  }

  return {
    send,
    close(): void {
      closing.abort(new Error('provider client closed'));
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
