import { SchemaType, type SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { commandSchema } from '../contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../contracts/command.ts';
import { withRegistryRetry } from '../schema/codec.ts';
import { KafkaKeyedProducer } from './keyed-producer.ts';

/**
 * How long one publish may take. kafkajs's retries end well within it: its default five, from
 * 300 ms apart and doubling (about 8 s, each wait capped at an eighth of the timeout), so a
 * publish rides out a leader election as it did with kafkajs's own producer. A publish that fails
 * or times out is followed by a fresh producer, so a caller that goes on after it (the chaos run
 * publishes again) cannot have its next records taken for duplicates.
 */
const PUBLISH_TIMEOUT_MS = 30_000;
const PUBLISH_RETRIES = 5;
const PUBLISH_INITIAL_RETRY_MS = 300;

/**
 * Publishes commands the way an upstream producer does: Avro, Confluent framing, the command
 * schema registered under `<topic>-value` (TopicNameStrategy). Used by `produce`, the demo,
 * tests and benchmarks.
 */
export class CommandPublisher {
  readonly #producer: KafkaKeyedProducer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;
  #schemaId: number | undefined;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#producer = new KafkaKeyedProducer(kafka, {
      sendTimeoutMs: PUBLISH_TIMEOUT_MS,
      retries: PUBLISH_RETRIES,
      initialRetryMs: PUBLISH_INITIAL_RETRY_MS,
    });
    this.#registry = registry;
    this.#topic = topic;
  }

  /** `onRegistryRetry`: told of each registration that failed and is tried again (the registry did not answer). */
  async connect(onRegistryRetry?: (error: unknown, retryNumber: number, delayMs: number) => void): Promise<void> {
    await this.#producer.connect();
    // Registering caches the schema in the client, so encoding asks the registry nothing more.
    const subject = `${this.#topic}-value`;
    const registered = await withRegistryRetry(
      () => this.#registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(commandSchema) }, { subject }),
      onRegistryRetry === undefined ? {} : { onRetry: onRegistryRetry },
    );
    this.#schemaId = registered.id;
  }

  get schemaId(): number {
    if (this.#schemaId === undefined) throw new Error('CommandPublisher.connect() first');
    return this.#schemaId;
  }

  async encode(command: SendCommand): Promise<Buffer> {
    return this.#registry.encode(this.schemaId, commandToAvro(command));
  }

  /** Sends already-encoded values (or raw bytes, for poison-record tests) in one request. */
  async publishRaw(records: readonly { key: string | Buffer | null; value: Buffer | null; headers?: Record<string, string> }[]): Promise<void> {
    if (records.length === 0) return;
    await this.#producer.send(
      this.#topic,
      records.map((r) => ({ key: r.key, value: r.value, ...(r.headers !== undefined && { headers: r.headers }) })),
    );
  }

  async publish(commands: readonly { command: SendCommand; key?: string }[]): Promise<void> {
    const records = await Promise.all(
      commands.map(async ({ command, key }) => ({
        key: key ?? command.commandId,
        value: await this.encode(command),
        headers: { 'sms-worker-produced-at': String(Date.now()) },
      })),
    );
    await this.publishRaw(records);
  }

  async disconnect(): Promise<void> {
    await this.#producer.disconnect();
  }
}
