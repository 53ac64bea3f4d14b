import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandResult } from '../../src/contracts/result.ts';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { traceIdOf } from '../../src/observability/trace-headers.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, testKafka, testRegistry } from '../helpers/kafka.ts';
import { OTLP_SPAN_KIND, OTLP_STATUS, OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { publisherFor, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const ACCESS_KEY_ID = 'trace-test-key-id-0f9e';
const ACCESS_KEY_SECRET = 'trace-test-secret-77c1';

const sandbox = useSandbox({ accessKeyId: ACCESS_KEY_ID, accessKeySecret: ACCESS_KEY_SECRET });
let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver.close();
});
const cleanups = useCleanups();

interface ReadWithHeaders {
  readonly result: CommandResult;
  readonly traceparent: string | undefined;
}

async function readResults(topic: string): Promise<Map<string, ReadWithHeaders>> {
  const seen = new Map<string, ReadWithHeaders>();
  const reader = new ResultReader(testKafka(), testRegistry(), topic);
  cleanups.add(() => reader.stop());
  await within(
    45_000,
    'starting the result reader',
    reader.start(({ result, headers }) => void seen.set(result.commandId, { result, traceparent: headers?.['traceparent']?.toString() }), {
      fromBeginning: true,
    }),
  );
  return seen;
}

function spanOf(spans: readonly ReceivedSpan[], predicate: (span: ReceivedSpan) => boolean, what: string): ReceivedSpan {
  const found = spans.filter(predicate);
  expect(found, what).toHaveLength(1);
  return found[0] as ReceivedSpan;
}

describe('tracing: a command traced from its producer through the send to its result', () => {
  it('exports a process span (parent and link = the producer), a client span per HTTP attempt, and writes its context on the result', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 1 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());

    // The producer's context: a trace id and span id the worker has never seen.
    const producerTrace = randomBytes(16).toString('hex');
    const producerSpan = randomBytes(8).toString('hex');
    const traced = textCommand();
    const untraced = textCommand();
    await publisher.publishRaw([
      {
        key: traced.commandId,
        value: await publisher.encode(traced),
        headers: { traceparent: `00-${producerTrace}-${producerSpan}-01`, tracestate: 'acme=1' },
      },
      { key: untraced.commandId, value: await publisher.encode(untraced) },
    ]);
    // The first attempt of the traced command is answered 503 (Retry-After 1 s), the retry succeeds.
    sandbox.state.faults.enqueue('http503');
    const results = await readResults(topics.results);

    const worker = new WorkerProcess(
      workerEnv(topics, sandbox.url, {
        PROVIDER_ACCESS_KEY_ID: ACCESS_KEY_ID,
        PROVIDER_ACCESS_KEY_SECRET: ACCESS_KEY_SECRET,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_SERVICE_NAME: 'sms-worker-under-test',
        // Nothing is exported before the shutdown: the spans below prove the shutdown flushes them.
        OTEL_BSP_SCHEDULE_DELAY: '600000',
      }),
    );
    cleanups.add(async () => worker.signal('SIGKILL'));
    await eventually(() => (results.has(traced.commandId) && results.has(untraced.commandId) ? true : undefined), 60_000, 'both results');
    expect(receiver.spans.filter((s) => s.resource['service.name'] === 'sms-worker-under-test')).toEqual([]);
    worker.signal('SIGTERM');
    expect((await worker.stopped(30_000)).code).toBe(0);
    const spans = receiver.spans.filter((s) => s.resource['service.name'] === 'sms-worker-under-test');

    // The command span: CONSUMER, under the producer's context, linked to it, with the messaging attributes.
    const processSpan = spanOf(spans, (s) => s.attributes['sms_worker.command.id'] === traced.commandId, 'the traced command span');
    expect(processSpan).toMatchObject({
      name: `process ${topics.commands}`,
      kind: OTLP_SPAN_KIND.consumer,
      traceId: producerTrace,
      parentSpanId: producerSpan,
      links: [{ traceId: producerTrace, spanId: producerSpan }],
      status: { code: OTLP_STATUS.unset },
    });
    expect(processSpan.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': topics.commands,
      'messaging.destination.partition.id': '0',
      'messaging.kafka.offset': 0,
      'messaging.consumer.group.name': topics.group,
      'messaging.operation.type': 'process',
      'sms_worker.command.operation': 'text',
      'sms_worker.command.outcome': 'SENT',
    });
    expect(processSpan.resource).toMatchObject({ 'service.name': 'sms-worker-under-test', 'service.version': expect.any(String) as string });

    // One CLIENT span per attempt, children of the command span: the 503, then the success.
    const attempts = spans.filter((s) => s.parentSpanId === processSpan.spanId).sort((a, b) => Number(a.startNanos - b.startNanos));
    expect(attempts.map((s) => [s.name, s.kind, s.traceId])).toEqual([
      ['POST', OTLP_SPAN_KIND.client, producerTrace],
      ['POST', OTLP_SPAN_KIND.client, producerTrace],
    ]);
    const [first, retry] = attempts as [ReceivedSpan, ReceivedSpan];
    expect(first.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 503, 'error.type': 'PROVIDER_UNAVAILABLE' });
    expect(first.attributes['http.request.resend_count']).toBeUndefined();
    expect(first.status.code).toBe(OTLP_STATUS.error);
    expect(retry.attributes).toMatchObject({ 'http.response.status_code': 200, 'http.request.resend_count': 1 });
    expect(retry.status.code).toBe(OTLP_STATUS.unset);
    const requestId = results.get(traced.commandId)?.result.providerRequestId;
    expect(retry.attributes['http.response.header.x-uni-request-id']).toEqual([requestId]);
    expect(retry.attributes['url.full']).toBe(
      `${sandbox.url}/?action=sms.message.send&accessKeyId=REDACTED&algorithm=hmac-sha256&timestamp=REDACTED&nonce=REDACTED&signature=REDACTED`,
    );
    expect(retry.startNanos).toBeGreaterThanOrEqual(first.endNanos);
    // Within the command span, to the millisecond: the SDK anchors each span on Date.now().
    const ms = 1_000_000n;
    expect(first.startNanos + ms).toBeGreaterThanOrEqual(processSpan.startNanos);
    expect(retry.endNanos).toBeLessThanOrEqual(processSpan.endNanos + ms);

    // The result carries the command span's context: its readers continue the same trace.
    expect(results.get(traced.commandId)?.traceparent).toBe(`00-${producerTrace}-${processSpan.spanId}-01`);

    // A record without a traceparent starts a trace of its own: no parent, no link.
    const rootSpan = spanOf(spans, (s) => s.attributes['sms_worker.command.id'] === untraced.commandId, 'the untraced command span');
    expect(rootSpan.parentSpanId).toBeUndefined();
    expect(rootSpan.links).toEqual([]);
    expect(rootSpan.traceId).not.toBe(producerTrace);
    expect(traceIdOf({ traceparent: results.get(untraced.commandId)?.traceparent })).toBe(rootSpan.traceId);

    // Nothing secret in any exported byte.
    for (const body of receiver.bodies) {
      expect(body).not.toContain(ACCESS_KEY_ID);
      expect(body).not.toContain(ACCESS_KEY_SECRET);
    }
  });
});
