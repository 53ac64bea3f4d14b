// `sms-worker receipts` as a process: configured from the environment, it takes a report, publishes
// it to the real broker, serves its metrics on the other port, and stops cleanly on SIGTERM.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import got from 'got';
import { describe, expect, inject, it } from 'vitest';
import { ReceiptReader, type ReadReceipt } from '../../src/kafka/receipt-reader.ts';
import { createTopics, eventually, testBrokers, testKafka, testRegistry, uniqueName } from '../helpers/kafka.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');
const TOKEN = 'tok_cli_0123456789abcdef';

describe('sms-worker receipts (the process)', () => {
  it('publishes a posted report, serves /metrics apart, and exits 0 on SIGTERM without logging its token', async () => {
    const topic = uniqueName('cli-receipts');
    await createTopics(testKafka(), [{ topic }]);
    const child = spawn(process.execPath, [MAIN, 'receipts'], {
      env: {
        PATH: process.env['PATH'] ?? '',
        KAFKA_BROKERS: testBrokers().join(','),
        SCHEMA_REGISTRY_URL: inject('schemaRegistryUrl'),
        RECEIPTS_TOPIC: topic,
        RECEIPTS_PATH_TOKEN: TOKEN,
        RECEIPTS_HOST: '127.0.0.1',
        RECEIPTS_PORT: '0',
        RECEIPTS_HTTP_PORT: '0',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const started = await eventually(
        () => {
          const line = output.split('\n').find((l) => l.includes('receipts receiver listening'));
          return line === undefined ? undefined : (JSON.parse(line) as { port: number; httpPort: number });
        },
        60_000,
        () => `the receiver to start; output so far:\n${output}`,
      );
      const messageId = uniqueName('m');
      const answer = await got.post(`http://127.0.0.1:${started.port}/receipts/${TOKEN}`, {
        json: { id: messageId, status: 'delivered', regionCode: 'CN' },
        throwHttpErrors: false,
      });
      expect(answer.statusCode).toBe(200);

      const receipts: ReadReceipt[] = [];
      const reader = new ReceiptReader(testKafka(), testRegistry(), topic);
      await reader.start((read) => void receipts.push(read), { fromBeginning: true });
      await eventually(() => receipts.some((r) => r.key === messageId), 30_000, 'the published receipt');
      await reader.stop();

      const metrics = await got(`http://127.0.0.1:${started.httpPort}/metrics`).text();
      expect(metrics).toContain('sms_receipts_receipts_total{status="delivered",region="CN"} 1');
      // Metrics are not on the report port.
      expect((await got(`http://127.0.0.1:${started.port}/metrics`, { throwHttpErrors: false })).statusCode).toBe(405);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(output).toContain('shutdown requested');
    expect(output).not.toContain(TOKEN);
  });
});
