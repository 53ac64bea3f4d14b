import type { Kafka, Message, Producer } from 'kafkajs';
import { SmsWorkerError } from '../errors.ts';
import type { KeyedRecordProducer } from './ports.ts';

/**
 * The kafkajs adapter of `KeyedRecordProducer`, and the producer the command publisher (`produce`,
 * the demo, the bench) sends with.
 *
 * A send that fails is followed by a fresh producer (a new producer id). kafkajs gives back the
 * sequence numbers of every partition of a failed request, also of those the broker did write (an
 * answer whose other partition was refused, a timeout after the write). When the send gives up
 * there, that producer's next send to such a partition carries the written batch's numbers again:
 * the broker answers it as a duplicate without writing it (same record count), or refuses it and
 * every later one as out of order. Kafka's Java producer bumps its epoch for the same reason.
 *
 * A send that takes longer than `sendTimeoutMs` is given up, and its producer replaced too. Its
 * request may still be answered, or fail and give its sequence numbers back, after the caller's
 * next sends on that producer took the following ones: the same hazard as above, later.
 */
export class KafkaKeyedProducer implements KeyedRecordProducer {
  readonly #kafka: Kafka;
  readonly #sendTimeoutMs: number;
  readonly #retry: { retries: number; initialRetryTime: number; maxRetryTime: number };
  #producer: Producer;
  #connected = false;
  /** The fresh producer's connection under way after a failed send (never rejects): the next send waits for it. */
  #connecting: Promise<void> | undefined;
  /** A fresh producer whose connection failed: the next send connects it first. */
  #unconnected: Producer | undefined;
  /** Producers replaced after a failed send, disconnected once their sends had time to end. */
  readonly #retired = new Set<Producer>();
  /** Disconnected by its owner (a shutdown): a send is refused, and no fresh producer is made, until `connect()`. */
  #closed = false;

  /**
   * `sendTimeoutMs`: how long a send may take before it is given up. A few quick retries inside
   * kafkajs, all well within it: a send that gives up on its own, rather than one still retrying after the
   * caller gave up (the receiver answered 503), is what keeps a retried report from being
   * published twice when Kafka comes back. `retries` (default 3, from 100 ms apart, doubling):
   * kafkajs's own tries of a send; the command publisher rides out a leader election with more.
   */
  constructor(kafka: Kafka, options: { sendTimeoutMs: number; retries?: number; initialRetryMs?: number }) {
    this.#kafka = kafka;
    this.#sendTimeoutMs = options.sendTimeoutMs;
    this.#retry = {
      retries: options.retries ?? 3,
      initialRetryTime: options.initialRetryMs ?? 100,
      maxRetryTime: Math.max(200, Math.floor(options.sendTimeoutMs / 8)),
    };
    this.#producer = this.#create();
  }

  #create(): Producer {
    const producer = this.#kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      retry: this.#retry,
    });
    producer.on(producer.events.CONNECT, () => {
      if (this.#producer === producer) this.#connected = true;
    });
    producer.on(producer.events.DISCONNECT, () => {
      if (this.#producer === producer) this.#connected = false;
    });
    return producer;
  }

  get connected(): boolean {
    return this.#connected;
  }

  async connect(): Promise<void> {
    this.#closed = false;
    await this.#producer.connect();
  }

  /**
   * Resolves once the cluster acknowledged every record (`records`: keyed records, or any
   * kafkajs messages, as the command publisher sends); rejects with `KAFKA_SEND_TIMEOUT` after
   * `sendTimeoutMs`. A send given up never starts later: if it was still waiting for a fresh
   * producer's connection, it does not send at all.
   */
  async send(topic: string, records: readonly Message[]): Promise<void> {
    // A send still being tried again (a handover) after its owner shut down: refused, rather than a
    // fresh producer connected that nothing would disconnect.
    if (this.#closed) throw new SmsWorkerError('KAFKA_PRODUCER_CLOSED', `the producer for ${topic} was disconnected`, { retryable: false });
    let producer: Producer | undefined;
    let givenUp = false;
    const sending = (async () => {
      await this.#connecting;
      if (givenUp) return;
      producer = this.#producer;
      if (this.#unconnected === producer) {
        await producer.connect();
        if (this.#unconnected === producer) this.#unconnected = undefined;
      }
      if (givenUp) return;
      await producer.send({ topic, acks: -1, messages: [...records] });
    })();
    sending.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        givenUp = true;
        reject(new SmsWorkerError('KAFKA_SEND_TIMEOUT', `a send to ${topic} took longer than ${this.#sendTimeoutMs} ms`, { retryable: true }));
      }, this.#sendTimeoutMs);
    });
    try {
      await Promise.race([sending, timedOut]);
    } catch (error) {
      // Only the producer that may have sent is replaced; a send given up while a fresh producer
      // connected sent nothing on it.
      if (producer !== undefined && this.#producer === producer && !this.#closed) this.#renew(producer);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Replaces `failed` with a fresh producer, connected now (readiness keeps the last producer's
   * state meanwhile); `failed` is disconnected after a send's time, so sends still under way on it
   * can end.
   */
  #renew(failed: Producer): void {
    const fresh = this.#create();
    this.#producer = fresh;
    this.#unconnected = fresh;
    const connecting: Promise<void> = fresh
      .connect()
      .then(
        () => {
          if (this.#unconnected === fresh) this.#unconnected = undefined;
        },
        // Connected by the next send instead, whose failure renews again: one producer per failed send.
        () => undefined,
      )
      .finally(() => {
        if (this.#connecting === connecting) this.#connecting = undefined;
      });
    this.#connecting = connecting;
    this.#retired.add(failed);
    setTimeout(() => void this.#retire(failed), this.#sendTimeoutMs).unref();
  }

  async #retire(producer: Producer): Promise<void> {
    if (!this.#retired.delete(producer)) return;
    await producer.disconnect().catch(() => undefined);
  }

  async disconnect(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#retired].map((producer) => this.#retire(producer)));
    await this.#producer.disconnect();
  }
}
