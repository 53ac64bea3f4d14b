/**
 * Publishes receipts to the receipts topic: Avro with Confluent framing (schema registered under
 * `<topic>-value`), key = message id, an idempotent producer (acks=all, so an acknowledged
 * receipt is on every in-sync replica). Each publish is bounded by a timeout: the HTTP answer
 * must not wait on an unreachable Kafka (the service retries a 503).
 */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { deliveryReceiptSchema } from '../contracts/avro.ts';
import { SmsWorkerError } from '../errors.ts';
import type { KeyedRecord, KeyedRecordProducer } from '../kafka/ports.ts';
import { registerRacing } from '../schema/codec.ts';
import { receiptToAvro } from './receipt-avro.ts';
import type { DeliveryReceipt } from './report.ts';
import { SendBatcher } from '../kafka/send-batcher.ts';

/**
 * Records per Kafka send: a receipt is ≈ 300 bytes, so a send stays far below the broker's
 * default 1 MB message-batch limit per partition. A single post with more reports goes alone.
 */
export const MAX_RECORDS_PER_SEND = 500;
/** Receipts waiting for Kafka, at most; a post beyond it is answered 503 at once (memory bound: ≈ 6 MB). */
export const MAX_QUEUED_RECEIPTS = 20_000;

/** Kafka did not acknowledge in time (or refused): the post is answered 503 and retried by the service. */
export class ReceiptsUnavailableError extends SmsWorkerError {
  constructor(message: string, cause?: unknown) {
    super('RECEIPTS_KAFKA_UNAVAILABLE', message, { retryable: true, cause });
  }
}

export class ReceiptPublisher {
  readonly #producer: KeyedRecordProducer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;
  readonly #timeoutMs: number;
  readonly #batcher: SendBatcher<KeyedRecord>;
  #schemaId: number | undefined;

  /**
   * `producer`: idempotent, acks=all (see src/kafka/keyed-producer.ts), its own retries bounded
   * well within `timeoutMs`, so that a retried report is not published twice.
   */
  constructor(producer: KeyedRecordProducer, registry: SchemaRegistry, options: { topic: string; timeoutMs: number }) {
    this.#producer = producer;
    this.#registry = registry;
    this.#topic = options.topic;
    this.#timeoutMs = options.timeoutMs;
    this.#batcher = new SendBatcher({
      send: async (messages) => {
        await this.#producer.send(this.#topic, messages);
      },
      maxRecords: MAX_RECORDS_PER_SEND,
      maxQueued: MAX_QUEUED_RECEIPTS,
    });
  }

  /** Registers the schema and connects the producer; fails start-up when either cannot be reached. */
  async connect(): Promise<void> {
    this.#schemaId = (await registerRacing(this.#registry, JSON.stringify(deliveryReceiptSchema), `${this.#topic}-value`)).id;
    await this.#producer.connect();
  }

  get ready(): boolean {
    return this.#producer.connected && this.#schemaId !== undefined;
  }

  /**
   * Resolves once Kafka acknowledged every receipt; throws ReceiptsUnavailableError otherwise
   * (not acknowledged within the timeout, refused, or too many receipts already waiting).
   */
  async publish(receipts: readonly DeliveryReceipt[]): Promise<void> {
    const schemaId = this.#schemaId;
    if (schemaId === undefined) throw new ReceiptsUnavailableError('publisher not connected');
    const expired = new ReceiptsUnavailableError(`Kafka did not acknowledge within ${this.#timeoutMs} ms`);
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(expired), this.#timeoutMs);
    const timeout = deadline.signal;
    const timedOut = new Promise<never>((_, reject) => {
      timeout.addEventListener('abort', () => reject(expired), { once: true });
    });
    // Observed even when encoding fails first, so a later timeout is never an unhandled rejection.
    timedOut.catch(() => undefined);
    try {
      // Encoding only asks the registry on a cold cache (the id was registered at connect).
      const messages = await Promise.race([
        Promise.all(receipts.map(async (r) => ({ key: r.messageId, value: await this.#registry.encode(schemaId, receiptToAvro(r)) }))),
        timedOut,
      ]);
      await Promise.race([this.#batcher.submit(messages, timeout), timedOut]);
    } catch (error) {
      if (error instanceof ReceiptsUnavailableError) throw error;
      throw new ReceiptsUnavailableError(`receipts not stored: ${error instanceof Error ? error.message : String(error)}`, error);
    } finally {
      clearTimeout(timer);
    }
  }

  async disconnect(): Promise<void> {
    await this.#producer.disconnect();
  }
}
