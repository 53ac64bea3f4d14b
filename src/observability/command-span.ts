/**
 * The spans of one command: a CONSUMER span `process <topic>` for the record (OTel messaging
 * conventions) and a CLIENT span per HTTP attempt to the messaging service (OTel HTTP
 * conventions), built from the provider client's attempt reports rather than by instrumenting got
 * (which would add a span per socket event and know nothing of retries).
 *
 * The producer's context, from the record's `traceparent`, is both the span's **parent** (so the
 * producer, the send and the result's readers share one trace) and its **link** (what the
 * messaging conventions prescribe for a process span; a backend that ignores parents across
 * services still relates them). A record without one starts a trace.
 *
 * Nothing secret becomes an attribute: the URL is the service's base URL and the action, with the
 * access key id (and, when requests are signed, the signature) written as REDACTED; no
 * recipient, content or code either.
 */
import { performance } from 'node:perf_hooks';
import { isSpanContextValid, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_REQUEST_RESEND_COUNT,
  ATTR_HTTP_RESPONSE_HEADER,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import type { RawHeaders } from '../contracts/dead-letter.ts';
import type { SourcePosition } from '../contracts/result.ts';
import type { AttemptInfo } from '../provider/options.ts';
import { REQUEST_ID_HEADER } from '../provider/call-state.ts';
import type { LogTrace } from './log-trace.ts';
import { contextFromHeaders, headersFromContext } from './trace-headers.ts';

/**
 * Messaging attribute names. They are still "development" in the semantic conventions, whose
 * README asks instrumentations to copy such names rather than import the incubating entry point
 * (it may change in a minor release).
 */
const MESSAGING = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  partition: 'messaging.destination.partition.id',
  offset: 'messaging.kafka.offset',
  group: 'messaging.consumer.group.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  bodySize: 'messaging.message.body.size',
} as const;

/** The worker's own attributes. */
export const COMMAND_ATTRIBUTES = {
  commandId: 'sms_worker.command.id',
  operation: 'sms_worker.command.operation',
  outcome: 'sms_worker.command.outcome',
  providerOperation: 'sms_worker.provider.operation',
  failureClass: 'sms_worker.provider.failure_class',
} as const;

/** How a record ended, for its span: a result's outcome, or DEAD_LETTER, DUPLICATE, ABANDONED. */
export interface CommandEnd {
  readonly outcome: string;
  /** The result's or dead letter's error code. */
  readonly code?: string | undefined;
  /** Whether processing failed (the span's status is then ERROR). */
  readonly failed: boolean;
}

export interface CommandTracerOptions {
  readonly tracer: Tracer;
  readonly consumerGroup: string;
  /** The messaging service's base URL (no credentials in it: they travel in the query). */
  readonly providerBaseUrl: string;
  /** Requests are HMAC-signed (the URL then also carries a signature). */
  readonly signed: boolean;
}

/** Starts the spans of commands; one per worker. */
export class CommandTracer {
  readonly #o: CommandTracerOptions;
  readonly #server: Attributes;
  readonly #query: string;
  readonly #base: string;

  constructor(options: CommandTracerOptions) {
    this.#o = options;
    const url = new URL(options.providerBaseUrl);
    url.username = '';
    url.password = '';
    this.#base = `${url.origin}${url.pathname.replace(/\/+$/, '')}/`;
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    this.#server = { [ATTR_SERVER_ADDRESS]: url.hostname, [ATTR_SERVER_PORT]: port };
    this.#query = `&accessKeyId=REDACTED${options.signed ? '&algorithm=hmac-sha256&timestamp=REDACTED&nonce=REDACTED&signature=REDACTED' : ''}`;
  }

  /** The span of one command record, under the producer's context its headers carry. */
  start(headers: RawHeaders | undefined, source: SourcePosition, bodySize: number | undefined): CommandSpan {
    const parent = contextFromHeaders(headers);
    const producer = trace.getSpanContext(parent);
    const attributes: Attributes = {
      [MESSAGING.system]: 'kafka',
      [MESSAGING.destination]: source.topic,
      [MESSAGING.partition]: String(source.partition),
      [MESSAGING.offset]: Number(source.offset),
      [MESSAGING.group]: this.#o.consumerGroup,
      [MESSAGING.operationType]: 'process',
      [MESSAGING.operationName]: 'process',
    };
    if (bodySize !== undefined) attributes[MESSAGING.bodySize] = bodySize;
    const span = this.#o.tracer.startSpan(
      `process ${source.topic}`,
      { kind: SpanKind.CONSUMER, attributes, links: producer === undefined ? [] : [{ context: producer }] },
      parent,
    );
    return new CommandSpan(span, trace.setSpan(parent, span), this);
  }

  /** One HTTP attempt, reported when it ended: its span is back-dated to when it started. */
  attempt(parent: Context, info: AttemptInfo): void {
    // The client measures attempts on the performance clock, as the SDK times spans: a number
    // below performance.now() is read by the SDK as a time on that clock.
    const end = performance.now();
    const attributes: Attributes = {
      ...this.#server,
      [ATTR_HTTP_REQUEST_METHOD]: 'POST',
      [ATTR_URL_FULL]: `${this.#base}?action=${info.operation}${this.#query}`,
      [COMMAND_ATTRIBUTES.providerOperation]: info.operation,
    };
    if (info.attempt > 1) attributes[ATTR_HTTP_REQUEST_RESEND_COUNT] = info.attempt - 1;
    if (info.httpStatus !== undefined) attributes[ATTR_HTTP_RESPONSE_STATUS_CODE] = info.httpStatus;
    if (info.requestId !== undefined) attributes[ATTR_HTTP_RESPONSE_HEADER(REQUEST_ID_HEADER)] = [info.requestId];
    if (info.outcome !== 'success') {
      attributes[ATTR_ERROR_TYPE] = info.code ?? info.outcome;
      attributes[COMMAND_ATTRIBUTES.failureClass] = info.outcome;
    }
    const span = this.#o.tracer.startSpan('POST', { kind: SpanKind.CLIENT, attributes, startTime: end - info.durationMs }, parent);
    if (info.outcome !== 'success') span.setStatus({ code: SpanStatusCode.ERROR, message: info.code ?? info.outcome });
    span.end(end);
  }
}

/** The span of one command while it is handled. */
export class CommandSpan {
  readonly #span: Span;
  readonly #context: Context;
  readonly #tracer: CommandTracer;
  #headers: Record<string, string> | undefined;

  constructor(span: Span, context: Context, tracer: CommandTracer) {
    this.#span = span;
    this.#context = context;
    this.#tracer = tracer;
  }

  /** The command was decoded: its id and operation. */
  identify(commandId: string, operation: string): void {
    this.#span.setAttributes({ [COMMAND_ATTRIBUTES.commandId]: commandId, [COMMAND_ATTRIBUTES.operation]: operation });
  }

  /** Observes the provider client's attempts for this command: one CLIENT span each. */
  readonly onAttempt = (info: AttemptInfo): void => {
    this.#tracer.attempt(this.#context, info);
  };

  /** The span's ids for log lines written while the command is processed (withLogTrace); none for an invalid context. */
  get logTrace(): LogTrace | undefined {
    const context = this.#span.spanContext();
    return isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : undefined;
  }

  /** The headers that carry this span's context into the records the command produced. */
  headers(): Readonly<Record<string, string>> {
    this.#headers ??= headersFromContext(this.#context);
    return this.#headers;
  }

  end(how: CommandEnd): void {
    this.#span.setAttribute(COMMAND_ATTRIBUTES.outcome, how.outcome);
    if (how.code !== undefined) this.#span.setAttribute(ATTR_ERROR_TYPE, how.code);
    if (how.failed) this.#span.setStatus({ code: SpanStatusCode.ERROR, message: how.code ?? how.outcome });
    this.#span.end();
  }

  /** Handling threw (a bug, not a record problem): the record is consumed again. */
  fail(error: Error): void {
    this.#span.recordException(error);
    this.#span.setStatus({ code: SpanStatusCode.ERROR, message: error.message.slice(0, 200) });
    this.#span.end();
  }
}
