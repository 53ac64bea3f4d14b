import { Kafka, logLevel } from '../../src/kafka/kafkajs.ts';
import { describe, expect, it } from 'vitest';
import { KafkaKeyedProducer } from '../../src/kafka/keyed-producer.ts';

describe('KafkaKeyedProducer once its owner disconnected it', () => {
  it('refuses a send at once (a handover still being tried again after a shutdown), rather than connecting a fresh producer nothing would disconnect', async () => {
    // No broker: nothing here may connect.
    const kafka = new Kafka({ clientId: 'keyed-producer-test', brokers: ['127.0.0.1:9'], logLevel: logLevel.NOTHING, retry: { retries: 0 } });
    const producer = new KafkaKeyedProducer(kafka, { sendTimeoutMs: 2_000 });
    await producer.disconnect();
    await expect(producer.send('ledger', [{ key: 'k', value: Buffer.from('v') }])).rejects.toMatchObject({
      code: 'KAFKA_PRODUCER_CLOSED',
      retryable: false,
    });
    expect(producer.connected).toBe(false);
  });
});
