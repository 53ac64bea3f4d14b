import type { Consumer, ConsumerConfig, EachBatchPayload, Kafka } from 'kafkajs';
import { onConsumerCrashing, onRejoinRetrying } from './consumer-crashes.ts';
import type { CommandConsumer, FetchedBatch } from './ports.ts';

/** The worker's view of one kafkajs batch: its records and the consumer's controls for it. */
export function fetchedBatch(payload: EachBatchPayload): FetchedBatch {
  const { batch } = payload;
  return {
    topic: batch.topic,
    partition: batch.partition,
    highWatermark: batch.highWatermark,
    messages: batch.messages,
    resolveOffset: (offset) => payload.resolveOffset(offset),
    isRunning: () => payload.isRunning(),
    isStale: () => payload.isStale(),
    heartbeat: async () => {
      try {
        await payload.heartbeat();
      } catch (error) {
        if (isRejoinError(error)) throw error;
      }
    },
  };
}

/**
 * kafkajs's errors after which the member must join again (its runner rejoins on these when they
 * reach it, also from a batch handler): a rebalance under way, a stale generation, a moved
 * coordinator, or a member the group no longer knows.
 */
export function isRejoinError(error: unknown): boolean {
  const type = typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'ILLEGAL_GENERATION' || type === 'NOT_COORDINATOR_FOR_GROUP' || type === 'UNKNOWN_MEMBER_ID';
}

function topicPartitions(topic: string, partitions: readonly number[] | undefined): { topic: string; partitions?: number[] }[] {
  return [partitions === undefined ? { topic } : { topic, partitions: [...partitions] }];
}

/**
 * The command consumer on kafkajs. Offsets are never committed by the consumer (they ride in the
 * result transactions), and the worker resolves a record's offset when it dispatches the record
 * (the next fetch starts after it; records it does not take stay unresolved and are fetched
 * again), so auto-commit and auto-resolve are off whatever the caller wants.
 */
export class KafkaCommandConsumer implements CommandConsumer {
  readonly #consumer: Consumer;
  readonly #groupId: string;
  readonly #unsubscribes: (() => void)[] = [];
  #disconnected: Promise<void> | undefined;

  constructor(kafka: Kafka, config: ConsumerConfig) {
    this.#consumer = kafka.consumer(config);
    this.#groupId = config.groupId;
  }

  connect(): Promise<void> {
    return this.#consumer.connect();
  }

  /** From the beginning: a group without committed offsets owes a result to every command on the topic. */
  subscribe(topic: string): Promise<void> {
    return this.#consumer.subscribe({ topic, fromBeginning: true });
  }

  run(options: { partitionsConsumedConcurrently: number; eachBatch: (batch: FetchedBatch) => Promise<void> }): Promise<void> {
    return this.#consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
      eachBatch: (payload) => options.eachBatch(fetchedBatch(payload)),
    });
  }

  pause(topic: string, partitions?: readonly number[]): void {
    this.#consumer.pause(topicPartitions(topic, partitions));
  }

  resume(topic: string, partitions?: readonly number[]): void {
    this.#consumer.resume(topicPartitions(topic, partitions));
  }

  seek(topic: string, partition: number, offset: bigint): void {
    this.#consumer.seek({ topic, partition, offset: offset.toString() });
  }

  /** Leaves the group and closes; once (the worker may leave early on a graceful stop, then release). */
  disconnect(): Promise<void> {
    this.#disconnected ??= this.#consumer.disconnect().finally(() => {
      for (const unsubscribe of this.#unsubscribes.splice(0)) unsubscribe();
    });
    return this.#disconnected;
  }

  onGroupJoin(listener: (event: { memberId: string; memberAssignment: Readonly<Record<string, readonly number[]>> }) => void): void {
    this.#consumer.on(this.#consumer.events.GROUP_JOIN, ({ payload }) => listener({ memberId: payload.memberId, memberAssignment: payload.memberAssignment }));
  }

  onHeartbeat(listener: () => void): void {
    this.#consumer.on(this.#consumer.events.HEARTBEAT, () => listener());
  }

  onRebalancing(listener: () => void): void {
    this.#consumer.on(this.#consumer.events.REBALANCING, () => listener());
  }

  onStop(listener: () => void): void {
    this.#consumer.on(this.#consumer.events.STOP, () => listener());
  }

  onCrashing(listener: () => void): void {
    this.#unsubscribes.push(onConsumerCrashing(this.#groupId, () => listener()));
  }

  onRejoinRetrying(listener: () => void): void {
    this.#unsubscribes.push(onRejoinRetrying(this.#groupId, () => listener()));
  }

  onCrash(listener: (event: { error: Error; restart: boolean }) => void): void {
    this.#consumer.on(this.#consumer.events.CRASH, ({ payload }) => listener({ error: payload.error, restart: payload.restart }));
  }
}
