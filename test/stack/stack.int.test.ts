import { SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { useCleanups } from '../helpers/fixtures.ts';
import { createTopics, eventually, testKafka, testRegistry, uniqueName, withAdmin } from '../helpers/kafka.ts';

const cleanups = useCleanups();

async function readAll(kafka: Kafka, topic: string, options: { readUncommitted: boolean; until: (values: string[]) => boolean }): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: uniqueName('reader'), readUncommitted: options.readUncommitted });
  cleanups.add(() => consumer.disconnect());
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const values: string[] = [];
  await consumer.run({
    eachMessage: async ({ message }) => {
      values.push(message.value?.toString() ?? '');
    },
  });
  return eventually(() => (options.until(values) ? values : undefined), 30_000, `records on ${topic}`);
}

describe('the stack the tests run against', () => {
  it('is a real broker and registry', () => {
    console.log(`[integration] running against ${inject('stackMode')} stack: Kafka ${inject('kafkaBrokers')}, registry ${inject('schemaRegistryUrl')}`);
    expect(inject('kafkaBrokers')).toMatch(/:\d+/);
    expect(inject('schemaRegistryUrl')).toMatch(/^https?:\/\//);
  });

  it('registers an Avro schema, produces a Confluent-framed record and decodes it through the registry', async () => {
    const kafka = testKafka();
    const registry = testRegistry();
    const topic = uniqueName('framed');
    await createTopics(kafka, [{ topic }]);
    const schema = {
      type: 'record',
      name: 'Probe',
      namespace: 'io.smsworker.test',
      fields: [
        { name: 'id', type: 'string' },
        { name: 'count', type: 'int' },
      ],
    };
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject: `${topic}-value` });
    expect(id).toBeGreaterThan(0);

    const encoded = await registry.encode(id, { id: 'abc', count: 7 });
    // Confluent wire format: magic byte 0, then the schema id as a big-endian int32.
    expect(encoded[0]).toBe(0);
    expect(encoded.readInt32BE(1)).toBe(id);

    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k', value: encoded }] });
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('decode') });
    cleanups.add(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const decoded: unknown[] = [];
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value !== null) decoded.push(await registry.decode(message.value));
      },
    });
    await eventually(() => (decoded.length > 0 ? true : undefined), 30_000, 'decoded record');
    expect(decoded).toEqual([{ id: 'abc', count: 7 }]);
  });

  it('commits transactional records and offsets atomically; read_committed sees committed records and not aborted ones', async () => {
    const kafka = testKafka();
    const input = uniqueName('tx-in');
    const output = uniqueName('tx-out');
    const group = uniqueName('tx-group');
    await createTopics(kafka, [{ topic: input }, { topic: output }]);

    const plain = kafka.producer();
    await plain.connect();
    await plain.send({ topic: input, messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] });
    await plain.disconnect();

    const producer = kafka.producer({ transactionalId: uniqueName('tx'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const committed = await producer.transaction();
    await committed.send({ topic: output, messages: [{ value: 'committed-1' }] });
    await committed.sendOffsets({ consumerGroupId: group, topics: [{ topic: input, partitions: [{ partition: 0, offset: '2' }] }] });
    await committed.commit();

    const aborted = await producer.transaction();
    await aborted.send({ topic: output, messages: [{ value: 'aborted' }] });
    await aborted.sendOffsets({ consumerGroupId: group, topics: [{ topic: input, partitions: [{ partition: 0, offset: '3' }] }] });
    await aborted.abort();

    const last = await producer.transaction();
    await last.send({ topic: output, messages: [{ value: 'committed-2' }] });
    await last.commit();
    await producer.disconnect();

    const committedView = await readAll(kafka, output, { readUncommitted: false, until: (v) => v.includes('committed-2') });
    expect(committedView).toEqual(['committed-1', 'committed-2']);

    // The aborted record is in the log: a read_uncommitted reader sees it, so the filter above is real.
    const rawView = await readAll(kafka, output, { readUncommitted: true, until: (v) => v.includes('committed-2') });
    expect(rawView).toContain('aborted');

    // Only the committed transaction's offset reached the group.
    const offsets = await withAdmin(kafka, (admin) => admin.fetchOffsets({ groupId: group, topics: [input] }));
    expect(offsets[0]?.partitions[0]?.offset).toBe('2');
  });
});
