import type { Kafka, Producer, Transaction as KafkaTransaction } from 'kafkajs';
import { BatchTooLargeError, FencedError, type PartitionProducers, type Transaction, type TransactionalSession } from './ports.ts';

/** kafkajs's error types for "another producer took over this transactional id". */
const FENCING_TYPES: ReadonlySet<unknown> = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

export function isFencing(error: unknown): boolean {
  return typeof error === 'object' && error !== null && FENCING_TYPES.has((error as { type?: unknown }).type);
}

/** kafkajs's error types for a record batch or request over the broker's size limits. */
const TOO_LARGE_TYPES: ReadonlySet<unknown> = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

export function isTooLarge(error: unknown): boolean {
  return typeof error === 'object' && error !== null && TOO_LARGE_TYPES.has((error as { type?: unknown }).type);
}

/** Runs a kafkajs call, turning its fencing errors into `FencedError` (other errors pass unchanged). */
async function classified<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (isFencing(error)) throw new FencedError(`transactional producer was fenced (${(error as { type: string }).type})`, error);
    if (isTooLarge(error)) throw new BatchTooLargeError(`the broker refused a send as too large (${(error as { type: string }).type})`, error);
    throw error;
  }
}

function session(producer: Producer): TransactionalSession {
  return {
    transaction: () => classified(() => producer.transaction()).then(wrapTransaction),
  };
}

function wrapTransaction(transaction: KafkaTransaction): Transaction {
  return {
    send: (batch) => classified(() => transaction.send({ topic: batch.topic, messages: batch.messages.map((m) => ({ ...m })) })),
    sendOffsets: (offsets) =>
      classified(() =>
        transaction.sendOffsets({
          consumerGroupId: offsets.consumerGroupId,
          topics: offsets.topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ ...p })) })),
        }),
      ),
    commit: () => classified(() => transaction.commit()),
    abort: () => classified(() => transaction.abort()),
  };
}

/**
 * One transactional producer per input partition, with a transactional id derived from the
 * partition (`<prefix>-<topic>-<partition>`). kafkajs's `sendOffsets` carries no consumer-group
 * generation (no KIP-447), so fencing comes from the id instead, as Kafka's EOS did before 2.5:
 * whoever takes over a partition initialises a producer with the same id, which bumps the epoch,
 * aborts the previous owner's open transaction and makes every later write or commit of the
 * previous owner (a "zombie") fail with a fencing error — thrown as `FencedError`.
 */
export class TransactionalProducers implements PartitionProducers {
  readonly #kafka: Kafka;
  readonly #prefix: string;
  readonly #producers = new Map<string, Promise<Producer>>();

  constructor(kafka: Kafka, prefix: string) {
    this.#kafka = kafka;
    this.#prefix = prefix;
  }

  transactionalId(topic: string, partition: number): string {
    return `${this.#prefix}-${topic}-${partition}`;
  }

  /** The producer for a partition, connected (InitProducerId done, so earlier owners are fenced). */
  async forPartition(topic: string, partition: number): Promise<TransactionalSession> {
    const id = this.transactionalId(topic, partition);
    let pending = this.#producers.get(id);
    if (pending === undefined) {
      pending = (async () => {
        const producer = this.#kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000 });
        await producer.connect();
        return producer;
      })();
      this.#producers.set(id, pending);
      pending.catch(() => this.#producers.delete(id));
    }
    return session(await pending);
  }

  /** Drops a producer (after fencing or an unrecoverable transaction error); the next use re-initialises. */
  async discard(topic: string, partition: number): Promise<void> {
    const id = this.transactionalId(topic, partition);
    const pending = this.#producers.get(id);
    this.#producers.delete(id);
    if (pending !== undefined) await (await pending.catch(() => undefined))?.disconnect().catch(() => undefined);
  }

  async closeAll(): Promise<void> {
    const all = [...this.#producers.values()];
    this.#producers.clear();
    await Promise.all(all.map(async (p) => (await p.catch(() => undefined))?.disconnect().catch(() => undefined)));
  }
}
