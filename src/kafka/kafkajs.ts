/**
 * The one place that loads kafkajs at run time. Import kafkajs values from here, never from
 * 'kafkajs' directly (types may come from 'kafkajs'): this module first replaces kafkajs's
 * aborted-transaction filter with a correct one (see aborted-transactions.ts), which only works
 * if it happens before kafkajs loads its consumer, makes its clusters remember transaction
 * coordinators, and the transactional producers' clusters their group's coordinator too (see
 * coordinator-cache.ts), replaces its producer's send with one whose retry neither drops nor
 * doubles records when a partition's leader moves (see send-messages.ts), installs the
 * consumer's crash handling (see consumer-crashes.ts), and stops each connection's request queue
 * from checking its (empty) queue every millisecond (see request-queue.ts). Every patch is written
 * for one kafkajs release and listed in docs/kafka-client.md; loading another release is refused
 * before any patch is made (kafkajs-version.ts).
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import { filterAbortedRecords, type AbortedTransaction, type FetchedRecord } from './aborted-transactions.ts';
import { coordinatorKey, CoordinatorMemory, forgetsCoordinator, GROUP_COORDINATOR, TRANSACTION_COORDINATOR } from './coordinator-cache.ts';
import { installConsumerCrashHandling } from './consumer-crashes.ts';
import { installRequestQueueCheck } from './request-queue.ts';
import { createSendMessages, type KafkaJsErrors } from './send-messages.ts';
import { assertKafkajsVersion } from './kafkajs-version.ts';

const require = createRequire(import.meta.url);
assertKafkajsVersion((require('kafkajs/package.json') as { version?: unknown }).version);
const filterModule = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
require(filterModule);
const cached = require.cache[filterModule];
if (cached === undefined) throw new Error('kafkajs: cannot patch filterAbortedMessages');
cached.exports = ({ messages, abortedTransactions }: { messages: FetchedRecord[]; abortedTransactions?: AbortedTransaction[] }) =>
  filterAbortedRecords(messages, abortedTransactions);

const sendModule = require.resolve('kafkajs/src/producer/sendMessages.js');
// The producer takes the send when it loads: it must not have loaded yet.
if (require.cache[require.resolve('kafkajs/src/producer/messageProducer.js')] !== undefined)
  throw new Error('kafkajs: its producer loaded before src/kafka/kafkajs.ts could replace its send');
require(sendModule);
const cachedSend = require.cache[sendModule];
if (cachedSend === undefined) throw new Error('kafkajs: cannot patch the producer send');
cachedSend.exports = createSendMessages({
  KafkaJSMetadataNotLoaded: (require('kafkajs/src/errors.js') as Pick<KafkaJsErrors, 'KafkaJSMetadataNotLoaded'>).KafkaJSMetadataNotLoaded,
  staleMetadata: (require('kafkajs/src/protocol/error.js') as Pick<KafkaJsErrors, 'staleMetadata'>).staleMetadata,
});

interface CoordinatorQuery {
  readonly groupId: string;
  readonly coordinatorType?: number;
}
/** The little of kafkajs's internal Broker and Cluster (src/cluster/index.js) that the patch touches. */
type InternalBroker = { readonly nodeId: number } & Record<PropertyKey, unknown>;
interface InternalCluster {
  findBroker(query: { nodeId: number }): Promise<InternalBroker>;
  findGroupCoordinator(query: CoordinatorQuery): Promise<InternalBroker>;
}

const clusterModule = require('kafkajs/src/cluster/index.js') as { prototype: InternalCluster };
const findCoordinatorAfresh = clusterModule.prototype.findGroupCoordinator;
if (typeof findCoordinatorAfresh !== 'function') throw new Error('kafkajs: cannot patch Cluster.findGroupCoordinator');

const memories = new WeakMap<InternalCluster, CoordinatorMemory>();
/** Clusters that remember their consumer groups' coordinators too: the transactional producers' (transactionalClusters). */
const groupRemembering = new WeakSet<object>();

clusterModule.prototype.findGroupCoordinator = async function findGroupCoordinator(this: InternalCluster, query: CoordinatorQuery): Promise<InternalBroker> {
  const type = query.coordinatorType ?? GROUP_COORDINATOR;
  if (type !== TRANSACTION_COORDINATOR && !(type === GROUP_COORDINATOR && groupRemembering.has(this))) return findCoordinatorAfresh.call(this, query);
  let memory = memories.get(this);
  if (memory === undefined) memories.set(this, (memory = new CoordinatorMemory()));
  const key = coordinatorKey(query.groupId, type);
  const remembered = memory.recall(key);
  if (remembered !== undefined) {
    try {
      return watched(memory, key, await this.findBroker({ nodeId: remembered }));
    } catch {
      memory.forget(key, remembered);
    }
  }
  const found = await findCoordinatorAfresh.call(this, query);
  memory.remember(key, found.nodeId);
  return watched(memory, key, found);
};

/**
 * The coordinator as its caller sees it: a request failing for a reason that says the broker is
 * not the coordinator, or is unreachable, forgets it (the request fails as it would have).
 */
function watched(memory: CoordinatorMemory, key: string, broker: InternalBroker): InternalBroker {
  return new Proxy(broker, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = Reflect.apply(value, target, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          if (forgetsCoordinator(error)) memory.forget(key, target.nodeId);
          throw error;
        });
      };
    },
  });
}

installConsumerCrashHandling(require);
installRequestQueueCheck(require);

const kafkajs = require('kafkajs') as typeof KafkaJs;

/** A kafkajs client's cluster factory: the private symbol kafkajs 2.x keeps it behind, and the function. */
export interface ClusterFactory {
  readonly symbol: symbol;
  readonly create: (...args: unknown[]) => unknown;
}

/** The client's cluster factory, or undefined in a kafkajs version without it. */
export function clusterFactory(kafka: KafkaJs.Kafka): ClusterFactory | undefined {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const create = symbol === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[symbol];
  return symbol === undefined || typeof create !== 'function' ? undefined : { symbol, create: create as ClusterFactory['create'] };
}

/**
 * Makes every cluster `kafka` creates (one per producer) fit for transactional producers:
 *
 * - It carries `retry` as `cluster.retry`. kafkajs's transaction manager retries InitProducerId
 *   (a fence) and TxnOffsetCommit with `createRetry(cluster.retry)`, a property its Cluster never
 *   sets, so kafkajs's own default applies (first retry after 300 ms; 50 ms when NODE_ENV=test)
 *   whatever the client's or the producer's retry says. A fence that finds the previous owner's
 *   transaction open is answered CONCURRENT_TRANSACTIONS until the coordinator has aborted it (tens
 *   of ms): moved partitions' fences took 270–440 ms in the bench's rolling update and scale-down
 *   (2026-11-28).
 * - It remembers its consumer group's coordinator, as it does its transaction coordinator:
 *   kafkajs's `sendOffsets` looks the group's coordinator up before every TxnOffsetCommit, one
 *   round trip of every results transaction (coordinator-cache.ts says why only these clusters).
 */
export function transactionalClusters(kafka: KafkaJs.Kafka, retry: KafkaJs.RetryOptions): void {
  const factory = clusterFactory(kafka);
  if (factory === undefined) throw new Error('kafkajs: cannot patch the cluster factory (this kafkajs version has none)');
  const { symbol, create } = factory;
  (kafka as unknown as Record<symbol, unknown>)[symbol] = function createCluster(this: unknown, ...args: unknown[]): unknown {
    const cluster = Reflect.apply(create, this, args) as Record<string, unknown>;
    cluster['retry'] = retry;
    groupRemembering.add(cluster);
    lastCreated = cluster as unknown as PrimableCluster;
    return cluster;
  };
}

/** The little of kafkajs's internal Cluster that priming uses (cluster/index.js). */
export interface PrimableCluster {
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  findGroupCoordinator(query: CoordinatorQuery): Promise<unknown>;
}

let lastCreated: PrimableCluster | undefined;

/**
 * The cluster a transactional client (transactionalClusters) created last, once: `kafka.producer()`
 * creates its producer's cluster synchronously, so taken right after it, it is that producer's
 * (kafkajs does not expose a producer's cluster otherwise).
 */
export function takeCreatedCluster(): PrimableCluster | undefined {
  const cluster = lastCreated;
  lastCreated = undefined;
  return cluster;
}

export default kafkajs;
export const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = kafkajs;
