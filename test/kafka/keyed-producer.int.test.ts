import { describe, expect, it } from 'vitest';
import { KafkaKeyedProducer } from '../../src/kafka/keyed-producer.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';

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
