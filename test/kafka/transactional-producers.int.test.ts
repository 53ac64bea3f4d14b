import { describe, expect, it } from 'vitest';
import { FencedError } from '../../src/kafka/ports.ts';
import { TransactionalProducers } from '../../src/kafka/transactional-producers.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';

describe('TransactionalProducers against a real broker', () => {
  it("fences the previous owner before forPartition returns: the zombie's open transaction can no longer commit", async () => {
    const kafka = testKafka();
    const topic = uniqueName('fence');
    await createTopics(kafka, [{ topic }]);
    const prefix = uniqueName('fence-tx');
    const previousOwner = new TransactionalProducers(kafka, prefix);
    const newOwner = new TransactionalProducers(kafka, prefix);
    try {
      const zombie = await (await previousOwner.forPartition(topic, 0, 1)).transaction();
      await zombie.send([{ topic, messages: [{ key: 'k', value: Buffer.from('a mark the new owner would not have read') }] }]);
      // The new owner's claim creates the producer and reads the ledger next, before any
      // transaction of its own: the previous owner must be fenced by then.
      await newOwner.forPartition(topic, 0, 1);
      await expect(zombie.commit()).rejects.toBeInstanceOf(FencedError);
    } finally {
      await previousOwner.closeAll();
      await newOwner.closeAll();
    }
  });
});
