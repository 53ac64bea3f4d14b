import type { Admin, Producer } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createTopics, testKafka, uniqueName } from '../helpers/kafka.ts';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { publishedResults, type SearchedCommand, type SearchedSource } from '../../src/kafka/result-search.ts';
import { resultCommandId } from '../../src/contracts/result.ts';

/** A result record's value in this test: its source as JSON (the worker's are Avro; the search only needs the source). */
const value = (source: SearchedSource): string => JSON.stringify(source);
const sourceOf = async (bytes: Buffer): Promise<SearchedSource | undefined> => {
  try {
    return JSON.parse(bytes.toString()) as SearchedSource;
  } catch {
    return undefined;
  }
};

/** A one-partition result topic, with an admin, a reader and a plain producer over it, closed after `run`. */
async function withResultTopic(run: (on: { topic: string; admin: Admin; reader: PartitionReader; producer: Producer }) => Promise<void>): Promise<void> {
  const kafka = testKafka();
  const topic = uniqueName('results');
  await createTopics(kafka, [{ topic }]);
  const admin = kafka.admin();
  const reader = new PartitionReader(kafka);
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await Promise.all([admin.connect(), producer.connect()]);
  try {
    await run({ topic, admin, reader, producer });
  } finally {
    await Promise.all([admin.disconnect(), producer.disconnect(), reader.close()]);
  }
}

describe('publishedResults (the results of commands in doubt, in the result topic already)', () => {
  it('finds a committed result naming the very record, on any partition; not an aborted one, nor one of another record; waits for a transaction open there', async () => {
    const kafka = testKafka();
    const topic = uniqueName('results');
    await createTopics(kafka, [{ topic, partitions: 3 }]);
    const admin = kafka.admin();
    const reader = new PartitionReader(kafka);
    const producer = kafka.producer({ transactionalId: uniqueName('earlier-owner'), idempotent: true, maxInFlightRequests: 1 });
    const slow = kafka.producer({ transactionalId: uniqueName('slow'), idempotent: true, maxInFlightRequests: 1 });
    await Promise.all([admin.connect(), producer.connect(), slow.connect()]);
    try {
      const at = (offset: number): SearchedSource => ({ topic: 'commands', partition: 4, offset: String(offset) });
      const commands: SearchedCommand[] = [
        { commandId: 'committed', source: at(1) },
        { commandId: 'aborted', source: at(2) },
        { commandId: 'other-record', source: at(3) },
        { commandId: 'late', source: at(4) },
        { commandId: 'never', source: at(5) },
      ];
      const since = Date.now();
      const committed = await producer.transaction();
      await committed.send({ topic, messages: [{ key: 'committed', value: value(at(1)), partition: 2 }] });
      await committed.commit();
      const aborted = await producer.transaction();
      await aborted.send({ topic, messages: [{ key: 'aborted', value: value(at(2)), partition: 0 }] });
      await aborted.abort();
      // The same commandId, another record (an upstream that reused the id on another offset).
      const other = await producer.transaction();
      await other.send({ topic, messages: [{ key: 'other-record', value: value(at(9)), partition: 1 }] });
      await other.commit();
      // Open when the search begins, committed a second later: the search waits for it.
      const late = await slow.transaction();
      await late.send({ topic, messages: [{ key: 'late', value: value(at(4)), partition: 0 }] });
      const search = publishedResults({ admin, reader, sourceOf }, topic, commands, since);
      await new Promise((r) => setTimeout(r, 1_000));
      await late.commit();
      expect([...(await search)].sort()).toEqual([0, 3]);
    } finally {
      await Promise.all([admin.disconnect(), producer.disconnect(), slow.disconnect(), reader.close()]);
    }
  });

  it('matches a long commandId as the ledger keeps it (its first 256 units) against the result’s key (its first 128 and a digest), by the source', async () => {
    await withResultTopic(async ({ topic, admin, reader, producer }) => {
      const long = 'x'.repeat(300);
      const source: SearchedSource = { topic: 'commands', partition: 0, offset: '4' };
      const since = Date.now();
      const resultKey = resultCommandId(long);
      expect(resultKey).not.toBe(long.slice(0, 256));
      await producer.send({ topic, messages: [{ key: resultKey, value: value(source) }] });
      const asLedgerHasIt = { commandId: long.slice(0, 256), source };
      await expect(publishedResults({ admin, reader, sourceOf }, topic, [asLedgerHasIt], since)).resolves.toEqual(new Set([0]));
      // The same prefix, another record: not it.
      await expect(publishedResults({ admin, reader, sourceOf }, topic, [{ ...asLedgerHasIt, source: { ...source, offset: '5' } }], since)).resolves.toEqual(
        new Set(),
      );
    });
  });

  it('starts at `since`: a result written before it is not read; past its record limit it fails, naming the limit', async () => {
    await withResultTopic(async ({ topic, admin, reader, producer }) => {
      const source: SearchedSource = { topic: 'commands', partition: 0, offset: '1' };
      await producer.send({ topic, messages: [{ key: 'before', value: value(source) }] });
      await new Promise((r) => setTimeout(r, 50));
      const since = Date.now();
      await producer.send({ topic, messages: Array.from({ length: 5 }, (_, i) => ({ key: `filler-${i}`, value: 'x' })) });
      await expect(publishedResults({ admin, reader, sourceOf }, topic, [{ commandId: 'before', source }], since)).resolves.toEqual(new Set());
      await expect(publishedResults({ admin, reader, sourceOf }, topic, [{ commandId: 'before', source }], since, { maxRecords: 3 })).rejects.toMatchObject({
        code: 'RESULT_SEARCH_TOO_LONG',
        message: expect.stringContaining('3 records'),
      });
    });
  });
});
