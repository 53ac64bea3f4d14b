/**
 * A replacement for kafkajs 2.2.4's producer send (src/producer/sendMessages.js), installed by
 * kafkajs.ts before kafkajs loads its producer. The same requests as kafkajs's, with the two faults
 * of its retry fixed (produce-progress.ts says which): each partition's records are sent until that
 * partition is answered, whichever broker leads it by then, and an attempt's requests all settle
 * before the next attempt starts. Sequence numbers are handled as kafkajs does: taken under the
 * broker's lock, given back when the request fails, so a retry within the same send carries the
 * same ones and the broker deduplicates records it did write. A send that gives up after the broker
 * wrote some of its records leaves the producer's numbers behind the broker's, as in kafkajs: the
 * worker's transactional producers are dropped after a failed transaction and initialised afresh.
 */
import { ProduceProgress, type PartitionAnswer } from './produce-progress.ts';

/** The little of kafkajs's internals (Cluster, Broker, EosManager, retrier) this uses. */
interface InternalBroker {
  readonly nodeId: number;
  produce(request: {
    transactionalId: string | undefined;
    producerId: unknown;
    producerEpoch: unknown;
    acks: number;
    timeout: number | undefined;
    compression: unknown;
    topicData: TopicData[];
  }): Promise<{ topics: { topicName: string; partitions: { partition: number }[] }[] }>;
}
interface InternalCluster {
  refreshMetadataIfNecessary(): Promise<void>;
  refreshMetadata(): Promise<void>;
  findTopicPartitionMetadata(topic: string): { partitionId: number; leader?: number | null }[];
  findBroker(query: { nodeId: number }): Promise<InternalBroker>;
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  isConnected(): boolean;
  connect(): Promise<void>;
  removeBroker(address: { host: unknown; port: unknown }): void;
}
interface InternalEosManager {
  acquireBrokerLock(broker: InternalBroker): Promise<void>;
  releaseBrokerLock(broker: InternalBroker): void;
  isTransactional(): boolean;
  addPartitionsToTransaction(topicData: TopicData[]): Promise<void>;
  getSequence(topic: string, partition: number): number;
  updateSequence(topic: string, partition: number, increment: number): void;
  getTransactionalId(): string;
  getProducerId(): unknown;
  getProducerEpoch(): unknown;
}
interface InternalLogger {
  debug(message: string, extra?: object): void;
  error(message: string, extra?: object): void;
}
type Retrier = <T>(fn: (bail: (error: unknown) => never, retryCount: number, retryTime: number) => Promise<T>) => Promise<T>;
type Partitioner = (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;

interface TopicData {
  readonly topic: string;
  readonly partitions: { partition: number; messages: readonly unknown[]; firstSequence?: number }[];
}

export interface SendMessagesDeps {
  readonly logger: InternalLogger;
  readonly cluster: InternalCluster;
  readonly partitioner: Partitioner;
  readonly eosManager: InternalEosManager;
  readonly retrier: Retrier;
}

/** kafkajs's own error classes and its stale-metadata test, taken from the kafkajs being patched. */
export interface KafkaJsErrors {
  readonly KafkaJSMetadataNotLoaded: new (message: string) => Error;
  readonly staleMetadata: (error: unknown) => boolean;
}

interface ErrorFields {
  readonly name?: string;
  readonly retriable?: boolean;
  readonly host?: unknown;
  readonly port?: unknown;
  readonly message?: string;
}

/** Errors that make the next attempt look the leaders up again (the retry below refreshes the metadata). */
const REFRESHING = new Set(['KafkaJSMetadataNotLoaded', 'KafkaJSConnectionError', 'KafkaJSConnectionClosedError']);

const fieldsOf = (reason: unknown): ErrorFields => (typeof reason === 'object' && reason !== null ? (reason as ErrorFields) : {});

/** Whether a failure calls for fresh metadata before the next attempt (a leader that moved, a broker gone), as kafkajs's send decides. */
function needsFreshMetadata(reason: unknown, staleMetadata: (error: unknown) => boolean): boolean {
  const { name, retriable } = fieldsOf(reason);
  return staleMetadata(reason) || REFRESHING.has(name ?? '') || (name === 'KafkaJSProtocolError' && retriable === true);
}

/**
 * Which of an attempt's failures decides what happens next (pure): one that cannot succeed on a
 * retry (kafkajs's `retriable: false`, e.g. a batch too large, which the caller splits), else one
 * that calls for fresh metadata (a leader that moved), else the first. With every request of an
 * attempt settled, several can fail; the first to settle is not the one that says most.
 */
export function decisiveFailure(reasons: readonly unknown[], staleMetadata: (error: unknown) => boolean): unknown {
  return reasons.find((r) => fieldsOf(r).retriable === false) ?? reasons.find((r) => needsFreshMetadata(r, staleMetadata)) ?? reasons[0];
}

export function createSendMessages(errors: KafkaJsErrors) {
  return ({ logger, cluster, partitioner, eosManager, retrier }: SendMessagesDeps) =>
    async ({
      acks,
      timeout,
      compression,
      topicMessages,
    }: {
      acks: number;
      timeout?: number;
      compression?: unknown;
      topicMessages: { topic: string; messages: unknown[] }[];
    }): Promise<PartitionAnswer[]> => {
      const progress = new ProduceProgress<unknown>();

      const sendPending = async (): Promise<void> => {
        await cluster.refreshMetadataIfNecessary();
        const perBroker = new Map<number, TopicData[]>();
        for (const { topic, messages } of topicMessages) {
          if (progress.isPlanned(topic)) continue;
          const partitionMetadata = cluster.findTopicPartitionMetadata(topic);
          if (partitionMetadata.length === 0) {
            logger.debug('Producing to topic without metadata', { topic });
            throw new errors.KafkaJSMetadataNotLoaded('Producing to topic without metadata');
          }
          const perPartition: Record<string, unknown[]> = {};
          for (const message of messages) (perPartition[partitioner({ topic, partitionMetadata, message })] ??= []).push(message);
          progress.plan(topic, perPartition);
        }
        for (const [topic, pending] of progress.pending()) {
          const partitionMetadata = cluster.findTopicPartitionMetadata(topic);
          for (const { partition, messages } of pending) {
            const leader = partitionMetadata.find((p) => p.partitionId === partition)?.leader;
            // kafkajs skips a partition missing from its metadata, and the send resolves without it.
            if (leader === null || leader === undefined) throw new errors.KafkaJSMetadataNotLoaded(`no leader known for ${topic}[${partition}]`);
            let topics = perBroker.get(leader);
            if (topics === undefined) perBroker.set(leader, (topics = []));
            let entry = topics.find((t) => t.topic === topic);
            if (entry === undefined) topics.push((entry = { topic, partitions: [] }));
            entry.partitions.push({ partition, messages });
          }
        }
        const requests = [...perBroker].map(async ([nodeId, topicData]) => {
          const broker = await cluster.findBroker({ nodeId });
          await eosManager.acquireBrokerLock(broker);
          try {
            if (eosManager.isTransactional()) await eosManager.addPartitionsToTransaction(topicData);
            for (const { topic, partitions } of topicData)
              for (const entry of partitions) {
                entry.firstSequence = eosManager.getSequence(topic, entry.partition);
                eosManager.updateSequence(topic, entry.partition, entry.messages.length);
              }
            let response;
            try {
              response = await broker.produce({
                transactionalId: eosManager.isTransactional() ? eosManager.getTransactionalId() : undefined,
                producerId: eosManager.getProducerId(),
                producerEpoch: eosManager.getProducerEpoch(),
                acks,
                timeout,
                compression,
                topicData,
              });
            } catch (error) {
              for (const { topic, partitions } of topicData)
                for (const entry of partitions) eosManager.updateSequence(topic, entry.partition, -entry.messages.length);
              throw error;
            }
            // acks 0: the broker does not answer; the records count as sent once the request went out.
            progress.answered(
              acks === 0
                ? topicData.flatMap(({ topic, partitions }) => partitions.map(({ partition }) => ({ topicName: topic, partition })))
                : response.topics.flatMap(({ topicName, partitions }) => partitions.map((partition) => ({ topicName, ...partition }))),
            );
          } finally {
            eosManager.releaseBrokerLock(broker);
          }
        });
        // Every request settles before the attempt ends: one still under way would otherwise be
        // sent again by the next attempt, and written twice if it then succeeded.
        const settled = await Promise.allSettled(requests);
        const reasons = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected').map((s) => s.reason as unknown);
        if (reasons.length > 0) {
          const decisive = decisiveFailure(reasons, errors.staleMetadata);
          // Every broker whose connection closed is dropped, not only the decisive one's (the retry drops that).
          for (const reason of reasons) {
            const e = fieldsOf(reason);
            if (reason !== decisive && e.name === 'KafkaJSConnectionClosedError') cluster.removeBroker({ host: e.host, port: e.port });
          }
          throw decisive;
        }
        if (!progress.done) throw new errors.KafkaJSMetadataNotLoaded('the broker did not answer for every partition sent');
      };

      return retrier(async (bail, retryCount, retryTime) => {
        await cluster.addMultipleTargetTopics(topicMessages.map(({ topic }) => topic));
        try {
          await sendPending();
          // kafkajs answers an acks-0 send with no partitions.
          return acks === 0 ? [] : progress.answers();
        } catch (caught) {
          const e = fieldsOf(caught);
          if (e.name === 'KafkaJSConnectionClosedError') cluster.removeBroker({ host: e.host, port: e.port });
          if (!cluster.isConnected()) {
            logger.debug(`Cluster has disconnected, reconnecting: ${e.message ?? ''}`, { retryCount, retryTime });
            await cluster.connect();
            await cluster.refreshMetadata();
            throw caught;
          }
          if (needsFreshMetadata(caught, errors.staleMetadata)) {
            logger.error(`Failed to send messages: ${e.message ?? ''}`, { retryCount, retryTime });
            await cluster.refreshMetadata();
            throw caught;
          }
          logger.error(e.message ?? String(caught), { retryCount, retryTime });
          if (e.retriable === true) throw caught;
          return bail(caught);
        }
      });
    };
}
