import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { receiptFromAvro } from '../receipts/receipt-avro.ts';
import type { DeliveryReceipt } from '../receipts/report.ts';
import { AvroTopicReader, type AvroTopicReadOptions } from './avro-topic-reader.ts';

export interface ReadReceipt {
  readonly receipt: DeliveryReceipt;
  /** The record key as text (the message id, as the receiver writes it). */
  readonly key: string | null;
  readonly partition: number;
  readonly offset: string;
  /** Record timestamp (ms): when the receiver published the receipt. */
  readonly timestamp: number;
}

/** Reads the receipts topic (see AvroTopicReader), for `tail --receipts`, the demo and tests. */
export class ReceiptReader {
  readonly #reader: AvroTopicReader<DeliveryReceipt>;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#reader = new AvroTopicReader(kafka, registry, topic, receiptFromAvro, 'sms-worker-receipt-reader');
  }

  start(onReceipt: (read: ReadReceipt) => void | Promise<void>, options: AvroTopicReadOptions): Promise<void> {
    return this.#reader.start(({ value, key, partition, offset, timestamp }) => onReceipt({ receipt: value, key, partition, offset, timestamp }), options);
  }

  stop(): Promise<void> {
    return this.#reader.stop();
  }
}
