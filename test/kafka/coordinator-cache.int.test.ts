import type { Kafka, Producer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { transactionalKafka, transactionalProducer } from '../../src/kafka/transactional-producers.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createTopics, testBrokers, testKafka, uniqueName, withAdmin } from '../helpers/kafka.ts';
import { proxiedSocketFactory, TcpProxy } from '../helpers/tcp-proxy.ts';

/** Counts the producer's requests by API name (kafkajs's own instrumentation events). */
function countRequests(producer: Producer): Map<string, number> {
  const counts = new Map<string, number>();
  producer.on(producer.events.REQUEST, (event: { payload: { apiName: string } }) => {
    counts.set(event.payload.apiName, (counts.get(event.payload.apiName) ?? 0) + 1);
  });
  return counts;
}

/** One result-like transaction: a record, the group's offset, commit (what a partition's results transaction sends). */
async function resultTransaction(producer: Producer, topic: string, group: string, offset: number): Promise<void> {
  const transaction = await producer.transaction();
  await transaction.send({ topic, messages: [{ key: 'k', value: `result ${offset}` }] });
  await transaction.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] });
  await transaction.commit();
}

async function committedValues(kafka: Kafka, topic: string, count: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('reader'), readUncommitted: false });
  const values: string[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ message }) => {
          values.push(message.value?.toString() ?? '');
          if (values.length >= count) resolve();
        },
      });
    });
  } finally {
    await consumer.disconnect();
  }
  return values;
}

/**
 * Ten result-like transactions of `producer` on a fresh topic, for one group: the requests it sent,
 * by API name, with the topic and group.
 */
async function tenResultTransactions(producer: Producer, topicPrefix: string): Promise<{ counts: Map<string, number>; topic: string; group: string }> {
  const topic = uniqueName(topicPrefix);
  await createTopics(testKafka(), [{ topic }]);
  const counts = countRequests(producer);
  const group = uniqueName('group');
  await producer.connect();
  try {
    for (let offset = 1; offset <= 10; offset++) await resultTransaction(producer, topic, group, offset);
  } finally {
    await producer.disconnect();
  }
  return { counts, topic, group };
}

describe('coordinators remembered by kafkajs clusters (src/kafka/kafkajs.ts)', () => {
  it("a plain client's transactional producer finds its transaction coordinator once, not before every request; its group's coordinator as kafkajs does", async () => {
    const producer = testKafka().producer({ transactionalId: uniqueName('tx'), idempotent: true, maxInFlightRequests: 1 });
    const { counts } = await tenResultTransactions(producer, 'coordinators');
    expect(counts.get('EndTxn')).toBe(10);
    expect(counts.get('TxnOffsetCommit')).toBe(10);
    // kafkajs alone: one before InitProducerId, then four per transaction (AddPartitionsToTxn,
    // AddOffsetsToTxn, the group's for TxnOffsetCommit, EndTxn): 41. With the transaction
    // coordinator remembered: it once, and the group's once per TxnOffsetCommit: 11.
    // (kafkajs names the FindCoordinator request by its old name, GroupCoordinator.)
    expect(counts.get('GroupCoordinator')).toBe(11);
  });

  it("the worker's transactional producers find their group's coordinator once too, not before every TxnOffsetCommit", async () => {
    const kafka = transactionalKafka(plaintextKafkaSettings(testBrokers(), uniqueName('tx-client')), createLogger('silent'));
    const { counts, topic, group } = await tenResultTransactions(transactionalProducer(kafka, uniqueName('tx')), 'coordinators-tx');
    expect(counts.get('TxnOffsetCommit')).toBe(10);
    // The transaction coordinator once, the group's once: 2 (11 for a plain client, above).
    expect(counts.get('GroupCoordinator')).toBe(2);
    expect(await committedValues(testKafka(), topic, 10)).toHaveLength(10);
    const committed = await withAdmin(testKafka(), (admin) => admin.fetchOffsets({ groupId: group, topics: [topic] }));
    expect(committed[0]?.partitions.find((p) => p.partition === 0)?.offset).toBe('10');
  });

  it('after its connections are cut, the producer reaches the remembered coordinator again and its transactions commit', async () => {
    const [broker] = testBrokers();
    const proxy = await TcpProxy.start(broker ?? '');
    const kafka = createKafka(plaintextKafkaSettings(testBrokers(), uniqueName('cut')), createLogger('silent'), undefined, {
      socketFactory: proxiedSocketFactory(proxy),
      retry: { retries: 5, initialRetryTime: 100 },
    });
    const topic = uniqueName('coordinators-cut');
    await createTopics(testKafka(), [{ topic }]);
    const producer = kafka.producer({ transactionalId: uniqueName('tx'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      const group = uniqueName('group');
      await resultTransaction(producer, topic, group, 1);
      await proxy.close();
      await proxy.open();
      // kafkajs alone fails this one: its fresh lookup after the cut ends in "Failed to find group
      // coordinator" (not retriable). The remembered node is reconnected by the broker pool instead.
      await resultTransaction(producer, topic, group, 2);
      expect(await committedValues(testKafka(), topic, 2)).toEqual(['result 1', 'result 2']);
    } finally {
      await producer.disconnect();
      await proxy.close();
    }
  });
});
