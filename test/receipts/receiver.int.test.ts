// The receiver end to end: the sandbox's delivery reports (real HTTP) → `startReceiver` → the real
// Kafka broker and registry → read back from the receipts topic. "Kafka down" is a TCP proxy in
// front of the shared broker that the test closes and reopens (test/helpers/tcp-proxy.ts).
import { Writable } from 'node:stream';
import got from 'got';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { ReceiptReader, type ReadReceipt } from '../../src/kafka/receipt-reader.ts';
import { loadReceiverConfig } from '../../src/receipts/config.ts';
import { startReceiver, type RunningReceiver } from '../../src/receipts/receiver.ts';
import { FAILURE_CODES } from '../../src/sandbox/delivery-reports.ts';
import { startSandbox, type RunningSandbox } from '../../src/sandbox/server.ts';
import type { KafkaClientOptions } from '../../src/kafka/client.ts';
import { createTopics, eventually, testBrokers, testKafka, testRegistry, uniqueName } from '../helpers/kafka.ts';
import { useCleanups } from '../helpers/fixtures.ts';
import { proxiedSocketFactory, TcpProxy } from '../helpers/tcp-proxy.ts';

const TOKEN = `tok_${'k'.repeat(12)}${Math.random().toString(36).slice(2, 10)}`;

const cleanups = useCleanups();

interface Harness {
  receiver: RunningReceiver;
  reportUrl: string;
  topic: string;
  receipts: ReadReceipt[];
  logs: string[];
}

async function startHarness(kafkaOptions: KafkaClientOptions = {}): Promise<Harness> {
  const topic = uniqueName('receipts');
  await createTopics(testKafka(), [{ topic, partitions: 1 }]);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const config = loadReceiverConfig({
    KAFKA_BROKERS: testBrokers().join(','),
    SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
    RECEIPTS_TOPIC: topic,
    RECEIPTS_PATH_TOKEN: TOKEN,
    RECEIPTS_HOST: '127.0.0.1',
    RECEIPTS_PORT: '0',
    RECEIPTS_HTTP_PORT: '0',
    RECEIPTS_PUBLISH_TIMEOUT_MS: '5000',
    RECEIPTS_MAX_BODY_BYTES: '4096',
  });
  const receiver = await startReceiver(config, { logger: pino({ level: 'trace' }, sink), kafkaOptions });
  cleanups.add(() => receiver.close());
  const receipts: ReadReceipt[] = [];
  const reader = new ReceiptReader(testKafka(), testRegistry(), topic);
  cleanups.add(() => reader.stop());
  await reader.start((read) => void receipts.push(read), { fromBeginning: true });
  return { receiver, reportUrl: `${receiver.url}/receipts/${TOKEN}`, topic, receipts, logs };
}

async function sandboxReportingTo(url: string, settings: { failRate?: number; retryBaseMs?: number } = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ deliveryReports: { callbackUrl: url, delayMs: 0, failRate: 0, retryBaseMs: 200, retryMaxMs: 1_000, ...settings } });
  cleanups.add(() => sandbox.close());
  return sandbox;
}

interface SentMessage {
  id: string;
  price: string;
}

async function sendText(sandbox: RunningSandbox, to: string): Promise<SentMessage> {
  const answer = await got
    .post(`${sandbox.url}/?action=sms.message.send&accessKeyId=test-key`, { json: { to: [to], signature: 'Acme', content: 'Your code is 1234' } })
    .json<{ data: { messages: SentMessage[] } }>();
  const [message] = answer.data.messages;
  if (message === undefined) throw new Error('the sandbox accepted no message');
  return message;
}

function post(url: string, body: string | unknown): Promise<{ statusCode: number; body: string }> {
  return got.post(url, {
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
    throwHttpErrors: false,
    retry: { limit: 0 },
  });
}

/** Posts a marker report and waits until it is read back: everything published before it has been read too. */
async function drainWithMarker(h: Harness): Promise<void> {
  const marker = uniqueName('marker');
  expect((await post(h.reportUrl, { id: marker, status: 'delivered' })).statusCode).toBe(200);
  await eventually(() => h.receipts.some((r) => r.key === marker), 30_000, 'the marker receipt');
}

function expectNoSecretLogged(h: Harness): void {
  const text = h.logs.join('');
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain('+8613800138000');
}

describe('delivery receipts receiver (real Kafka, real HTTP)', () => {
  it('publishes the sandbox’s delivered and failed reports, keyed by message id', async () => {
    const h = await startHarness();
    const sandbox = await sandboxReportingTo(h.reportUrl);
    const delivered = await sendText(sandbox, '+8613800138000');
    sandbox.state.deliveryReports.update({ failRate: 1 });
    const failed = await sendText(sandbox, '+14155552671');

    await eventually(() => h.receipts.length >= 2, 30_000, 'two receipts');
    const byKey = new Map(h.receipts.map((r) => [r.key, r.receipt]));
    expect(byKey.get(delivered.id)).toMatchObject({
      messageId: delivered.id,
      outcome: 'DELIVERED',
      status: 'delivered',
      errorCode: 'DELIVRD',
      regionCode: 'CN',
      countryCode: '86',
      price: delivered.price,
      currency: 'CNY',
    });
    expect(byKey.get(failed.id)).toMatchObject({ messageId: failed.id, outcome: 'UNDELIVERED', status: 'failed', regionCode: 'US', price: failed.price });
    expect(FAILURE_CODES.map((c) => c.errorCode)).toContain(byKey.get(failed.id)?.errorCode);
    expect(byKey.get(delivered.id)?.submittedAt).toEqual(expect.any(Number));
    // The sandbox counts a report as posted once it has read the 200, which can be after the
    // receipt is already readable from the topic.
    await eventually(() => (sandbox.state.deliveryReports.stats().posted >= 2 ? true : undefined), 10_000, 'the sandbox counting both posts');
    expect(sandbox.state.deliveryReports.stats()).toMatchObject({ posted: 2, delivered: 1, failed: 1, retries: 0 });

    const metrics = await got(`http://127.0.0.1:${h.receiver.httpPort}/metrics`).text();
    expect(metrics).toContain('sms_receipts_receipts_total{status="delivered",region="CN"} 1');
    expect(metrics).toContain('sms_receipts_receipts_total{status="failed",region="US"} 1');
    expect(metrics).toMatch(/sms_receipts_delivery_seconds_count\{outcome="DELIVERED"\} 1/);
    expect((await got(`http://127.0.0.1:${h.receiver.httpPort}/readyz`)).statusCode).toBe(200);
    expectNoSecretLogged(h);
  });

  it('answers 401 to a bad token and publishes nothing', async () => {
    const h = await startHarness();
    const report = { id: uniqueName('m'), status: 'delivered' };
    const answer = await post(`${h.receiver.url}/receipts/tok_wrong_0123456789abcdef`, report);
    expect(answer.statusCode).toBe(401);
    expect(JSON.parse(answer.body)).toEqual({ code: 'UNAUTHORIZED', message: 'unauthorized' });
    await drainWithMarker(h);
    expect(h.receipts.filter((r) => r.key === report.id)).toEqual([]);
    expect(h.receipts).toHaveLength(1);
    expectNoSecretLogged(h);
  });

  it('answers 413 to a body over the limit and 400 naming the field, publishing nothing', async () => {
    const h = await startHarness();
    const big = await post(h.reportUrl, [
      { id: uniqueName('big'), status: 'delivered', errorMessage: 'x'.repeat(500) },
      ...Array.from({ length: 20 }, (_, i) => ({ id: `b${i}`, status: 'delivered', errorMessage: 'y'.repeat(200) })),
    ]);
    expect(big.statusCode).toBe(413);
    const bad = await post(h.reportUrl, [
      { id: uniqueName('ok'), status: 'delivered' },
      { id: uniqueName('bad'), status: 'delivered', messageCount: -1 },
    ]);
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body)).toMatchObject({ code: 'INVALID_REPORT', field: '[1].messageCount' });
    await drainWithMarker(h);
    expect(h.receipts).toHaveLength(1);
  });

  it('answers 503 while Kafka is unreachable; the service’s retry after it returns is published once', async () => {
    const proxy = await TcpProxy.start(testBrokers()[0] ?? '');
    cleanups.add(() => proxy.close());
    const h = await startHarness({ socketFactory: proxiedSocketFactory(proxy) });
    const sandbox = await sandboxReportingTo(h.reportUrl);

    await proxy.close();
    const sent = await sendText(sandbox, '+8613800138000');
    await eventually(
      () => {
        const stats = sandbox.state.deliveryReports.stats();
        return stats.retries >= 1 && stats.lastStatus === 503;
      },
      60_000,
      'the report answered 503 and retried',
    );
    expect(sandbox.state.deliveryReports.stats().posted).toBe(0);

    await proxy.open();
    await eventually(() => sandbox.state.deliveryReports.stats().posted === 1, 60_000, 'the retried report accepted');
    await drainWithMarker(h);
    expect(h.receipts.filter((r) => r.key === sent.id)).toHaveLength(1);
    expect(h.logs.join('')).toContain('answered 503');
    expectNoSecretLogged(h);
  });
});
