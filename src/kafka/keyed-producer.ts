import type { Kafka, Producer } from 'kafkajs';
import type { KeyedRecord, KeyedRecordProducer } from './ports.ts';

/** The kafkajs adapter of `KeyedRecordProducer`. */
export class KafkaKeyedProducer implements KeyedRecordProducer {
  readonly #producer: Producer;
  #connected = false;

  /**
   * `sendTimeoutMs`: how long the caller waits for a send. A few quick retries inside kafkajs,
   * all well within it: a send that gives up on its own, rather than one still retrying after the
   * caller gave up (the receiver answered 503), is what keeps a retried report from being
   * published twice when Kafka comes back.
   */
  constructor(kafka: Kafka, options: { sendTimeoutMs: number }) {
    this.#producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: { retries: 3, initialRetryTime: 100, maxRetryTime: Math.max(200, Math.floor(options.sendTimeoutMs / 8)) },
    });
    this.#producer.on(this.#producer.events.CONNECT, () => (this.#connected = true));
    this.#producer.on(this.#producer.events.DISCONNECT, () => (this.#connected = false));
  }

  get connected(): boolean {
    return this.#connected;
  }

  async connect(): Promise<void> {
    await this.#producer.connect();
  }

  async send(topic: string, records: readonly KeyedRecord[]): Promise<void> {
    await this.#producer.send({ topic, acks: -1, messages: [...records] });
  }

  async disconnect(): Promise<void> {
    await this.#producer.disconnect();
  }
}
