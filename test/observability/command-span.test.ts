import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { CommandTracer } from '../../src/observability/command-span.ts';
import { contextFromHeaders, headersFromContext, traceIdOf } from '../../src/observability/trace-headers.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT = 'b7ad6b7169203331';
const source = { topic: 'sms.commands', partition: 3, offset: '1042' };

function setUp(signed = false): { tracer: CommandTracer; spans: () => ReadableSpan[] } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = new CommandTracer({
    tracer: provider.getTracer('test'),
    consumerGroup: 'sms-worker',
    providerBaseUrl: 'https://user:pw@uni.example.com:8443/api/',
    signed,
  });
  return { tracer, spans: () => exporter.getFinishedSpans() };
}

describe('command spans', () => {
  it('a record with a traceparent: CONSUMER span `process <topic>` whose parent and link are the producer, with the messaging attributes', () => {
    const { tracer, spans } = setUp();
    const span = tracer.start({ traceparent: Buffer.from(`00-${TRACE}-${PARENT}-01`), tracestate: 'acme=1' }, source, 321);
    span.identify('c1', 'text');
    span.end({ outcome: 'SENT', failed: false });
    const [done] = spans();
    expect(done?.name).toBe('process sms.commands');
    expect(done?.kind).toBe(SpanKind.CONSUMER);
    expect(done?.spanContext().traceId).toBe(TRACE);
    expect(done?.parentSpanContext?.spanId).toBe(PARENT);
    expect(done?.links.map((l) => l.context.spanId)).toEqual([PARENT]);
    expect(done?.attributes).toEqual({
      'messaging.system': 'kafka',
      'messaging.destination.name': 'sms.commands',
      'messaging.destination.partition.id': '3',
      'messaging.kafka.offset': 1042,
      'messaging.consumer.group.name': 'sms-worker',
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'messaging.message.body.size': 321,
      'sms_worker.command.id': 'c1',
      'sms_worker.command.operation': 'text',
      'sms_worker.command.outcome': 'SENT',
    });
    expect(done?.status.code).toBe(SpanStatusCode.UNSET);
    // The result's headers continue the trace from this span, tracestate kept.
    expect(span.headers()).toEqual({ traceparent: `00-${TRACE}-${done?.spanContext().spanId}-01`, tracestate: 'acme=1' });
  });

  it.each([
    ['none', undefined],
    ['a malformed one', { traceparent: 'not-a-traceparent' }],
    ['one over its 256-byte limit', { traceparent: `00-${TRACE}-${PARENT}-01${'-x'.repeat(200)}` }],
  ])('a record with %s starts a trace: no parent, no link', (_what, headers) => {
    const { tracer, spans } = setUp();
    tracer.start(headers, source, undefined).end({ outcome: 'SENT', failed: false });
    const [done] = spans();
    expect(done?.parentSpanContext).toBeUndefined();
    expect(done?.links).toEqual([]);
    expect(done?.spanContext().traceId).not.toBe(TRACE);
  });

  it('FAILED, UNKNOWN and dead letters end in ERROR with the code as error.type', () => {
    const { tracer, spans } = setUp();
    tracer.start(undefined, source, undefined).end({ outcome: 'UNKNOWN', code: 'PROVIDER_TIMEOUT', failed: true });
    const [done] = spans();
    expect(done?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'PROVIDER_TIMEOUT' });
    expect(done?.attributes['error.type']).toBe('PROVIDER_TIMEOUT');
  });

  it('one CLIENT span per attempt, child of the command span, back-dated by its duration, without any credential in url.full', () => {
    const { tracer, spans } = setUp(true);
    const span = tracer.start(undefined, source, undefined);
    span.onAttempt({
      operation: 'sms.message.send',
      attempt: 1,
      durationMs: 40,
      outcome: 'throttled',
      httpStatus: 503,
      code: 'PROVIDER_UNAVAILABLE',
      requestId: 'r1',
    });
    span.onAttempt({ operation: 'sms.message.send', attempt: 2, durationMs: 25, outcome: 'success', httpStatus: 200, requestId: 'r2' });
    span.end({ outcome: 'SENT', failed: false });
    const [failed, succeeded, command] = spans();
    for (const attempt of [failed, succeeded]) {
      expect(attempt?.name).toBe('POST');
      expect(attempt?.kind).toBe(SpanKind.CLIENT);
      expect(attempt?.parentSpanContext?.spanId).toBe(command?.spanContext().spanId);
      expect(attempt?.attributes['url.full']).toBe(
        'https://uni.example.com:8443/api/?action=sms.message.send&accessKeyId=REDACTED&algorithm=hmac-sha256&timestamp=REDACTED&nonce=REDACTED&signature=REDACTED',
      );
    }
    expect(failed?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': 'uni.example.com',
      'server.port': 8443,
      'http.response.status_code': 503,
      'error.type': 'PROVIDER_UNAVAILABLE',
      'sms_worker.provider.failure_class': 'throttled',
      'http.response.header.x-uni-request-id': ['r1'],
    });
    expect(failed?.attributes['http.request.resend_count']).toBeUndefined();
    expect(failed?.status.code).toBe(SpanStatusCode.ERROR);
    expect(succeeded?.attributes).toMatchObject({
      'http.response.status_code': 200,
      'http.request.resend_count': 1,
      'http.response.header.x-uni-request-id': ['r2'],
    });
    expect(succeeded?.status.code).toBe(SpanStatusCode.UNSET);
    // Back-dated: each span lasts the attempt's measured duration.
    const millis = (s: ReadableSpan | undefined): number => (s === undefined ? NaN : s.duration[0] * 1e3 + s.duration[1] / 1e6);
    expect(millis(failed)).toBeCloseTo(40, 0);
    expect(millis(succeeded)).toBeCloseTo(25, 0);
  });

  it('a handler that throws ends the span in ERROR with the exception', () => {
    const { tracer, spans } = setUp();
    tracer.start(undefined, source, undefined).fail(new Error('bug'));
    const [done] = spans();
    expect(done?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'bug' });
    expect(done?.events.map((e) => e.name)).toEqual(['exception']);
  });
});

describe('trace headers', () => {
  it('read Kafka header values as strings, buffers or arrays; write traceparent (and tracestate)', () => {
    expect(traceIdOf({ traceparent: [Buffer.from(`00-${TRACE}-${PARENT}-01`)] })).toBe(TRACE);
    expect(traceIdOf({ traceparent: new Uint8Array(Buffer.from(`00-${TRACE}-${PARENT}-00`)) })).toBe(TRACE);
    expect(traceIdOf({})).toBeUndefined();
    expect(headersFromContext(contextFromHeaders({ traceparent: `00-${TRACE}-${PARENT}-01` }))).toEqual({ traceparent: `00-${TRACE}-${PARENT}-01` });
  });

  it('ignore a tracestate over 512 bytes', () => {
    const context = contextFromHeaders({ traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: `a=${'x'.repeat(600)}` });
    expect(headersFromContext(context)).toEqual({ traceparent: `00-${TRACE}-${PARENT}-01` });
  });
});
