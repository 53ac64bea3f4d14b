import { describe, expect, it } from 'vitest';
import { SmsWorkerError } from '../../src/errors.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { readLatestCheckpoint } from '../../src/kafka/ledger-store.ts';
import { TransactionalProducers } from '../../src/kafka/transactional-producers.ts';
import { leaveHangingTransaction } from '../../tools/hanging-transaction.ts';
import { createTopics, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';
import { within } from '../helpers/worker.ts';

describe('a hanging transaction in a ledger partition (one its coordinator no longer knows)', () => {
  it('ends when the claim’s read after fencing finds it and settles the ledger partition; initialising alone leaves it', { timeout: 90_000 }, async () => {
    const kafka = testKafka();
    const topic = uniqueName('hanging');
    const ledger = `${topic}.ledger`;
    await createTopics(kafka, [
      { topic, partitions: 2 },
      { topic: ledger, partitions: 2 },
    ]);
    const prefix = uniqueName('hanging-tx');
    const admin = kafka.admin();
    await admin.connect();
    const reader = new PartitionReader(kafka);
    const settled = new TransactionalProducers(kafka, prefix, (t, partition) => (t === topic ? { topic: ledger, partition } : undefined));
    const bare = new TransactionalProducers(kafka, prefix);
    /** Reads ledger partition n to its end, read_committed, as a claim does after fencing. */
    const readToEnd = async (partition: number): Promise<'reached' | 'stuck'> => {
      const end = await reader.highWatermark(ledger, partition, 0n);
      try {
        await reader.forEach(ledger, partition, 0n, end, () => undefined, 3_000);
        return 'reached';
      } catch (error) {
        if (error instanceof SmsWorkerError && error.code === 'KAFKA_READ_TIMEOUT') return 'stuck';
        throw error;
      }
    };
    try {
      for (const partition of [0, 1])
        await leaveHangingTransaction({
          brokers: testBrokers(),
          admin,
          reader,
          transactionalId: settled.transactionalId(topic, partition),
          topic: ledger,
          partition,
        });
      expect(await readToEnd(0)).toBe('stuck');
      expect(await readToEnd(1)).toBe('stuck');
      // Partition 1 as the worker did before: InitProducerId bumps the epoch, and nothing ends the
      // transaction its coordinator does not know.
      await bare.forPartition(topic, 1, 1);
      expect(await readToEnd(1)).toBe('stuck');
      // Partition 0 as the worker does now: the claim's read after fencing finds a transaction open
      // (none of its own can be) and settles the partition first: the abort marker of the same
      // producer id ends it, and the read reaches the end.
      await settled.forPartition(topic, 0, 1);
      const decodeNothing = (): undefined => undefined;
      await within(
        20_000,
        'the read after fencing',
        readLatestCheckpoint(admin, reader, ledger, 0, decodeNothing, 'end', undefined, () => settled.settle(topic, 0, 1)),
      );
      expect(await readToEnd(0)).toBe('reached');
    } finally {
      await settled.closeAll();
      await bare.closeAll();
      await reader.close();
      await admin.disconnect();
    }
  });
});
