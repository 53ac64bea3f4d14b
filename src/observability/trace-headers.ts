/**
 * W3C Trace Context (`traceparent`, `tracestate`) in Kafka record headers: the carriers the
 * OpenTelemetry propagator reads and writes. The propagator does the parsing and validation; this
 * only says how headers are looked up, and caps what it hands over.
 */
import { ROOT_CONTEXT, trace, type Context, type TextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { RawHeaders } from '../contracts/dead-letter.ts';

/**
 * Longest header value read, in bytes: `traceparent` is 55 characters in version 00 (later
 * versions may append fields, hence the margin); `tracestate` is at most 512 characters, the
 * length W3C Trace Context requires vendors to propagate. A longer value is ignored (a command
 * with an oversized `traceparent` starts a trace of its own), so a record cannot make the
 * propagator parse megabytes.
 */
export const TRACE_HEADER_LIMITS: Readonly<Record<string, number>> = { traceparent: 256, tracestate: 512 };

const propagator = new W3CTraceContextPropagator();

/** The first value of a header, as text, if it is within its limit. */
const headerGetter: TextMapGetter<RawHeaders | undefined> = {
  keys: (carrier) => (carrier === undefined ? [] : Object.keys(carrier)),
  get: (carrier, key) => {
    const raw = carrier?.[key];
    const first = Array.isArray(raw) ? (raw as readonly (string | Uint8Array)[])[0] : (raw as string | Uint8Array | undefined);
    if (first === undefined) return undefined;
    const limit = TRACE_HEADER_LIMITS[key] ?? 0;
    if ((typeof first === 'string' ? Buffer.byteLength(first) : first.byteLength) > limit) return undefined;
    return typeof first === 'string' ? first : Buffer.from(first.buffer, first.byteOffset, first.byteLength).toString('utf8');
  },
};

/** The trace context a record's headers carry (the root context when they carry none, or a malformed one). */
export function contextFromHeaders(headers: RawHeaders | undefined): Context {
  if (headers === undefined) return ROOT_CONTEXT;
  return propagator.extract(ROOT_CONTEXT, headers, headerGetter);
}

/** `traceparent` (and `tracestate` when there is one) of the context's span, as record headers. */
export function headersFromContext(context: Context): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagator.inject(context, carrier, {
    set: (target, key, value) => {
      target[key] = value;
    },
  });
  return carrier;
}

/** The trace id a record's headers carry, if any (for `tail --pretty`). */
export function traceIdOf(headers: RawHeaders | undefined): string | undefined {
  return trace.getSpanContext(contextFromHeaders(headers))?.traceId;
}
