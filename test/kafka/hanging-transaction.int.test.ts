import { describe, expect, it } from 'vitest';
import { SmsWorkerError } from '../../src/errors.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { readLatestCheckpoint } from '../../src/kafka/ledger-store.ts';
import { TransactionalProducers } from '../../src/kafka/transactional-producers.ts';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint, withHangingMarks, type Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
import { leaveHangingTransaction } from '../../tools/hanging-transaction.ts';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createTopics, testBrokers, testKafka, uniqueName } from '../helpers/kafka.ts';
import { proxiedSocketFactory, TcpProxy } from '../helpers/tcp-proxy.ts';
import { within } from '../helpers/worker.ts';

/** A command topic and its ledger (two partitions each), a transactional-id prefix, an admin and a reader, for one test. */
async function ledgerTopics(name: string): Promise<{
  readonly kafka: ReturnType<typeof testKafka>;
  readonly topic: string;
  readonly ledger: string;
  readonly prefix: string;
  readonly admin: ReturnType<ReturnType<typeof testKafka>['admin']>;
  readonly reader: PartitionReader;
  readonly close: () => Promise<void>;
}> {
  const kafka = testKafka();
  const topic = uniqueName(name);
  const ledger = `${topic}.ledger`;
  await createTopics(kafka, [
    { topic, partitions: 2 },
    { topic: ledger, partitions: 2 },
  ]);
  const admin = kafka.admin();
  await admin.connect();
  const reader = new PartitionReader(kafka);
  const close = async (): Promise<void> => {
    await reader.close();
    await admin.disconnect();
  };
  return { kafka, topic, ledger, prefix: uniqueName(`${name}-tx`), admin, reader, close };
}

describe('a hanging transaction in a ledger partition (one its coordinator no longer knows)', () => {
  it('ends when the claim’s read after fencing finds it and settles the ledger partition; initialising alone leaves it', { timeout: 90_000 }, async () => {
    const { kafka, topic, ledger, prefix, admin, reader, close } = await ledgerTopics('hanging');
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
        readLatestCheckpoint(admin, reader, ledger, 0, decodeNothing, 'end', undefined, {
          settle: () => settled.settle(topic, 0, 1),
          keep: (committed) => committed,
        }),
      );
      expect(await readToEnd(0)).toBe('reached');
    } finally {
      await settled.closeAll();
      await bare.closeAll();
      await close();
    }
  });

  it(
    'is ended as soon as its coordinator says it is done with the transactional id (DescribeTransactions, DescribeProducers), not after the decided wait',
    { timeout: 90_000 },
    async () => {
      const { kafka, topic, ledger, prefix, admin, reader, close } = await ledgerTopics('abandoned');
      const producers = new TransactionalProducers(kafka, prefix, (t, partition) => (t === topic ? { topic: ledger, partition } : undefined));
      const transactionalId = producers.transactionalId(topic, 0);
      try {
        await leaveHangingTransaction({ brokers: testBrokers(), admin, reader, transactionalId, topic: ledger, partition: 0 });
        // Before the fence the coordinator holds the id at the open transaction's epoch, CompleteCommit;
        // after it, Empty at the next: either way it writes no marker for what is open in the partition.
        expect(await reader.markerOutlook(ledger, 0, transactionalId)).toBe('abandoned');
        await producers.forPartition(topic, 0, 1);
        expect(await reader.markerOutlook(ledger, 0, transactionalId)).toBe('abandoned');
        // Nothing open in partition 1, and another id's coordinator: not abandoned.
        expect(await reader.markerOutlook(ledger, 1, transactionalId)).toBe('due');
        expect(await reader.markerOutlook(ledger, 0, `${transactionalId}-unknown`)).toBe('unknown');

        // The claim's read after its fence, with a decided wait of two minutes: it ends the
        // transaction within seconds because the coordinator says so.
        let settled = 0;
        const decodeNothing = (): undefined => undefined;
        await within(
          30_000,
          'the read after fencing',
          readLatestCheckpoint(
            admin,
            reader,
            ledger,
            0,
            decodeNothing,
            'end',
            undefined,
            {
              transactionalId,
              settle: async () => {
                settled += 1;
                return producers.settle(topic, 0, 1);
              },
              keep: (committed) => committed,
            },
            120_000,
          ),
        );
        expect(settled).toBe(1);
        expect(await reader.markerOutlook(ledger, 0, transactionalId)).toBe('due');
      } finally {
        await producers.closeAll();
        await close();
      }
    },
  );

  it(
    'asking whether a transaction is lost is bounded: a broker that stops answering makes it unknown within its timeout, not kafkajs’s 30 s',
    { timeout: 60_000 },
    async () => {
      const [broker] = testBrokers();
      const proxy = await TcpProxy.start(broker ?? '');
      const kafka = createKafka(plaintextKafkaSettings(testBrokers(), uniqueName('frozen')), createLogger('silent'), undefined, {
        socketFactory: proxiedSocketFactory(proxy),
      });
      const topic = uniqueName('frozen');
      await createTopics(testKafka(), [{ topic }]);
      const reader = new PartitionReader(kafka);
      const owner = new TransactionalProducers(testKafka(), uniqueName('frozen-tx'));
      const transactionalId = owner.transactionalId(topic, 0);
      // Initialised: its coordinator holds the id.
      await owner.forPartition(topic, 0, 1);
      try {
        // Connected, metadata and coordinator known: nothing open, so the markers are not in question.
        expect(await reader.markerOutlook(topic, 0, transactionalId)).toBe('due');
        proxy.freeze();
        expect(await within(10_000, 'the outlook of a frozen broker', reader.markerOutlook(topic, 0, transactionalId, { timeoutMs: 500 }))).toBe('unknown');
        // That ask still runs (kafkajs's request timeout is 30 s). One begun before the caller's fence
        // is not taken for an answer after it: unknown at once, not after a 5 s wait for the old ask.
        expect(
          await within(2_000, 'the outlook after a fence', reader.markerOutlook(topic, 0, transactionalId, { notBefore: performance.now(), timeoutMs: 5_000 })),
        ).toBe('unknown');
      } finally {
        await owner.closeAll();
        await proxy.close();
        await reader.close().catch(() => undefined);
      }
    },
  );

  it(
    'the marks a checkpoint of unknown fate carried are kept in doubt and written back: one left hanging, and one ended by a later transaction’s ABORT (its own marker lost)',
    { timeout: 120_000 },
    async () => {
      const { kafka, topic, ledger, prefix, admin, reader, close } = await ledgerTopics('unsure');
      const key = checkpointKey('g', topic);
      const decode = (k: Buffer | null, v: Buffer | null): Checkpoint | undefined => decodeCheckpoint(k, v, key);
      const mark = (offset: bigint, by: string) => ({ offset, commandId: `c${offset}`, at: 1, by });
      const committed: Checkpoint = { next: 5n, open: [mark(5n, 'a-1')] };
      const lost: Checkpoint = { next: 5n, open: [mark(5n, 'a-1'), mark(9n, 'a-2')] };
      const owners: TransactionalProducers[] = [];
      const owner = (): TransactionalProducers => {
        const made = new TransactionalProducers(kafka, prefix, (t, partition) => (t === topic ? { topic: ledger, partition } : undefined));
        owners.push(made);
        return made;
      };
      /** A claim's read after its fence, as the worker's (source-wiring.ts): the kept checkpoint committed back. */
      const claimRead = (producers: TransactionalProducers, partition: number, generation: number): Promise<Checkpoint | undefined> =>
        readLatestCheckpoint(
          admin,
          reader,
          ledger,
          partition,
          decode,
          'end',
          undefined,
          {
            settle: (kept) => producers.settle(topic, partition, generation, kept === undefined ? undefined : { key, value: encodeCheckpoint(kept) }),
            keep: withHangingMarks,
          },
          2_000,
        );
      try {
        for (const partition of [0, 1]) {
          const first = await (await owner().forPartition(topic, partition, 1)).transaction();
          await first.send([{ topic: ledger, messages: [{ key, partition, value: encodeCheckpoint(committed) }] }]);
          await first.commit();
          // The transaction its coordinator no longer knows, with a checkpoint that marked c9 (called, maybe).
          await leaveHangingTransaction({
            brokers: testBrokers(),
            admin,
            reader,
            transactionalId: owners[0]?.transactionalId(topic, partition) ?? '',
            topic: ledger,
            partition,
            record: { key, value: encodeCheckpoint(lost) },
          });
        }
        const kept: Checkpoint = { next: 5n, open: [mark(5n, 'a-1'), mark(9n, 'a-2')] };

        // Partition 0: still open at the claim's read after its fence.
        const claim0 = owner();
        await claim0.forPartition(topic, 0, 2);
        expect(await within(20_000, 'the read after fencing', claimRead(claim0, 0, 2))).toEqual(kept);

        // Partition 1: the producer's next transaction (a mark of c10) aborted, its ABORT marker ending the lost one too.
        const claim1 = owner();
        const aborted = await (await claim1.forPartition(topic, 1, 2)).transaction();
        await aborted.send([
          {
            topic: ledger,
            messages: [{ key, partition: 1, value: encodeCheckpoint({ next: 5n, open: [mark(5n, 'a-1'), mark(9n, 'a-2'), mark(10n, 'a-3')] }) }],
          },
        ]);
        await aborted.abort();
        const claim1Next = owner();
        await claim1Next.forPartition(topic, 1, 3);
        // c10's mark was that abort's own: never called. c9's may have been.
        expect(await within(20_000, 'the read after fencing', claimRead(claim1Next, 1, 3))).toEqual(kept);

        // Written back: a plain read (the next claim's, or this one's after a crash) sees them.
        for (const partition of [0, 1]) expect(await readLatestCheckpoint(admin, reader, ledger, partition, decode, 'end')).toEqual(kept);
      } finally {
        for (const made of owners) await made.closeAll();
        await close();
      }
    },
  );
});
