import { randomUUID } from 'node:crypto';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Consumer, Kafka } from 'kafkajs';
import { receiptFromAvro } from '../receipts/receipt-avro.ts';
import type { DeliveryReceipt } from '../receipts/report.ts';

export interface ReadReceipt {
  readonly receipt: DeliveryReceipt;
  /** The record key as text (the message id, as the receiver writes it). */
  readonly key: string | null;
  readonly partition: number;
  readonly offset: string;
  /** Record timestamp (ms): when the receiver published the receipt. */
  readonly timestamp: number;
}

/**
 * Reads the receipts topic with a throwaway group that never commits (like ResultReader), for
 * `tail --receipts`, the demo and tests.
 */
export class ReceiptReader {
  readonly #consumer: Consumer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#consumer = kafka.consumer({ groupId: `sms-worker-receipt-reader-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 500 });
    this.#registry = registry;
    this.#topic = topic;
  }

  async start(
    onReceipt: (read: ReadReceipt) => void | Promise<void>,
    options: { fromBeginning: boolean; onError?: (error: unknown, offset: string) => void },
  ): Promise<void> {
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.#topic, fromBeginning: options.fromBeginning });
    await this.#consumer.run({
      autoCommit: false,
      eachMessage: async ({ message, partition }) => {
        if (message.value === null) return;
        try {
          const receipt = receiptFromAvro(await this.#registry.decode(message.value));
          await onReceipt({ receipt, key: message.key?.toString('utf8') ?? null, partition, offset: message.offset, timestamp: Number(message.timestamp) });
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
