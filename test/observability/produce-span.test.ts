import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/logger.ts';
import { ProduceTracer } from '../../src/observability/produce-span.ts';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const off = { enabled: false, why: 'test' } as const;

describe('produce spans (no exporter)', () => {
  it('continue TRACEPARENT/TRACESTATE from the environment: same trace, a new span id in the headers', async () => {
    const tracer = await ProduceTracer.start(off, { TRACEPARENT: `00-${TRACE}-${PARENT}-01`, TRACESTATE: 'ci=7' }, createLogger('silent'));
    expect(tracer.continued).toBe(TRACE);
    const span = tracer.span('sms.commands', 'c1');
    span.end();
    expect(span.traceId).toBe(TRACE);
    expect(span.headers['traceparent']).toMatch(new RegExp(`^00-${TRACE}-(?!${PARENT})[0-9a-f]{16}-01$`));
    expect(span.headers['tracestate']).toBe('ci=7');
    await tracer.shutdown();
  });

  it('start a new, sampled trace per command when the environment gives none', async () => {
    const tracer = await ProduceTracer.start(off, {}, createLogger('silent'));
    expect(tracer.continued).toBeUndefined();
    const [a, b] = [tracer.span('t', 'a'), tracer.span('t', 'b')];
    expect(a.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(a.traceId).not.toBe(b.traceId);
    expect(a.headers['traceparent']).toMatch(new RegExp(`^00-${a.traceId}-[0-9a-f]{16}-01$`));
    await tracer.shutdown();
  });
});
