import { randomUUID } from 'node:crypto';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Consumer, Kafka } from 'kafkajs';
import type { RawHeaders } from '../contracts/dead-letter.ts';
import { withRegistryRetry } from '../schema/codec.ts';

/** One record of an Avro topic, decoded. */
export interface ReadAvroRecord<T> {
  readonly value: T;
  /** The record key as text. */
  readonly key: string | null;
  readonly partition: number;
  readonly offset: string;
  /** Record timestamp (ms). */
  readonly timestamp: number;
  readonly headers: RawHeaders | undefined;
}

export interface AvroTopicReadOptions {
  readonly fromBeginning: boolean;
  /** A record that does not decode, or a callback that threw: reported, and reading goes on. */
  readonly onError?: (error: unknown, offset: string) => void;
}

/**
 * Reads committed records of one Avro topic (`read_committed`) with a throwaway group that never
 * commits, so it can run anywhere — including inside a worker's pod — without joining or
 * disturbing the worker's group. `fromAvro` checks and converts each decoded value.
 */
export class AvroTopicReader<T> {
  readonly #consumer: Consumer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;
  readonly #fromAvro: (decoded: unknown) => T;
  /** Aborted by stop(): a record's registry look-up waiting to be asked again gives up. */
  readonly #stopping = new AbortController();

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string, fromAvro: (decoded: unknown) => T, groupPrefix: string) {
    this.#consumer = kafka.consumer({ groupId: `${groupPrefix}-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 500 });
    this.#registry = registry;
    this.#topic = topic;
    this.#fromAvro = fromAvro;
  }

  async start(onRecord: (read: ReadAvroRecord<T>) => void | Promise<void>, options: AvroTopicReadOptions): Promise<void> {
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.#topic, fromBeginning: options.fromBeginning });
    await this.#consumer.run({
      autoCommit: false,
      eachMessage: async ({ message, partition, heartbeat }) => {
        if (message.value === null) return;
        try {
          const value = this.#fromAvro(await decodeRiding(this.#registry, message.value, heartbeat, this.#stopping.signal));
          await onRecord({
            value,
            key: message.key?.toString('utf8') ?? null,
            partition,
            offset: message.offset,
            timestamp: Number(message.timestamp),
            headers: message.headers,
          });
        } catch (error) {
          options.onError?.(error, message.offset);
        }
      },
    });
  }

  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#consumer.disconnect();
  }
}

/**
 * Decodes a record, asking again when the registry did not answer the writer schema's look-up (a
 * request past its timeout, a 5xx after the client's own retries): a reader that skipped the record
 * instead (reported through onError) lost it for good; `tail` and the tests' result collectors
 * read each record once. A record that does not decode, or whose schema id is not in the registry
 * (404), fails at once. The attempts take longer than a session (4 timeouts of 10 s and the waits),
 * and kafkajs heartbeats only between records: each retry heartbeats first, so the reader stays in
 * its group.
 */
function decodeRiding(registry: SchemaRegistry, value: Buffer, heartbeat: () => Promise<void>, signal: AbortSignal): Promise<unknown> {
  return withRegistryRetry(() => registry.decode(value), {
    signal,
    onRetry: () => void heartbeat().catch(() => undefined),
  });
}
