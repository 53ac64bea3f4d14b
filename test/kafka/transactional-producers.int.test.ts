import { describe, expect, it } from 'vitest';
import { FencedError, type Transaction } from '../../src/kafka/ports.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import type { Kafka } from 'kafkajs';
import { plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { Kafka as KafkaClient, logLevel, transactionalClusters } from '../../src/kafka/kafkajs.ts';
import {
  TRANSACTION_REQUEST_RETRY,
  TransactionalProducers,
  transactionalKafka,
  transactionalProducer,
  type ProducerPriming,
} from '../../src/kafka/transactional-producers.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createTopics, eventually, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';

/**
 * Fences `transactionalId` with a producer made from `kafka` as the worker makes them, while the
 * previous owner's transaction is open (the coordinator refuses with CONCURRENT_TRANSACTIONS until
 * it has aborted it), and returns the pauses between its InitProducerId requests: kafkajs's retry waits.
 */
async function fenceRetryPauses(kafka: Kafka, transactionalId: string): Promise<number[]> {
  const producer = transactionalProducer(kafka, transactionalId);
  const requests: { sentAt: number; duration: number }[] = [];
  producer.on(producer.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'InitProducerId') requests.push({ sentAt: payload.sentAt, duration: payload.duration });
  });
  await producer.connect();
  // connect() asks for an idempotent producer id without the transactional id: not the fence.
  requests.length = 0;
  try {
    await (await producer.transaction()).abort();
  } finally {
    await producer.disconnect();
  }
  return requests.slice(1).map((r, i) => r.sentAt - ((requests[i]?.sentAt ?? 0) + (requests[i]?.duration ?? 0)));
}

/** A fresh topic and two processes' producers of the same transactional ids (the partition's owner and the next one). */
async function twoOwners(name: string): Promise<{ topic: string; owners: [TransactionalProducers, TransactionalProducers] }> {
  const kafka = testKafka();
  const topic = uniqueName(name);
  await createTopics(kafka, [{ topic }]);
  const prefix = uniqueName(`${name}-tx`);
  return { topic, owners: [new TransactionalProducers(kafka, prefix), new TransactionalProducers(kafka, prefix)] };
}

/** A transaction of partition 0's producer, left open with one record in it. */
async function openWith(owner: TransactionalProducers, topic: string, value: string): Promise<Transaction> {
  const transaction = await (await owner.forPartition(topic, 0, 1)).transaction();
  await transaction.send([{ topic, messages: [{ key: 'k', value: Buffer.from(value) }] }]);
  return transaction;
}

/**
 * The requests a partition's producer sends to fence (forPartition) and in its first transaction
 * (a mark and a result, and the offset), once `prepare` connected it ahead: read from kafkajs's
 * own debug log of every request, on a client made as transactionalKafka makes it.
 */
async function requestsOfAClaim(
  prime: (topics: { ledger: string; results: string; group: string }) => ProducerPriming | undefined,
): Promise<Record<'fence' | 'firstTransaction', string[]>> {
  const seen: string[] = [];
  const kafka = new KafkaClient({
    clientId: uniqueName('priming'),
    brokers: testBrokers(),
    logLevel: logLevel.DEBUG,
    logCreator: () => (entry) => {
      const request = /^Request (\w+)\(/.exec(entry.log.message);
      if (request?.[1] !== undefined) seen.push(request[1]);
    },
  });
  transactionalClusters(kafka, TRANSACTION_REQUEST_RETRY);
  const [commands, ledger, results] = [uniqueName('commands'), uniqueName('ledger'), uniqueName('results')];
  await createTopics(testKafka(), [{ topic: commands }, { topic: ledger }, { topic: results }]);
  const group = uniqueName('group');
  const producers = new TransactionalProducers(kafka, uniqueName('priming-tx'), undefined, prime({ ledger, results, group }));
  try {
    await producers.prepareAhead(commands, 1, 64);
    seen.length = 0;
    const session = await producers.forPartition(commands, 0, 1);
    const fence = seen.splice(0);
    const transaction = await session.transaction();
    await transaction.send([
      { topic: ledger, messages: [{ key: 'mark', value: Buffer.from('m') }] },
      { topic: results, messages: [{ key: 'result', value: Buffer.from('r') }] },
    ]);
    await transaction.sendOffsets({ consumerGroupId: group, topics: [{ topic: commands, partitions: [{ partition: 0, offset: '1' }] }] });
    await transaction.commit();
    return { fence, firstTransaction: seen.splice(0) };
  } finally {
    await producers.closeAll();
  }
}

describe('TransactionalProducers against a real broker', () => {
  it('a producer connected ahead is primed: its fence is one InitProducerId, and its first transaction looks up neither metadata nor a coordinator (unprimed, both paid those round trips while the moved partition’s commands waited)', async () => {
    const primed = await requestsOfAClaim(({ ledger, results, group }) => ({ topics: [ledger, results], groupIds: [group] }));
    expect(primed.fence).toEqual(['InitProducerId']);
    expect(primed.firstTransaction).toEqual(['AddPartitionsToTxn', 'Produce', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn']);
    const unprimed = await requestsOfAClaim(() => undefined);
    expect(unprimed.fence).toEqual(['GroupCoordinator', 'InitProducerId']);
    expect(unprimed.firstTransaction).toEqual(expect.arrayContaining(['Metadata', 'GroupCoordinator']));
  });

  it('retries a fence that finds the previous owner’s transaction open after milliseconds, not after kafkajs’s default wait (its transaction manager ignores the client’s and the producer’s retry)', async () => {
    const kafka = testKafka();
    const topic = uniqueName('fence-retry');
    await createTopics(kafka, [{ topic }]);
    const id = uniqueName('fence-retry-tx');
    const owner = transactionalProducer(kafka, id);
    await owner.connect();
    const open = async (): Promise<void> => {
      const transaction = await owner.transaction();
      await transaction.send({ topic, messages: [{ value: 'open' }] });
    };
    try {
      // A client as most of the worker's: its fence waits kafkajs's default between tries (300 ms in
      // production, 50 ms ± 2% under NODE_ENV=test, as here), whatever the client's retry says.
      await open();
      const slow = await fenceRetryPauses(testKafka(), id);
      expect(slow.length).toBeGreaterThan(0);
      expect(Math.min(...slow)).toBeGreaterThanOrEqual(45);
      // The transactional producers' client: the same fence retries within milliseconds.
      const next = transactionalProducer(kafka, id);
      await next.connect();
      try {
        const transaction = await next.transaction();
        await transaction.send({ topic, messages: [{ value: 'open again' }] });
        const fast = await fenceRetryPauses(transactionalKafka(plaintextKafkaSettings(testBrokers(), uniqueName('fast')), createLogger('silent')), id);
        expect(fast.length).toBeGreaterThan(0);
        expect(Math.max(...fast)).toBeLessThan(30);
      } finally {
        await next.disconnect();
      }
    } finally {
      await owner.disconnect();
    }
  });

  it('settling a partition writes an aborted record and its marker to its settled (ledger) partition, so a read to its end does not wait; initialising alone writes nothing there', async () => {
    const kafka = testKafka();
    const topic = uniqueName('settle');
    const ledger = `${topic}.ledger`;
    await createTopics(kafka, [{ topic }, { topic: ledger }]);
    const producers = new TransactionalProducers(kafka, uniqueName('settle-tx'), (t, partition) => (t === topic ? { topic: ledger, partition } : undefined));
    const admin = kafka.admin();
    await admin.connect();
    try {
      await producers.forPartition(topic, 0, 1);
      // Asked again while the broker has not applied the new topic's leadership yet (it answers
      // NOT_LEADER_OR_FOLLOWER for a moment after the creation: CI once failed here on it).
      expect(await eventually(async () => (await admin.fetchTopicOffsets(ledger))[0]?.high, 10_000, 'the ledger’s end')).toBe('0');
      // Only a producer of the claim's generation settles.
      expect(await producers.settle(topic, 0, 2)).toBe(false);
      expect(await producers.settle(topic, 0, 1)).toBe(true);
      // The record and the abort marker of this producer id at its new epoch: the marker is what
      // ends an older epoch's transaction the coordinator no longer knows (a hanging one). The
      // coordinator writes the marker after abort() returns: the admin's (read_committed) end
      // reaches it a moment later.
      const end = await eventually(
        async () => {
          const high = (await admin.fetchTopicOffsets(ledger))[0]?.high;
          return high === '0' ? undefined : high;
        },
        10_000,
        'the abort marker',
      );
      expect(end).toBe('2');
      // read_committed: the aborted record is not there; its end is not held back.
      const reader = new PartitionReader(kafka);
      try {
        const seen: string[] = [];
        await reader.forEach(ledger, 0, 0n, 2n, (record) => void seen.push(String(record.key)), 10_000);
        expect(seen).toEqual([]);
      } finally {
        await reader.close();
      }
      // Another command topic's partition has no settled partition: nothing to settle.
      const other = uniqueName('settle-other');
      await createTopics(kafka, [{ topic: other }]);
      await producers.forPartition(other, 0, 1);
      expect(await producers.settle(other, 0, 1)).toBe(false);
      expect((await admin.fetchTopicOffsets(ledger))[0]?.high).toBe('2');
    } finally {
      await admin.disconnect();
      await producers.closeAll();
    }
  });

  it("fences the previous owner before forPartition returns: the zombie's open transaction can no longer commit", async () => {
    const { topic, owners } = await twoOwners('fence');
    const [previousOwner, newOwner] = owners;
    try {
      const zombie = await openWith(previousOwner, topic, 'a mark the new owner would not have read');
      // The new owner's claim creates the producer and reads the ledger next, before any
      // transaction of its own: the previous owner must be fenced by then.
      await newOwner.forPartition(topic, 0, 1);
      await expect(zombie.commit()).rejects.toBeInstanceOf(FencedError);
    } finally {
      await previousOwner.closeAll();
      await newOwner.closeAll();
    }
  });

  it('prepare connects the next owner ahead without fencing: the owner still commits; the forPartition that takes it fences', async () => {
    const { topic, owners } = await twoOwners('prepare');
    const [owner, next] = owners;
    try {
      const open = await openWith(owner, topic, 'the owner is still working');
      next.prepare(topic, 0);
      // Let the prepared producer connect (and take kafkajs's idempotent producer id) in full.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await open.commit();
      const later = await openWith(owner, topic, 'before the handover');
      await next.forPartition(topic, 0, 1);
      await expect(later.commit()).rejects.toBeInstanceOf(FencedError);
    } finally {
      await owner.closeAll();
      await next.closeAll();
    }
  });

  it('renew (the partition moved away): drops the producer of that claim and connects one ahead, which the partition’s next claim here takes and fences with', async () => {
    const { topic, owners } = await twoOwners('renew');
    const [here, other] = owners;
    try {
      await here.forPartition(topic, 0, 1);
      // A claim of another generation than this producer's: nothing to renew.
      await here.renew(topic, 0, 2, true);
      expect([here.has(topic, 0, 1), here.isPrepared(topic, 0)]).toEqual([true, false]);
      // Without `ahead` (a topic beyond prepareAhead's bound): dropped, nothing connected ahead.
      await here.renew(topic, 0, 1, false);
      expect([here.has(topic, 0, 1), here.isPrepared(topic, 0)]).toEqual([false, false]);
      await here.forPartition(topic, 0, 2);
      await here.renew(topic, 0, 2, true);
      expect([here.has(topic, 0, 2), here.isPrepared(topic, 0)]).toEqual([false, true]);
      // The other member owned it meanwhile; the partition comes back: the claim takes the prepared producer and fences the other.
      const open = await openWith(other, topic, 'the other owner');
      await here.forPartition(topic, 0, 3);
      expect([here.has(topic, 0, 3), here.isPrepared(topic, 0)]).toEqual([true, false]);
      await expect(open.commit()).rejects.toBeInstanceOf(FencedError);
    } finally {
      await here.closeAll();
      await other.closeAll();
    }
  });
});
