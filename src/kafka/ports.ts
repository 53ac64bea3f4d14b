/**
 * What the worker and the receipts receiver need from a Kafka client, in their own terms:
 * `worker/` and `receipts/` import these, never the Kafka client's types (`npm run
 * check:imports` keeps kafkajs inside `kafka/`), so swapping the client touches `kafka/` only. The
 * kafkajs adapters (transactional-producers.ts, command-consumer.ts, keyed-producer.ts) implement
 * them; unit tests use fakes.
 */
import type { RawHeaders } from '../contracts/dead-letter.ts';
import { SmsWorkerError } from '../errors.ts';

/** One record to produce. */
export interface OutgoingRecord {
  readonly key: string | Buffer | null;
  readonly value: Buffer;
  /** An explicit partition (the ledger's partition n belongs to command partition n); else the key decides. */
  readonly partition?: number;
  /** Record headers (the trace context of the command a result answers). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The consumed offsets a transaction commits for a consumer group. */
export interface TransactionOffsets {
  readonly consumerGroupId: string;
  readonly topics: readonly { readonly topic: string; readonly partitions: readonly { readonly partition: number; readonly offset: string }[] }[];
}

/** Where one send put a topic-partition's records: its record batch starts at `baseOffset`. */
export interface WrittenBatch {
  readonly topic: string;
  readonly partition: number;
  readonly baseOffset: bigint;
}

/**
 * One open Kafka transaction. Any method may throw; a fencing error (another instance took over
 * the transactional id) is thrown as a `FencedError`, whatever the client calls it.
 */
export interface Transaction {
  /**
   * Sends records of several topics in one request (one round trip to register the partitions
   * with the transaction, one to produce). Each topic-partition's records become one record
   * batch: keep each below max.message.bytes.
   */
  send(batches: readonly { readonly topic: string; readonly messages: readonly OutgoingRecord[] }[]): Promise<readonly WrittenBatch[]>;
  sendOffsets(offsets: TransactionOffsets): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** A connected transactional producer (its id initialised, so earlier owners are fenced). */
export interface TransactionalSession {
  /** Begins a transaction; throws `FencedError` when the producer was fenced. */
  transaction(): Promise<Transaction>;
}

/** One transactional producer per input partition (see TransactionalProducers). */
export interface PartitionProducers {
  /**
   * The partition's producer, connected; created on first use, and earlier owners fenced (their
   * open transaction aborted) before it returns.
   * `generation` is the group generation of the caller's claim: a caller from an older generation
   * than the producer's, or than the latest one that fenced, gets `FencedError` — inside one
   * process too, so a batch left over from a previous generation can neither reuse the new
   * owner's producer nor re-initialise one.
   */
  forPartition(topic: string, partition: number, generation?: number): Promise<TransactionalSession>;
  /** Drops the partition's producer (only if it belongs to `generation`, when given); the next `forPartition` initialises a fresh one. */
  discard(topic: string, partition: number, generation?: number): Promise<void>;
  /** Whether the partition has a producer of exactly this generation, initialised and not discarded (using it fences nobody). */
  has(topic: string, partition: number, generation: number): boolean;
  /** Hands the partition's producer of generation `from` to generation `to` (a kept claim) without initialising it again; false when there is none. */
  carry(topic: string, partition: number, from: number, to: number): boolean;
}

/** The producer was fenced: another instance owns the partition (or its transactional id) now. */
export class FencedError extends SmsWorkerError {
  constructor(message: string, cause?: unknown) {
    super('PRODUCER_FENCED', message, { retryable: false, cause });
  }
}

/** The broker refused a send as too large for its or the topic's size limit (a record problem, not an outage). */
export class BatchTooLargeError extends SmsWorkerError {
  constructor(message: string, cause?: unknown) {
    super('MESSAGE_TOO_LARGE', message, { retryable: false, cause });
  }
}

/** One consumed command record, as the worker needs it. */
export interface FetchedRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: RawHeaders | undefined;
  readonly offset: string;
  /** The record's Kafka timestamp, epoch ms as a string (as kafkajs gives it): when it was published. */
  readonly timestamp?: string;
}

/** One fetched batch of one partition and the consumer's controls for it. */
export interface FetchedBatch {
  readonly topic: string;
  readonly partition: number;
  readonly highWatermark: string;
  readonly messages: readonly FetchedRecord[];
  /** Marks the offset as taken (the consumer's next fetch of the partition starts after it). */
  resolveOffset(offset: string): void;
  isRunning(): boolean;
  isStale(): boolean;
  /**
   * Sends the member's heartbeat if one is due. kafkajs sends heartbeats (and so learns of a
   * rebalance, and rejoins) only between batches: a batch handler that waits calls this meanwhile.
   * Rejects when the group is rebalancing (or has moved on without this member): let it propagate
   * out of the batch handler, and kafkajs rejoins at once. Any other failure is left to the
   * consumer's own next heartbeat.
   */
  heartbeat(): Promise<void>;
}

/** The offsets the worker reads through the admin client: lag, and the group's committed offset. */
export interface OffsetsAdmin {
  fetchTopicOffsets(topic: string): Promise<{ partition: number; high: string; low: string }[]>;
  fetchOffsets(options: { groupId: string; topics: string[] }): Promise<{ topic: string; partitions: { partition: number; offset: string }[] }[]>;
}

/** The command consumer's group events the worker follows. */
export interface ConsumerEvents {
  /** Joined the group (again): this member's assignment, partitions by topic. */
  onGroupJoin(listener: (event: { memberId: string; memberAssignment: Readonly<Record<string, readonly number[]>> }) => void): void;
  onHeartbeat(listener: () => void): void;
  /** A rebalance was noticed: the member is about to join again (its partitions may move). */
  onRebalancing(listener: () => void): void;
  onStop(listener: () => void): void;
  /** The consumer crashed; `restart`: it restarts itself, else it is gone for good. */
  onCrash(listener: (event: { error: Error; restart: boolean }) => void): void;
  /** The consumer crashed, told before it leaves its group and before onCrash: the member is out of its group from now on. */
  onCrashing(listener: () => void): void;
  /** A failed rejoin is about to be tried again in place (kafkajs's REBALANCING does not come before every rejoin): the member's lanes hold. */
  onRejoinRetrying(listener: () => void): void;
}

/**
 * The command consumer: a consumer-group member that reads `read_committed`, never commits
 * offsets itself (they ride in the result transactions) and hands over whole batches.
 */
export interface CommandConsumer extends ConsumerEvents {
  connect(): Promise<void>;
  subscribe(topic: string): Promise<void>;
  run(options: { partitionsConsumedConcurrently: number; eachBatch: (batch: FetchedBatch) => Promise<void> }): Promise<void>;
  /** Stops fetching the topic, or only the given partitions of it. */
  pause(topic: string, partitions?: readonly number[]): void;
  /** Fetches the topic, or the given partitions of it, again. */
  resume(topic: string, partitions?: readonly number[]): void;
  /** The partition's next fetch starts at `offset` (records dispatched past it were not committed). */
  seek(topic: string, partition: number, offset: bigint): void;
  disconnect(): Promise<void>;
}

/** One record of a `KeyedRecordProducer`: a string key (the partition follows it) and its value. */
export interface KeyedRecord {
  readonly key: string;
  readonly value: Buffer;
  /** The partition to write to (default: the key's). */
  readonly partition?: number;
}

/**
 * An idempotent producer that sends keyed records with acks=all (an acknowledged record is on
 * every in-sync replica), outside any transaction: what the receipts receiver and the handovers
 * publish with.
 */
export interface KeyedRecordProducer {
  /** Connected to the cluster now (it may drop and come back). */
  readonly connected: boolean;
  connect(): Promise<void>;
  /**
   * Resolves once the cluster acknowledged every record; rejects when it was not acknowledged
   * within the producer's send timeout (a bounded wait: the handovers' next batch waits for it).
   */
  send(topic: string, records: readonly KeyedRecord[]): Promise<void>;
  disconnect(): Promise<void>;
}
