import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';
import { OTLP_SPAN_KIND, OtlpReceiver } from '../helpers/otlp-receiver.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { testTopics, workerEnv } from '../helpers/worker.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

const sandbox = useSandbox();
let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver.close();
});
const cleanups = useCleanups();

/** Runs the CLI; `stopWhen` ends a command that runs until Ctrl-C (tail) once its output says so. */
function cli(
  args: string[],
  env: Record<string, string>,
  stopWhen?: (stdout: string) => boolean,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    cleanups.add(async () => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (stopWhen?.(stdout) === true) child.kill('SIGINT');
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The headers of the first record of a topic. */
async function firstRecord(topic: string): Promise<KafkaMessage> {
  const consumer = testKafka().consumer({ groupId: uniqueName('peek') });
  cleanups.add(() => consumer.disconnect());
  let first: KafkaMessage | undefined;
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachMessage: async ({ message }) => void (first ??= message) });
  return eventually(() => first, 30_000, `a record on ${topic}`);
}

const voice = JSON.stringify({ voice: { to: '18509872103', code: '123456' } });

describe('produce starts or continues a trace; tail --pretty shows it', () => {
  it('continues TRACEPARENT from the environment: producer span, the worker span under it, and the trace id in tail --pretty', async () => {
    const topics = testTopics();
    await createTopics(testKafka(), [{ topic: topics.commands, partitions: 1 }, { topic: topics.results }, { topic: topics.deadLetter }]);
    const connection = { KAFKA_BROKERS: testBrokers().join(','), SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl') };
    const callerTrace = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');

    const produced = await cli(['produce', voice], {
      ...connection,
      COMMAND_TOPIC: topics.commands,
      TRACEPARENT: `00-${callerTrace}-${callerSpan}-01`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    });
    expect(produced.code, produced.stderr).toBe(0);
    expect(produced.stderr).toBe('');
    const line = JSON.parse(produced.stdout.trim()) as { published: string; traceId: string };
    expect(line.traceId).toBe(callerTrace);

    // The producer span was exported before produce exited; the record carries its context.
    const sendSpan = receiver.spans.find((s) => s.attributes['sms_worker.command.id'] === line.published && s.kind === OTLP_SPAN_KIND.producer);
    expect(sendSpan).toMatchObject({ name: `send ${topics.commands}`, traceId: callerTrace, parentSpanId: callerSpan });
    expect(sendSpan?.resource['service.name']).toBe('sms-worker-produce');
    expect((await firstRecord(topics.commands)).headers?.['traceparent']?.toString()).toBe(`00-${callerTrace}-${sendSpan?.spanId}-01`);

    const worker = new WorkerProcess({ ...workerEnv(topics, sandbox.url), OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
    cleanups.add(async () => {
      worker.signal('SIGTERM');
      await worker.stopped(30_000);
    });
    const tailed = await cli(['tail', '--pretty', '--count', '1'], { ...connection, RESULT_TOPIC: topics.results });
    expect(tailed.code, tailed.stderr).toBe(0);
    expect(tailed.stderr).toBe('');
    const [header, , row] = tailed.stdout.trim().split('\n');
    expect(header).toMatch(/traceId$/);
    expect(row).toContain(line.published);
    expect(row?.trimEnd().endsWith(callerTrace)).toBe(true);

    const processSpan = await eventually(
      () => receiver.spans.find((s) => s.attributes['sms_worker.command.id'] === line.published && s.kind === OTLP_SPAN_KIND.consumer),
      30_000,
      'the worker span of the command',
    );
    expect(processSpan).toMatchObject({ traceId: callerTrace, parentSpanId: sendSpan?.spanId, links: [{ traceId: callerTrace, spanId: sendSpan?.spanId }] });
  });

  it('without TRACEPARENT or an endpoint, starts a trace per command and still writes it on the record', async () => {
    const topic = uniqueName('cli-trace');
    await createTopics(testKafka(), [{ topic }]);
    const produced = await cli(['produce', voice], {
      KAFKA_BROKERS: testBrokers().join(','),
      SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
      COMMAND_TOPIC: topic,
    });
    expect(produced.code, produced.stderr).toBe(0);
    const line = JSON.parse(produced.stdout.trim()) as { traceId: string };
    expect(line.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect((await firstRecord(topic)).headers?.['traceparent']?.toString()).toMatch(new RegExp(`^00-${line.traceId}-[0-9a-f]{16}-01$`));
  });

  it('refuses tracing settings it cannot honour, before connecting (exit 2)', async () => {
    const produced = await cli(['produce', voice], {
      KAFKA_BROKERS: testBrokers().join(','),
      SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_TRACES_SAMPLER: 'sometimes',
    });
    expect(produced.code).toBe(2);
    expect(produced.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL');
    expect(produced.stderr).toContain('OTEL_TRACES_SAMPLER');
  });
});
