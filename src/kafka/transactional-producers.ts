import type { Kafka, Producer, Transaction as KafkaTransaction } from 'kafkajs';
import type { KafkaSettings } from '../config/index.ts';
import type { Logger } from '../observability/logger.ts';
import { retry } from '../retry.ts';
import { createKafka } from './client.ts';
import { groupCoordinatorMoving, TRANSACTION_COORDINATOR } from './coordinator-cache.ts';
import { takeCreatedCluster, transactionalClusters } from './kafkajs.ts';
import { BatchTooLargeError, FencedError, type PartitionProducers, type Transaction, type TransactionalSession } from './ports.ts';

/** kafkajs's error types for "another producer took over this transactional id". */
const FENCING_TYPES: ReadonlySet<unknown> = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

/** Whether a kafkajs error's `type` (its protocol error name) is one of `types`. */
function hasType(error: unknown, types: ReadonlySet<unknown>): boolean {
  return typeof error === 'object' && error !== null && types.has((error as { type?: unknown }).type);
}

export function isFencing(error: unknown): boolean {
  return hasType(error, FENCING_TYPES);
}

/** kafkajs's error types for a record batch or request over the broker's size limits. */
const TOO_LARGE_TYPES: ReadonlySet<unknown> = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);

export function isTooLarge(error: unknown): boolean {
  return hasType(error, TOO_LARGE_TYPES);
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
    send: async (batches) => {
      const written = await classified(() =>
        transaction.sendBatch({ topicMessages: batches.map((b) => ({ topic: b.topic, messages: b.messages.map((m) => ({ ...m })) })) }),
      );
      return written.map((w) => ({ topic: w.topicName, partition: w.partition, baseOffset: BigInt(w.baseOffset ?? '-1') }));
    },
    sendOffsets: (offsets) =>
      classified(() =>
        // Again in the same transaction while the group's coordinator moves (groupCoordinatorMoving):
        // AddOffsetsToTxn and TxnOffsetCommit of the same offsets are idempotent.
        retry(
          () =>
            transaction.sendOffsets({
              consumerGroupId: offsets.consumerGroupId,
              topics: offsets.topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ ...p })) })),
            }),
          { ...SEND_OFFSETS_RETRY, retryable: groupCoordinatorMoving },
        ),
      ),
    commit: () => classified(() => transaction.commit()),
    abort: () => classified(() => transaction.abort()),
  };
}

/**
 * How `sendOffsets` is tried again while the group's coordinator moves: 50 ms doubling to 1 s, 8
 * attempts (about 3.5 s in all, well within the 60 s transaction timeout). A coordinator that
 * moved answers at the next lookup; one that is loading the group takes tens of ms to seconds.
 */
const SEND_OFFSETS_RETRY = { attempts: 8, backoff: { initialMs: 50, maxMs: 1_000, jitter: 0.5 } } as const;

/**
 * Request retries of the transactional producers. A transaction started right after the previous
 * one committed is refused with CONCURRENT_TRANSACTIONS until the coordinator has written the
 * previous commit's markers (a few ms); kafkajs retries that like any retriable error, after its
 * initial retry time (200 ms here by default). Marks commit back to back, so every send waited
 * that long behind its mark whenever it happened. Measured on the local broker, 200 back-to-back
 * transactions of two records each: with the client default p90 5–193 ms, p99 235–244 ms; with
 * these settings p90 9 ms, p99 20 ms, max 29–39 ms. In the open-loop bench (40% load, log-normal
 * upstream) the time to send's p99 went from 139 ms (10 ms doubling) to 107 ms (5 ms × 1.3). The
 * Java client retries this error after 20 ms for the same reason. Giving up still takes seconds
 * (25 retries growing by 1.3 add up to about 12 s).
 */
export const TRANSACTION_REQUEST_RETRY = { retries: 25, initialRetryTime: 5, multiplier: 1.3, maxRetryTime: 10_000 } as const;

/**
 * The Kafka client the transactional producers are made from: TRANSACTION_REQUEST_RETRY for the
 * transaction manager's requests too (InitProducerId, the fence, and TxnOffsetCommit), which kafkajs
 * retries with neither the client's nor the producer's retry, and its clusters remember their
 * group's coordinator (transactionalClusters); the producer's own requests have the retry already.
 */
export function transactionalKafka(settings: KafkaSettings, logger: Logger, clientId = settings.clientId): Kafka {
  // The client's own retry (metadata, connections, coordinator lookups) stays the default: at 5 ms
  // a broker restart would be a burst of reconnections and error lines from every producer.
  const kafka = createKafka(settings, logger, clientId);
  transactionalClusters(kafka, TRANSACTION_REQUEST_RETRY);
  return kafka;
}

/** A producer with a partition's transactional id, as the worker makes them (connect() fences nobody: see forPartition). */
export function transactionalProducer(kafka: Kafka, transactionalId: string): Producer {
  return kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 60_000, retry: TRANSACTION_REQUEST_RETRY });
}

/** What each producer's cluster learns when it connects: the topics its transactions write, the groups whose offsets they commit. */
export interface ProducerPriming {
  readonly topics: readonly string[];
  readonly groupIds: readonly string[];
}

/** Where a producer's initialisation writes its aborted record: see TransactionalProducers's constructor. */
export type SettledPartition = (topic: string, partition: number) => { readonly topic: string; readonly partition: number } | undefined;

/** The key of that record (never a checkpoint's key, which starts with `checkpoint/`). */
export const SETTLE_KEY = 'producer-initialised';

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
  readonly #settled: SettledPartition | undefined;
  /** What each producer connected ahead learns when it connects (#connected); undefined: nothing. */
  readonly #prime: ProducerPriming | undefined;
  readonly #producers = new Map<string, { generation: number; readonly producer: Promise<Producer> }>();
  /** The newest generation that used each transactional id: older ones are zombies. */
  readonly #latest = new Map<string, number>();
  /** Producers connected ahead of a claim's fence (prepare), not initialised with their transactional id. */
  readonly #prepared = new Map<string, Promise<Producer>>();

  /**
   * `settled`: the partition whose end a claim reads after fencing (the intent ledger's partition
   * of a command partition), undefined for none: `settle` ends a hanging transaction there.
   */
  constructor(kafka: Kafka, prefix: string, settled?: SettledPartition, prime?: ProducerPriming) {
    this.#kafka = kafka;
    this.#prefix = prefix;
    this.#settled = settled;
    this.#prime = prime;
  }

  /** closeAll ran: nothing more is connected ahead. */
  #closed = false;

  transactionalId(topic: string, partition: number): string {
    return `${this.#prefix}-${topic}-${partition}`;
  }

  /** The producer for a partition, connected (InitProducerId done, so earlier owners are fenced). */
  async forPartition(topic: string, partition: number, generation = 0): Promise<TransactionalSession> {
    const id = this.transactionalId(topic, partition);
    const latest = this.#latest.get(id) ?? 0;
    if (generation < latest) throw new FencedError(`a claim of generation ${generation} of ${topic}[${partition}] is stale: generation ${latest} owns it now`);
    this.#latest.set(id, generation);
    let entry = this.#producers.get(id);
    if (entry !== undefined && entry.generation !== generation) {
      // A producer of an older generation of this process: replace it (a new claim fences).
      this.#producers.delete(id);
      void entry.producer.then((p) => p.disconnect()).catch(() => undefined);
      entry = undefined;
    }
    if (entry === undefined) {
      const prepared = this.#prepared.get(id);
      this.#prepared.delete(id);
      const created = (async () => {
        const producer = (await prepared?.catch(() => undefined)) ?? (await this.#connected(id));
        // connect() only initialises kafkajs's idempotent producer id, without the transactional
        // id: the previous owner is not fenced and its open transaction not aborted until the first
        // transaction() sends InitProducerId with the id. Do that now, so the claim that creates
        // the producer fences before it reads the ledger (and the first mark does not pay for it).
        // An empty transaction aborts locally: no partitions, no EndTxn.
        try {
          const first = await classified(() => producer.transaction());
          await classified(() => first.abort());
        } catch (error) {
          await producer.disconnect().catch(() => undefined);
          throw error;
        }
        return producer;
      })();
      entry = { generation, producer: created };
      this.#producers.set(id, entry);
      const mine = entry;
      created.catch(() => {
        if (this.#producers.get(id) === mine) this.#producers.delete(id);
      });
    }
    return session(await entry.producer);
  }

  /**
   * Ends a transaction the coordinator no longer knows (a "hanging" one, e.g. after a broker
   * restart) in the partition's settled partition: the claim calls this when its read after
   * fencing finds the ledger partition's last stable offset below its end (nothing of this owner
   * is open yet, and the fence aborted every earlier owner's transaction the coordinator knew). A
   * transaction of the partition's producer writes one record there and ends: its marker, of this
   * producer id at the new epoch, also ends the older epoch's transaction (Kafka completes a
   * producer's open transaction at its next marker), with the same fate.
   *
   * With `record` (the checkpoint the claim goes on from, carrying the hanging transaction's marks:
   * withHangingMarks) it commits: the hanging records become readable, and `record`, written after
   * them, is the partition's newest checkpoint, so the marks it keeps outlive this claim. Without,
   * it aborts, and its record (SETTLE_KEY, no value) is never read. False when there is nothing to
   * settle or no producer of `generation`.
   */
  async settle(topic: string, partition: number, generation: number, record?: { readonly key: string; readonly value: Buffer }): Promise<boolean> {
    const target = this.#settled?.(topic, partition);
    const entry = this.#producers.get(this.transactionalId(topic, partition));
    if (target === undefined || entry === undefined || entry.generation !== generation) return false;
    const transaction = await classified(async () => (await entry.producer).transaction());
    const message = record === undefined ? { partition: target.partition, key: SETTLE_KEY, value: null } : { partition: target.partition, ...record };
    let sent = false;
    try {
      await classified(() => transaction.send({ topic: target.topic, messages: [message] }));
      sent = true;
    } finally {
      if (sent && record !== undefined) await classified(() => transaction.commit());
      else await classified(() => transaction.abort());
    }
    return true;
  }

  /**
   * Connects the partition's next producer ahead of its fence: the connection, its metadata and
   * kafkajs's idempotent producer id (fencing nobody: see forPartition), so the fence itself is one
   * InitProducerId. The next forPartition that creates a producer for the partition takes it; one
   * already prepared is kept (closeAll disconnects an unused one; a failed one is replaced).
   */
  prepare(topic: string, partition: number): void {
    const id = this.transactionalId(topic, partition);
    // Nothing is connected ahead once the process closed its producers (a renew finishing late).
    if (this.#prepared.has(id) || this.#closed) return;
    const connecting = this.#connected(id);
    this.#prepared.set(id, connecting);
    connecting.catch(() => {
      if (this.#prepared.get(id) === connecting) this.#prepared.delete(id);
    });
  }

  /**
   * Prepares (see `prepare`) the producers of the topic's partitions this process has none for,
   * before it knows which it will be given (at start-up, and when its group starts rebalancing), so
   * a partition that moves here is fenced without waiting for a connection: on a loaded 2-core
   * machine the connection took 20–140 ms of each moved partition's claim. None on a topic of
   * more than `max` partitions: an idle producer is a connection or two to the brokers. Resolves
   * once they are connected (or failed: a claim then connects its own).
   */
  async prepareAhead(topic: string, partitions: number, max: number): Promise<void> {
    if (partitions > max) return;
    for (let partition = 0; partition < partitions; partition++)
      if (!this.#producers.has(this.transactionalId(topic, partition))) this.prepare(topic, partition);
    await Promise.allSettled(this.#prepared.values());
  }

  /**
   * A producer with the partition's transactional id, connected but not yet initialised with it,
   * and primed (`prime`): its cluster already knows its transaction coordinator, the metadata of
   * the topics its transactions write and its groups' coordinators. Each producer has a cluster of
   * its own, and kafkajs fetches a topic's metadata at the first send to it, the transaction
   * coordinator at the fence and the group's coordinator at the first sendOffsets: a moved
   * partition's fence and first transaction paid those round trips while its commands waited.
   */
  async #connected(id: string): Promise<Producer> {
    // Taken just before and just after: a client not made by transactionalKafka leaves none.
    takeCreatedCluster();
    const producer = transactionalProducer(this.#kafka, id);
    const cluster = takeCreatedCluster();
    await producer.connect();
    const prime = this.#prime;
    if (cluster !== undefined && prime !== undefined) {
      // Best effort: the fence and the transactions look up whatever priming did not.
      await Promise.all([
        prime.topics.length > 0 ? cluster.addMultipleTargetTopics([...prime.topics]) : undefined,
        cluster.findGroupCoordinator({ groupId: id, coordinatorType: TRANSACTION_COORDINATOR }),
        ...prime.groupIds.map((groupId) => cluster.findGroupCoordinator({ groupId })),
      ]).catch(() => undefined);
    }
    return producer;
  }

  /**
   * A partition this process stopped working (it moved to another member): its producer is fenced
   * by the next owner, so it is dropped, and a fresh one connected ahead (`prepare`) for when the
   * partition comes back. Now, not at the next rebalance: then every such connection competed with
   * that rebalance's claims (a scale-down's member taking 8 partitions back fenced in 26–65 ms,
   * its admin reads waiting 130–140 ms, measured). `ahead`: connect the fresh one (the topic is
   * within prepareAhead's bound).
   */
  async renew(topic: string, partition: number, generation: number, ahead: boolean): Promise<void> {
    const entry = this.#producers.get(this.transactionalId(topic, partition));
    if (entry === undefined || entry.generation !== generation) return;
    await this.discard(topic, partition, generation);
    // Claimed again meanwhile (a newer entry): that claim connected its own.
    if (ahead && !this.#producers.has(this.transactionalId(topic, partition))) this.prepare(topic, partition);
  }

  /** Whether a producer is connected ahead for the partition, waiting for its next claim. */
  isPrepared(topic: string, partition: number): boolean {
    return this.#prepared.has(this.transactionalId(topic, partition));
  }

  /** Drops a producer (after fencing or an unrecoverable transaction error); the next use re-initialises. */
  async discard(topic: string, partition: number, generation?: number): Promise<void> {
    const id = this.transactionalId(topic, partition);
    const entry = this.#producers.get(id);
    if (entry === undefined || (generation !== undefined && entry.generation !== generation)) return;
    this.#producers.delete(id);
    await (await entry.producer.catch(() => undefined))?.disconnect().catch(() => undefined);
  }

  has(topic: string, partition: number, generation: number): boolean {
    const entry = this.#producers.get(this.transactionalId(topic, partition));
    return entry !== undefined && entry.generation === generation && (this.#latest.get(this.transactionalId(topic, partition)) ?? 0) === generation;
  }

  carry(topic: string, partition: number, from: number, to: number): boolean {
    const id = this.transactionalId(topic, partition);
    const entry = this.#producers.get(id);
    if (entry === undefined || entry.generation !== from || (this.#latest.get(id) ?? 0) !== from || to < from) return false;
    entry.generation = to;
    this.#latest.set(id, to);
    return true;
  }

  async closeAll(): Promise<void> {
    this.#closed = true;
    const all = [...this.#producers.values()].map((e) => e.producer);
    all.push(...this.#prepared.values());
    this.#producers.clear();
    this.#prepared.clear();
    await Promise.all(all.map(async (producer) => (await producer.catch(() => undefined))?.disconnect().catch(() => undefined)));
  }
}
