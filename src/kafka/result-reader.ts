import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { resultFromAvro } from '../contracts/result-avro.ts';
import type { RawHeaders } from '../contracts/dead-letter.ts';
import type { CommandResult } from '../contracts/result.ts';
import { AvroTopicReader, type AvroTopicReadOptions } from './avro-topic-reader.ts';

export interface ReadResult {
  readonly result: CommandResult;
  readonly partition: number;
  readonly offset: string;
  /** Broker timestamp of the result record (ms). */
  readonly timestamp: number;
  /** The record's headers (the worker writes the command span's `traceparent` there). */
  readonly headers: RawHeaders | undefined;
}

/** Reads committed results (see AvroTopicReader), for `tail`, the demo and tests. */
export class ResultReader {
  readonly #reader: AvroTopicReader<CommandResult>;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#reader = new AvroTopicReader(kafka, registry, topic, resultFromAvro, 'sms-worker-reader');
  }

  start(onResult: (read: ReadResult) => void | Promise<void>, options: AvroTopicReadOptions): Promise<void> {
    return this.#reader.start(
      ({ value, partition, offset, timestamp, headers }) => onResult({ result: value, partition, offset, timestamp, headers }),
      options,
    );
  }

  stop(): Promise<void> {
    return this.#reader.stop();
  }
}
