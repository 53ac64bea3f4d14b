// `sms-worker tail --receipts` as a process against the real broker and registry: a SENT result
// and receipts for its messages (one published before the result, one after) print as one
// command's story, joined by message id; another command's lines stay out with --command.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sentResult } from '../../src/contracts/result.ts';
import { resultToAvro } from '../../src/contracts/result-avro.ts';
import { KafkaKeyedProducer } from '../../src/kafka/keyed-producer.ts';
import { ReceiptPublisher } from '../../src/receipts/publisher.ts';
import { parseReport, type DeliveryReceipt } from '../../src/receipts/report.ts';
import { Codec } from '../../src/schema/codec.ts';
import { textCommand } from '../contracts/fixtures.ts';
import { createTopics, testBrokers, testKafka, testRegistry, uniqueName } from '../helpers/kafka.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

function receipt(report: Record<string, unknown>): DeliveryReceipt {
  const parsed = parseReport(report);
  if (!parsed.ok) throw new Error(`bad test report: ${parsed.field}`);
  return parsed.receipt;
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('sms-worker tail --receipts', () => {
  it('prints a command’s result and the receipts of its messages, joined by message id', async () => {
    const results = uniqueName('tail-results');
    const receipts = uniqueName('tail-receipts');
    const kafka = testKafka();
    await createTopics(kafka, [{ topic: results }, { topic: receipts }, { topic: `${results}.dlq` }]);
    const registry = testRegistry();
    const codec = await Codec.create(registry, { results, deadLetter: `${results}.dlq` });
    const command = textCommand({ to: ['+8613800138000', '+14155552671'] }, { commandId: uniqueName('cmd') });
    const other = textCommand({ to: ['+8613800138000'] }, { commandId: uniqueName('other') });
    const [m1, m2, m3] = [uniqueName('m1'), uniqueName('m2'), uniqueName('m3')];
    const message = (id: string, to: string, regionCode: string) => ({
      id,
      to,
      regionCode,
      countryCode: '86',
      messageCount: 1,
      status: 'sent',
      upstream: 'u',
      price: '0.050000',
    });
    const success = (messages: ReturnType<typeof message>[]) => ({
      requestId: 'r',
      attempts: 1,
      result: { recipients: messages.length, messageCount: messages.length, totalAmount: '0.1', payAmount: '0.1', virtualAmount: '0', messages },
    });
    const source = { topic: 'sms.commands', partition: 0, offset: '1' };

    const publisher = new ReceiptPublisher(new KafkaKeyedProducer(kafka, { sendTimeoutMs: 10_000 }), registry, { topic: receipts, timeoutMs: 10_000 });
    await publisher.connect();
    // A receipt can reach its topic before the result reaches its own: this one is published first.
    await publisher.publish([receipt({ id: m1, status: 'delivered', errorCode: 'DELIVRD' })]);
    const producer = kafka.producer();
    await producer.connect();
    const results1 = sentResult(
      { command, source, completedAt: Date.now() },
      success([message(m1, '+8613800138000', 'CN'), message(m2, '+14155552671', 'US')]),
    );
    const results2 = sentResult({ command: other, source, completedAt: Date.now() }, success([message(m3, '+8613800138000', 'CN')]));
    await producer.send({
      topic: results,
      messages: [
        { key: command.commandId, value: await codec.encodeResult(resultToAvro(results1)) },
        { key: other.commandId, value: await codec.encodeResult(resultToAvro(results2)) },
      ],
    });
    await publisher.publish([receipt({ id: m3, status: 'delivered' }), receipt({ id: m2, status: 'failed', errorCode: 'UNDELIV' })]);
    await producer.disconnect();
    await publisher.disconnect();

    const out = await run(['tail', '--receipts', '--command', command.commandId, '--count', '2', '--topic', results, '--receipts-topic', receipts], {
      KAFKA_BROKERS: testBrokers().join(','),
      SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
    });
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { result?: { commandId: string }; receipt?: { messageId: string; outcome: string }; commandId?: string });
    expect(lines[0]?.result?.commandId).toBe(command.commandId);
    const joined = lines.slice(1).map((l) => [l.receipt?.messageId, l.receipt?.outcome, l.commandId]);
    expect(joined.sort()).toEqual(
      [
        [m1, 'DELIVERED', command.commandId],
        [m2, 'UNDELIVERED', command.commandId],
      ].sort(),
    );
    expect(out.stdout).not.toContain(other.commandId);
  });
});
