import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { bareRecordLane } from '../../helpers/command-records.ts';
import { DEAD_LETTER_CODES } from '../../../src/contracts/dead-letter.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../../src/contracts/index.ts';
import { CommandTracer } from '../../../src/observability/command-span.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { handleRecord, type RecordHandlerDeps } from '../../../src/worker/send/record-handler.ts';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const source = { topic: 'cmds', partition: 0, offset: '7' };
const poison = { key: null, value: Buffer.from('{"not":"avro"}'), headers: { traceparent: `00-${TRACE}-b7ad6b7169203331-01` } };

const lane = bareRecordLane;

function deps(tracer?: CommandTracer): RecordHandlerDeps {
  return {
    codec: {
      decode: async () => ({ ok: false, code: DEAD_LETTER_CODES.notConfluentFraming, message: 'not framed' }),
      encodeResult: async () => Buffer.alloc(0),
      encodeDeadLetter: async () => Buffer.from('dead letter'),
    },
    sender: undefined as unknown as GuardedSender,
    policy: DEFAULT_VALIDATION_POLICY,
    inDoubtPolicy: 'report',
    maxRecordBytes: 1_000_000,
    maxCommandBytes: 1_000_000,
    tracer,
  };
}

describe('handleRecord with tracing', () => {
  it("a dead letter carries the command span's context and the span ends in ERROR with the dead-letter code", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = new CommandTracer({ tracer: provider.getTracer('t'), consumerGroup: 'g', providerBaseUrl: 'http://p', signed: false });
    const outcome = await handleRecord(poison, source, deps(tracer), new AbortController().signal, lane);
    const [span] = exporter.getFinishedSpans();
    expect(outcome.kind).toBe('dead-letter');
    expect(outcome.kind === 'dead-letter' && outcome.headers).toEqual({ traceparent: `00-${TRACE}-${span?.spanContext().spanId}-01` });
    expect(span?.attributes).toMatchObject({ 'sms_worker.command.outcome': 'DEAD_LETTER', 'error.type': DEAD_LETTER_CODES.notConfluentFraming });
  });

  it('every log line written while a traced command is handled carries its trace_id and span_id; lines outside carry neither', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = new CommandTracer({ tracer: provider.getTracer('t'), consumerGroup: 'g', providerBaseUrl: 'http://p', signed: false });
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', {}, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const logging = deps(tracer);
    const decode = logging.codec.decode;
    const withLog: RecordHandlerDeps = {
      ...logging,
      codec: {
        ...logging.codec,
        // A line the handling writes (as the registry's retries, the sender's pauses and the client do), after an await.
        decode: async (value) => {
          await new Promise((resolve) => setImmediate(resolve));
          log.info('decoding');
          return decode(value);
        },
      },
    };
    log.info('before');
    await handleRecord(poison, source, withLog, new AbortController().signal, lane);
    log.info('after');
    const [span] = exporter.getFinishedSpans();
    expect(lines.map((l) => [l['msg'], l['trace_id'], l['span_id']])).toEqual([
      ['before', undefined, undefined],
      ['decoding', TRACE, span?.spanContext().spanId],
      ['after', undefined, undefined],
    ]);
  });

  it('without a tracer, adds no headers', async () => {
    const outcome = await handleRecord(poison, source, deps(), new AbortController().signal, lane);
    expect(outcome.kind === 'dead-letter' && 'headers' in outcome).toBe(false);
  });
});
