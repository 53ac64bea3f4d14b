import { describe, expect, it } from 'vitest';
import { KafkaKeyedProducer } from '../../src/kafka/keyed-producer.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';
import { usePrivateKafka } from '../helpers/private-kafka.ts';

describe('KafkaKeyedProducer against a real broker', () => {
  it(
    'after a send that failed with part of it written, the next send to that partition is written, not taken for a duplicate',
    { timeout: 60_000 },
    async () => {
      const kafka = testKafka();
      const topic = uniqueName('keyed');
      // Partition 1 refuses the second record of the first send as too large; partition 0 takes its
      // first record. Both go in one request to the one broker, whose answer fails the whole send.
      await createTopics(kafka, [{ topic, partitions: 2, configs: { 'max.message.bytes': '2000' } }]);
      const producer = new KafkaKeyedProducer(kafka, { sendTimeoutMs: 5_000 });
      await producer.connect();
      try {
        await expect(
          producer.send(topic, [
            { key: 'a', value: Buffer.from('first'), partition: 0 },
            { key: 'b', value: Buffer.alloc(5_000, 1), partition: 1 },
          ]),
        ).rejects.toThrow();
        // kafkajs gave back partition 0's sequence number with the failed request's: the same
        // producer's next one-record send there carried the written record's number, and the broker
        // answered it as that record's duplicate without writing it.
        await producer.send(topic, [{ key: 'a', value: Buffer.from('second'), partition: 0 }]);
      } finally {
        await producer.disconnect();
      }
      const reader = new PartitionReader(kafka);
      const { records } = await reader.readAvailable(topic, 0, 0n);
      expect(records.map((r) => r.value?.toString())).toEqual(['first', 'second']);
    },
  );
});

describe('KafkaKeyedProducer against a broker that stops answering', () => {
  const broker = usePrivateKafka();

  it(
    'gives a send up at its timeout, and the next send to that partition, made while the first is still in the broker, is written',
    { timeout: 90_000 },
    async () => {
      const kafka = broker.client();
      const topic = uniqueName('keyed-timeout');
      await createTopics(kafka, [{ topic, partitions: 1 }]);
      const producer = new KafkaKeyedProducer(kafka, { sendTimeoutMs: 3_000 });
      await producer.connect();
      try {
        await producer.send(topic, [{ key: 'a', value: Buffer.from('zero'), partition: 0 }]);
        broker.pause();
        try {
          // Without the bound, this waits for kafkajs's request timeout (30 s) and its retries: the
          // handovers' next batch, or a receipt's 503, waited with it.
          await expect(producer.send(topic, [{ key: 'a', value: Buffer.from('first'), partition: 0 }])).rejects.toMatchObject({
            code: 'KAFKA_SEND_TIMEOUT',
          });
        } finally {
          broker.resume();
        }
        // `first` is still in the broker's socket and may land once the broker answers again.
        await producer.send(topic, [{ key: 'a', value: Buffer.from('second'), partition: 0 }]);
      } finally {
        await producer.disconnect();
      }
      const reader = new PartitionReader(kafka);
      const values = (await reader.readAvailable(topic, 0, 0n)).records.map((r) => r.value?.toString());
      expect(values[0]).toBe('zero');
      expect(values.filter((v) => v === 'second')).toHaveLength(1);
    },
  );
});
