/**
 * The spans of `sms-worker produce`: one PRODUCER span `send <topic>` per command, whose context
 * goes into the record's `traceparent`/`tracestate` headers, so the worker's span of that command
 * continues the trace. The trace is the one given in the environment (`TRACEPARENT` and
 * `TRACESTATE`, the OpenTelemetry convention for passing context to a process: a script or CI
 * job that is itself traced), else a new one per command.
 *
 * Without an OTLP endpoint the spans are still made by the SDK (so the ids and the sampling
 * decision are real) but exported nowhere: the records carry a trace either way.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config/tracing.ts';
import type { Logger } from './logger.ts';
import { COMMAND_ATTRIBUTES } from './command-span.ts';
import { headersFromContext, TRACE_HEADER_LIMITS } from './trace-headers.ts';
import { startTracing } from './tracing.ts';

/** A producer span of one command: the headers to publish with, its trace id, and its end. */
export interface PublishSpan {
  readonly headers: Readonly<Record<string, string>>;
  readonly traceId: string;
  end(error?: Error): void;
}

/** The context given in the environment (upper-case names, as the convention has them), within the header limits. */
export function contextFromEnvironment(env: Readonly<Record<string, string | undefined>>): Context {
  return new W3CTraceContextPropagator().extract(ROOT_CONTEXT, env, {
    keys: () => ['traceparent', 'tracestate'],
    get: (carrier, key) => {
      const value = carrier[key.toUpperCase()];
      return value === undefined || Buffer.byteLength(value) > (TRACE_HEADER_LIMITS[key] ?? 0) ? undefined : value;
    },
  });
}

export class ProduceTracer {
  readonly #tracer: Tracer;
  readonly #parent: Context;
  readonly #shutdown: () => Promise<void>;

  private constructor(tracer: Tracer, parent: Context, shutdown: () => Promise<void>) {
    this.#tracer = tracer;
    this.#parent = parent;
    this.#shutdown = shutdown;
  }

  static async start(settings: TracingSettings, env: Readonly<Record<string, string | undefined>>, log: Logger): Promise<ProduceTracer> {
    const exporting = await startTracing(settings, log, 'sms-worker-produce');
    if (exporting !== undefined) return new ProduceTracer(exporting.tracer, contextFromEnvironment(env), () => exporting.shutdown());
    const local = new BasicTracerProvider();
    return new ProduceTracer(local.getTracer('sms-worker-produce'), contextFromEnvironment(env), () => local.shutdown());
  }

  /** The trace id of the environment's context, if one was given. */
  get continued(): string | undefined {
    return trace.getSpanContext(this.#parent)?.traceId;
  }

  span(topic: string, commandId: string): PublishSpan {
    const span = this.#tracer.startSpan(
      `send ${topic}`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'kafka',
          'messaging.destination.name': topic,
          'messaging.operation.type': 'send',
          'messaging.operation.name': 'send',
          [COMMAND_ATTRIBUTES.commandId]: commandId,
        },
      },
      this.#parent,
    );
    return {
      headers: headersFromContext(trace.setSpan(this.#parent, span)),
      traceId: span.spanContext().traceId,
      end: (error) => {
        if (error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message.slice(0, 200) });
        span.end();
      },
    };
  }

  /** Exports what was made (when exporting) and stops. */
  shutdown(): Promise<void> {
    return this.#shutdown();
  }
}
