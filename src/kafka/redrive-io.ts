/**
 * What `sms-worker redrive` (src/cli/redrive.ts) needs of Kafka: the dead-letter topic's offset
 * ranges, its committed records, and an idempotent acks=all producer for the records that go back.
 */
import type { Kafka, Message } from 'kafkajs';
import { withAdmin } from './admin.ts';
import { KafkaKeyedProducer } from './keyed-producer.ts';
import { PartitionReader } from './partition-reader.ts';

/** A record to publish as it was: key, value, headers (a repeated header's values in order). */
export interface RawRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, Buffer | Buffer[]>>;
}

export interface RedriveIo {
  /** Each partition's first and next offset now (the end a run reads to). */
  ranges(topic: string): Promise<{ partition: number; low: bigint; high: bigint }[]>;
  /** The committed records of [from, to) in order, one fetch in memory at a time. */
  forEach(
    topic: string,
    partition: number,
    from: bigint,
    to: bigint,
    visit: (record: { offset: bigint; value: Buffer | null }) => Promise<void>,
  ): Promise<void>;
  /** Resolves once the cluster acknowledged every record (acks=all); connects on first use. */
  publish(topic: string, records: readonly RawRecord[]): Promise<void>;
  close(): Promise<void>;
}

export function kafkaRedriveIo(kafka: Kafka): RedriveIo {
  const reader = new PartitionReader(kafka);
  let producer: KafkaKeyedProducer | undefined;
  return {
    ranges: (topic) =>
      withAdmin(kafka, async (admin) =>
        (await admin.fetchTopicOffsets(topic)).map((p) => ({ partition: p.partition, low: BigInt(p.low), high: BigInt(p.high) })),
      ),
    forEach: (topic, partition, from, to, visit) =>
      reader.forEach(topic, partition, from, to, (record) => visit({ offset: record.offset, value: record.value })),
    publish: async (topic, records) => {
      if (producer === undefined) {
        producer = new KafkaKeyedProducer(kafka, { sendTimeoutMs: 30_000, retries: 5, initialRetryMs: 300 });
        await producer.connect();
      }
      await producer.send(
        topic,
        records.map((r): Message => ({ key: r.key, value: r.value, headers: { ...r.headers } })),
      );
    },
    close: async () => {
      await producer?.disconnect();
      await reader.close();
    },
  };
}
