import { describe, expect, it } from 'vitest';
import { createTopics, eventually, testKafka, uniqueName } from '../helpers/kafka.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';

describe('read_committed through src/kafka/kafkajs.ts', () => {
  it('hides every aborted transaction when several producers are aborted in a different order than they began', async () => {
    const kafka = testKafka();
    const topic = uniqueName('rc');
    await createTopics(kafka, [{ topic }]);
    const producer = (name: string) => kafka.producer({ transactionalId: uniqueName(name), idempotent: true, maxInFlightRequests: 1 });
    const [a, b, c] = [producer('a'), producer('b'), producer('c')];
    await Promise.all([a.connect(), b.connect(), c.connect()]);

    const ta = await a.transaction();
    await ta.send({ topic, messages: [{ value: 'a1-aborted' }] });
    const tb = await b.transaction();
    await tb.send({ topic, messages: [{ value: 'b1-aborted' }] });
    const tc = await c.transaction();
    await tc.send({ topic, messages: [{ value: 'c1' }] });
    await tc.commit();
    await ta.send({ topic, messages: [{ value: 'a2-aborted' }] });
    // B began after A but is aborted first: the broker lists B's abort before A's.
    await tb.abort();
    await ta.abort();
    const tc2 = await c.transaction();
    await tc2.send({ topic, messages: [{ value: 'c2' }] });
    await tc2.commit();
    await Promise.all([a.disconnect(), b.disconnect(), c.disconnect()]);

    const consumer = kafka.consumer({ groupId: uniqueName('rc-reader'), readUncommitted: false });
    const seen: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value?.toString() ?? '') });
      await eventually(() => (seen.includes('c2') ? true : undefined), 30_000, 'c2');
    } finally {
      await consumer.disconnect();
    }
    expect(seen).toEqual(['c1', 'c2']);
  });
});

describe('PartitionReader.abortedValues (what Kafka aborted of a transaction whose markers it lost)', () => {
  it('lists the values of aborted records in a range, and says nothing while a transaction there is open', async () => {
    const kafka = testKafka();
    const topic = uniqueName('aborted');
    await createTopics(kafka, [{ topic }]);
    const producer = kafka.producer({ transactionalId: uniqueName('aborting'), idempotent: true, maxInFlightRequests: 1 });
    const other = kafka.producer({ transactionalId: uniqueName('open'), idempotent: true, maxInFlightRequests: 1 });
    const reader = new PartitionReader(kafka);
    await Promise.all([producer.connect(), other.connect()]);
    try {
      const send = async (values: string[], end: 'commit' | 'abort'): Promise<void> => {
        const transaction = await producer.transaction();
        await transaction.send({ topic, messages: values.map((value) => ({ value, partition: 0 })) });
        await (end === 'commit' ? transaction.commit() : transaction.abort());
      };
      await send(['kept-1'], 'commit');
      await send(['gone-1', 'gone-2'], 'abort');
      await send(['kept-2'], 'commit');
      // Offsets: kept-1 0, its marker 1, gone-1 2, gone-2 3, the abort 4, kept-2 5, its marker 6.
      expect((await reader.abortedValues(topic, 0, 0n, 7n))?.map(String)).toEqual(['gone-1', 'gone-2']);
      expect((await reader.abortedValues(topic, 0, 3n, 4n))?.map(String)).toEqual(['gone-2']);
      expect(await reader.abortedValues(topic, 0, 5n, 6n)).toEqual([]);

      // Another producer's transaction left open at 7: nothing from there on is decided yet.
      const open = await other.transaction();
      await open.send({ topic, messages: [{ value: 'undecided', partition: 0 }] });
      expect(await reader.abortedValues(topic, 0, 2n, 8n)).toBeUndefined();
      expect((await reader.abortedValues(topic, 0, 2n, 7n))?.map(String)).toEqual(['gone-1', 'gone-2']);
      await open.abort();
      // Its coordinator writes the ABORT marker after answering: decided once the marker is in.
      const decided = await eventually(async () => reader.abortedValues(topic, 0, 2n, 9n), 30_000, 'the abort marker');
      expect(decided.map(String)).toEqual(['gone-1', 'gone-2', 'undecided']);
    } finally {
      await reader.close();
      await Promise.all([producer.disconnect(), other.disconnect()]);
    }
  });
});
