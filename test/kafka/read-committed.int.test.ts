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

describe('PartitionReader.fateOfWritten (what Kafka did with a batch of a transaction whose markers it lost)', () => {
  it('tells a batch aborted, seen, or still open as its own, and says nothing while another producer’s transaction below stays open', async () => {
    const kafka = testKafka();
    const topic = uniqueName('fate');
    await createTopics(kafka, [{ topic }]);
    const producer = kafka.producer({ transactionalId: uniqueName('ours'), idempotent: true, maxInFlightRequests: 1 });
    const other = kafka.producer({ transactionalId: uniqueName('other'), idempotent: true, maxInFlightRequests: 1 });
    const reader = new PartitionReader(kafka);
    await Promise.all([producer.connect(), other.connect()]);
    const values = (...v: string[]): Buffer[] => v.map((s) => Buffer.from(s));
    try {
      const send = async (sent: string[], end: 'commit' | 'abort'): Promise<void> => {
        const transaction = await producer.transaction();
        await transaction.send({ topic, messages: sent.map((value) => ({ value, partition: 0 })) });
        await (end === 'commit' ? transaction.commit() : transaction.abort());
      };
      // Offsets: kept-1 0 (marker 1), gone-1 2 and gone-2 3 (ABORT 4), kept-2 5 (marker 6).
      await send(['kept-1'], 'commit');
      await send(['gone-1', 'gone-2'], 'abort');
      await send(['kept-2'], 'commit');
      const aborted = await reader.fateOfWritten(topic, 0, 2n, values('gone-1', 'gone-2', 'elsewhere'));
      expect(aborted.ours.map(String)).toEqual(['gone-1', 'gone-2']);
      expect((aborted.fate as Buffer[]).map(String)).toEqual(['gone-1', 'gone-2']);
      const seen = await reader.fateOfWritten(topic, 0, 5n, values('kept-2', 'elsewhere'));
      expect(seen.ours.map(String)).toEqual(['kept-2']);
      expect(seen.fate).toEqual([]);
      // Records of another transaction at the offset: none of ours there.
      expect((await reader.fateOfWritten(topic, 0, 5n, values('gone-1'))).ours).toEqual([]);

      // Another producer's transaction left open at 7, below ours at 8: not told within the wait.
      const open = await other.transaction();
      await open.send({ topic, messages: [{ value: 'undecided', partition: 0 }] });
      const mine = await producer.transaction();
      await mine.send({ topic, messages: [{ value: 'hanging', partition: 0 }] });
      expect((await reader.fateOfWritten(topic, 0, 8n, values('hanging'), 300)).fate).toBeUndefined();
      // Once the other one is decided, the earliest open transaction is ours: it hangs here.
      await open.abort();
      const hangs = await eventually(
        async () => ((await reader.fateOfWritten(topic, 0, 8n, values('hanging'), 300)).fate === 'open' ? true : undefined),
        30_000,
        'our transaction as the earliest open one',
      );
      expect(hangs).toBe(true);
      await mine.abort();
    } finally {
      await reader.close();
      await Promise.all([producer.disconnect(), other.disconnect()]);
    }
  });
});
