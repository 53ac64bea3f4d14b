/**
 * Makes a hanging transaction in a ledger partition and checks that a claim's read after fencing
 * (InitProducerId, then the ledger read that settles an open transaction it finds) ends it. A
 * diagnostic, not part of `npm run bench`; it changes a broker setting for the time it runs, so
 * point it at a throwaway local stack only:
 *
 *   KAFKA_BROKERS=… node bench/hanging-transaction.ts [--without-settle]
 *
 * How the transaction is made to hang: tools/hanging-transaction.ts.
 */
import { randomUUID } from 'node:crypto';
import { readLatestCheckpoint } from '../src/kafka/ledger-store.ts';
import { PartitionReader } from '../src/kafka/partition-reader.ts';
import { TransactionalProducers } from '../src/kafka/transactional-producers.ts';
import { leaveHangingTransaction } from '../tools/hanging-transaction.ts';
import { benchKafka, createTopics } from './lib/kafka.ts';
import { exitWith } from './lib/proc.ts';

async function main(): Promise<number> {
  const brokers = (process.env['KAFKA_BROKERS'] ?? '').split(',').filter((b) => b !== '');
  if (brokers.length === 0) throw new Error('set KAFKA_BROKERS');
  const id = randomUUID().slice(0, 6);
  const topic = `hang.${id}.commands`;
  const ledger = `${topic}.ledger`;
  const prefix = `hang-${id}`;
  const kafka = benchKafka(brokers.join(','), 'hanging-transaction');
  await createTopics(kafka, [
    { topic, partitions: 1 },
    { topic: ledger, partitions: 1 },
  ]);
  const admin = kafka.admin();
  await admin.connect();
  const reader = new PartitionReader(kafka);
  try {
    await leaveHangingTransaction({ brokers, admin, reader, transactionalId: `${prefix}-${topic}-0`, topic: ledger, partition: 0 });
    console.log('a transaction of the command partition’s transactional id left hanging in the ledger partition; reading that to its end (read_committed):');
    const readToEnd = async (): Promise<string> => {
      const high = await reader.highWatermark(ledger, 0, 0n);
      try {
        await reader.forEach(ledger, 0, 0n, high, () => undefined, 5_000);
        return `reached ${high}`;
      } catch (error) {
        return `stuck: ${error instanceof Error ? error.message : String(error)}`;
      }
    };
    console.log(`  before: ${await readToEnd()}`);
    // --without-settle: what InitProducerId alone does (the worker before the settle step).
    const producers = new TransactionalProducers(kafka, prefix, (t, partition) => (t === topic ? { topic: ledger, partition } : undefined));
    await producers.forPartition(topic, 0, 1);
    if (!process.argv.includes('--without-settle'))
      await readLatestCheckpoint(admin, reader, ledger, 0, () => undefined, 'end', undefined, {
        settle: () => producers.settle(topic, 0, 1),
        keep: (committed) => committed,
      });
    console.log(
      `  after the command partition's producer was initialised${process.argv.includes('--without-settle') ? '' : ' and the claim read the ledger'}: ${await readToEnd()}`,
    );
    await producers.closeAll();
    return 0;
  } finally {
    await reader.close();
    await admin.disconnect();
  }
}

exitWith('hanging-transaction', main);
