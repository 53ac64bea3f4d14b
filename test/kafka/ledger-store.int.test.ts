import { describe, expect, it } from 'vitest';
import { readLatestCheckpoint } from '../../src/kafka/ledger-store.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint } from '../../src/worker/ledger-checkpoint.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';

describe('readLatestCheckpoint against a real broker', () => {
  it("'stable' reads past a killed owner's open transaction without waiting for its fate (its last committed checkpoint); 'end' after fencing sees the newest", async () => {
    const kafka = testKafka();
    const ledger = uniqueName('ledger');
    await createTopics(kafka, [{ topic: ledger }]);
    const key = checkpointKey('g', 'cmds');
    const decode = (k: Buffer | null, v: Buffer | null) => decodeCheckpoint(k, v, key);
    const admin = kafka.admin();
    const reader = new PartitionReader(kafka);
    const owner = kafka.producer({ transactionalId: uniqueName('owner'), idempotent: true, maxInFlightRequests: 1 });
    await Promise.all([admin.connect(), owner.connect()]);
    try {
      const committed = await owner.transaction();
      await committed.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint({ next: 5n, open: [] }) }] });
      await committed.commit();
      // The owner is "killed" with a transaction open: its newest checkpoint is not decided.
      const open = await owner.transaction();
      await open.send({
        topic: ledger,
        messages: [{ key, partition: 0, value: encodeCheckpoint({ next: 5n, open: [{ offset: 5n, commandId: 'c5', at: 1 }] }) }],
      });

      // Read while the transaction is open: the read cannot wait for its commit (which comes after),
      // and waiting for its abort (the transaction timeout) would have made the commit below fail.
      const seen = await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'stable');
      expect(seen).toEqual({ next: 5n, open: [] });

      await open.commit();
      expect(await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'end')).toEqual({ next: 5n, open: [{ offset: 5n, commandId: 'c5', at: 1 }] });
    } finally {
      await Promise.all([admin.disconnect(), owner.disconnect(), reader.close()]);
    }
  });
});
