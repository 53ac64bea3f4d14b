import { describe, expect, it } from 'vitest';
import { KafkaKeyedProducer } from '../../src/kafka/keyed-producer.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { handoverKey } from '../../src/worker/ownership/handover-record.ts';
import { ledgerHandovers } from '../../src/worker/ownership/handovers.ts';
import type { OpenMark } from '../../src/worker/lane/ledger-checkpoint.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';
import { within } from '../helpers/worker.ts';

describe('handovers in a real ledger topic', () => {
  it('every one of many handovers written at once (a process handing several partitions over) is there for the next owner to find', async () => {
    const kafka = testKafka();
    const ledger = uniqueName('handovers');
    await createTopics(kafka, [{ topic: ledger, partitions: 2 }]);
    const producer = new KafkaKeyedProducer(kafka, { sendTimeoutMs: 5_000 });
    await producer.connect();
    const reader = new PartitionReader(kafka);
    const admin = kafka.admin();
    await admin.connect();
    try {
      const handovers = ledgerHandovers({
        ledgerTopic: ledger,
        key: handoverKey('group', 'commands'),
        producer,
        reader,
        admin,
        maxRecordBytes: 1_000_000,
        graceMs: 20_000,
        pollMs: 20,
        log: createLogger('silent'),
      });
      const marks: OpenMark[] = Array.from({ length: 40 }, (_, i) => ({ offset: BigInt(i), commandId: `c${i}`, at: Date.now(), by: `claim.${i + 1}` }));
      // All at once, to one partition (and a few to the other), as a retiring claim's calls end together.
      await within(
        30_000,
        'writing the handovers',
        Promise.all(marks.map((mark, i) => handovers.write(i % 8 === 0 ? 1 : 0, mark.offset, mark, { kind: 'withdrawn' }))),
      );
      const onPartition = (p: number): OpenMark[] => marks.filter((_, i) => (i % 8 === 0 ? 1 : 0) === p);
      for (const partition of [0, 1]) {
        const lookout = handovers.lookout(partition, onPartition(partition), Date.now());
        const found = await within(
          30_000,
          'finding the handovers',
          Promise.all(onPartition(partition).map((mark) => lookout.settlementOf(mark, new AbortController().signal))),
        );
        expect(found).toEqual(onPartition(partition).map(() => ({ kind: 'withdrawn' })));
      }
    } finally {
      await producer.disconnect();
      await reader.close();
      await admin.disconnect();
    }
  });
});
