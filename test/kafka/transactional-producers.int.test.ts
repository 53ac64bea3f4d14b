import { describe, expect, it } from 'vitest';
import { FencedError, type Transaction } from '../../src/kafka/ports.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { TransactionalProducers } from '../../src/kafka/transactional-producers.ts';
import { createTopics, eventually, testKafka, uniqueName } from '../helpers/kafka.ts';

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

describe('TransactionalProducers against a real broker', () => {
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
      expect((await admin.fetchTopicOffsets(ledger))[0]?.high).toBe('0');
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
