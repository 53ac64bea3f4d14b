import { describe, expect, it } from 'vitest';
import { readLatestCheckpoint } from '../../src/kafka/ledger-store.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint, withHangingMarks, type Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';
import { eventually } from '../../tools/poll.ts';

/** A fresh ledger topic, its checkpoint key and decoder, an admin, a reader and a transactional owner writing to it. */
async function ledgerWithOwner() {
  const kafka = testKafka();
  const ledger = uniqueName('ledger');
  await createTopics(kafka, [{ topic: ledger }]);
  const key = checkpointKey('g', 'cmds');
  const decode = (k: Buffer | null, v: Buffer | null) => decodeCheckpoint(k, v, key);
  const admin = kafka.admin();
  const reader = new PartitionReader(kafka);
  const transactionalId = uniqueName('owner');
  const owner = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  await Promise.all([admin.connect(), owner.connect()]);
  const close = async (): Promise<void> => void (await Promise.all([admin.disconnect(), owner.disconnect(), reader.close()]));
  return { ledger, key, decode, admin, reader, owner, transactionalId, close };
}

/** The real reader, noting where each `ends` fetch starts. */
class EndsNotingReader extends PartitionReader {
  readonly endsFrom: bigint[] = [];
  override ends(topic: string, partition: number, from: bigint): Promise<{ high: bigint; stable: bigint }> {
    this.endsFrom.push(from);
    return super.ends(topic, partition, from);
  }
}

describe('PartitionReader against a real broker', () => {
  it('a fetch beyond the partition’s end fails with KAFKA_OFFSET_OUT_OF_RANGE (the error kafkajs throws while parsing), which callers fall back on', async () => {
    const { ledger, reader, owner, close } = await ledgerWithOwner();
    try {
      const txn = await owner.transaction();
      await txn.send({ topic: ledger, messages: [{ key: 'k', partition: 0, value: Buffer.from('v') }] });
      await txn.commit();
      await expect(reader.ends(ledger, 0, 1_000n)).rejects.toMatchObject({ code: 'KAFKA_OFFSET_OUT_OF_RANGE' });
      expect((await reader.ends(ledger, 0, 0n)).high).toBe(2n);
    } finally {
      await close();
    }
  });
});

describe('readLatestCheckpoint against a real broker', () => {
  it("'end' asks for the partition's ends from its end, not from its start (whose answer was up to a megabyte of old checkpoints, decoded for nothing)", async () => {
    const { ledger, key, decode, admin, owner, close } = await ledgerWithOwner();
    const reader = new EndsNotingReader(testKafka());
    try {
      const txn = await owner.transaction();
      await txn.send({
        topic: ledger,
        messages: Array.from({ length: 200 }, (_, i) => ({ key, partition: 0, value: encodeCheckpoint({ next: BigInt(i + 1), open: [] }) })),
      });
      await txn.commit();
      // Once its markers are written the admin's (read_committed) end is past them: 200 records and the commit marker.
      await eventually(async () => ((await admin.fetchTopicOffsets(ledger))[0]?.high === '201' ? true : undefined), 10_000, 'the commit marker');
      expect(await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'end')).toEqual({ next: 200n, open: [] });
      expect(reader.endsFrom).toEqual([201n]);
    } finally {
      await Promise.all([close(), reader.close()]);
    }
  });

  it("'stable' reads past a killed owner's open transaction without waiting for its fate (its last committed checkpoint); 'end' after fencing sees the newest", async () => {
    const { ledger, key, decode, admin, reader, owner, close } = await ledgerWithOwner();
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
      await close();
    }
  });

  it("'settled' waits for an open transaction that commits within the bound (a live owner's marks), and reads to the stable end past one that does not", async () => {
    const { ledger, key, decode, admin, reader, owner, close } = await ledgerWithOwner();
    const marked = { next: 5n, open: [{ offset: 5n, commandId: 'c5', at: 1 }] };
    try {
      const first = await owner.transaction();
      await first.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint({ next: 5n, open: [] }) }] });
      await first.commit();

      // A live owner: its transaction with a mark commits 300 ms into the read.
      const live = await owner.transaction();
      await live.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint(marked) }] });
      const committing = new Promise((resolve) => setTimeout(resolve, 300)).then(() => live.commit());
      expect(await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'settled', 5_000)).toEqual(marked);
      await committing;

      // A killed owner: its transaction stays open; the read gives up on it after the bound.
      const killed = await owner.transaction();
      await killed.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint({ next: 6n, open: [] }) }] });
      const started = Date.now();
      expect(await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'settled', 500)).toEqual(marked);
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
      await killed.abort();
    } finally {
      await close();
    }
  });

  it("'end' after fencing waits for a transaction that ends within the bound before ending it as hanging: one whose commit was decided but not yet marked (a restarted coordinator) commits, and is not aborted here", async () => {
    const { ledger, key, decode, admin, reader, owner, transactionalId, close } = await ledgerWithOwner();
    const answered = { next: 7n, open: [] };
    try {
      // The transaction is open when the read starts, and commits 1 s into it.
      const deciding = await owner.transaction();
      await deciding.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint(answered) }] });
      const committing = new Promise((resolve) => setTimeout(resolve, 1_000)).then(() => deciding.commit());
      let settled = 0;
      const read = readLatestCheckpoint(
        admin,
        reader,
        ledger,
        0,
        decode,
        'end',
        undefined,
        // The owner's id given: its coordinator holds the transaction Ongoing, so the read still waits.
        { transactionalId, settle: async () => (settled += 1), keep: withHangingMarks },
        5_000,
      );
      expect(await read).toEqual(answered);
      await committing;
      // Without the wait the read ended it at once, aborting it here: the checkpoint of a committed transaction lost.
      expect(settled).toBe(0);

      // One that does not end within the bound is settled.
      const hanging = await owner.transaction();
      await hanging.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint({ next: 8n, open: [] }) }] });
      const started = Date.now();
      await expect(
        readLatestCheckpoint(
          admin,
          reader,
          ledger,
          0,
          decode,
          'end',
          undefined,
          {
            settle: async () => {
              settled += 1;
              await hanging.abort();
            },
            keep: withHangingMarks,
          },
          500,
        ),
      ).resolves.toEqual(answered);
      expect(settled).toBe(1);
      expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    } finally {
      await close();
    }
  });

  it("a hanging transaction's marks past the committed checkpoint are kept in doubt when the read after fencing ends it: its coordinator may have committed it with this partition's marker lost, and its commands been called", async () => {
    const { ledger, key, decode, admin, reader, owner, close } = await ledgerWithOwner();
    const committed = { next: 7n, open: [{ offset: 7n, commandId: 'c7', at: 1, by: 'a-1' }] };
    try {
      const first = await owner.transaction();
      await first.send({ topic: ledger, messages: [{ key, partition: 0, value: encodeCheckpoint(committed) }] });
      await first.commit();
      // Two checkpoints in one transaction left open: a mark made (c9), and c10 answered without one.
      const hanging = await owner.transaction();
      await hanging.send({
        topic: ledger,
        messages: [
          {
            key,
            partition: 0,
            value: encodeCheckpoint({
              next: 7n,
              open: [
                { offset: 7n, commandId: 'c7', at: 1, by: 'a-1' },
                { offset: 9n, commandId: 'c9', at: 2, by: 'a-2' },
              ],
            }),
          },
          {
            key,
            partition: 0,
            value: encodeCheckpoint({ next: 9n, open: [{ offset: 9n, commandId: 'c9', at: 2, by: 'a-2' }], done: [{ offset: 10n, commandId: 'c10' }] }),
          },
        ],
      });
      let seenHanging: readonly Checkpoint[] = [];
      const kept = await readLatestCheckpoint(
        admin,
        reader,
        ledger,
        0,
        decode,
        'end',
        undefined,
        {
          settle: () => hanging.abort(),
          keep: (newest, open) => {
            seenHanging = open;
            return withHangingMarks(newest, open);
          },
        },
        500,
      );
      expect(seenHanging.map((c) => c.next)).toEqual([7n, 9n]);
      // Before, the claim went on from the committed checkpoint alone, and sent c9 again. (c7 is
      // below the second hanging checkpoint's next: that transaction answered it, `answered`.)
      expect(kept).toEqual({
        next: 7n,
        open: [
          { offset: 7n, commandId: 'c7', at: 1, by: 'a-1', answered: true },
          { offset: 9n, commandId: 'c9', at: 2, by: 'a-2' },
        ],
      });
      // Ended: a plain read sees the committed checkpoint.
      expect(await readLatestCheckpoint(admin, reader, ledger, 0, decode, 'end')).toEqual(committed);
    } finally {
      await close();
    }
  });
});
