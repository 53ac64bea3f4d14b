import { SchemaType, type SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka, Producer } from 'kafkajs';
import { commandSchema } from '../contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../contracts/command.ts';

/**
 * Publishes commands the way an upstream producer does: Avro, Confluent framing, the command
 * schema registered under `<topic>-value` (TopicNameStrategy). Used by `produce`, the demo,
 * tests and benchmarks.
 */
export class CommandPublisher {
  readonly #producer: Producer;
  readonly #registry: SchemaRegistry;
  readonly #topic: string;
  #schemaId: number | undefined;

  constructor(kafka: Kafka, registry: SchemaRegistry, topic: string) {
    this.#producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    this.#registry = registry;
    this.#topic = topic;
  }

  async connect(): Promise<void> {
    await this.#producer.connect();
    this.#schemaId = (await this.#registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(commandSchema) }, { subject: `${this.#topic}-value` })).id;
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
    await this.#producer.send({
      topic: this.#topic,
      messages: records.map((r) => ({ key: r.key, value: r.value, ...(r.headers !== undefined && { headers: r.headers }) })),
    });
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
