import { randomUUID } from 'node:crypto';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Consumer, Kafka } from 'kafkajs';
import { resultFromAvro } from '../contracts/result-avro.ts';
import type { RawHeaders } from '../contracts/dead-letter.ts';
import type { CommandResult } from '../contracts/result.ts';

export interface ReadResult {
  readonly result: CommandResult;
  readonly partition: number;
  readonly offset: string;
  /** Broker timestamp of the result record (ms). */
  readonly timestamp: number;
  /** The record's headers (the worker writes the command span's `traceparent` there). */
  readonly headers: RawHeaders | undefined;
}

/**
 * Reads committed results (`read_committed`) with a throwaway group that never commits, so it
 * can run anywhere — including inside a worker's pod — without joining or disturbing the
 * worker's group.
 */
export class ResultReader {
  readonly #consumer: Consumer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#consumer = kafka.consumer({ groupId: `sms-worker-reader-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 500 });
    this.#registry = registry;
    this.#topic = topic;
  }

  async start(
    onResult: (read: ReadResult) => void | Promise<void>,
    options: { fromBeginning: boolean; onError?: (error: unknown, offset: string) => void },
  ): Promise<void> {
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.#topic, fromBeginning: options.fromBeginning });
    await this.#consumer.run({
      autoCommit: false,
      eachMessage: async ({ message, partition }) => {
        if (message.value === null) return;
        try {
          const result = resultFromAvro(await this.#registry.decode(message.value));
          await onResult({ result, partition, offset: message.offset, timestamp: Number(message.timestamp), headers: message.headers });
        } catch (error) {
          options.onError?.(error, message.offset);
        }
      },
    });
  }

  async stop(): Promise<void> {
    await this.#consumer.disconnect();
  }
}
