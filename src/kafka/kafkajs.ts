/**
 * The one place that loads kafkajs at run time. Import kafkajs values from here, never from
 * 'kafkajs' directly (types may come from 'kafkajs'): this module first replaces kafkajs's
 * aborted-transaction filter with a correct one (see aborted-transactions.ts), which only works
 * if it happens before kafkajs loads its consumer, makes its clusters remember transaction
 * coordinators, and the transactional producers' clusters their group's coordinator too (see
 * coordinator-cache.ts), lets a consumer restart after a coordinator lookup no broker answered
 * (see coordinator-loss.ts) or a rejoin that failed, and tells the worker of a consumer's crash
 * before kafkajs leaves the group (onConsumerCrashing).
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import { filterAbortedRecords, type AbortedTransaction, type FetchedRecord } from './aborted-transactions.ts';
import { coordinatorKey, CoordinatorMemory, forgetsCoordinator, GROUP_COORDINATOR, TRANSACTION_COORDINATOR } from './coordinator-cache.ts';
import { crashVerdict, LookupRefusals } from './coordinator-loss.ts';

const require = createRequire(import.meta.url);
const filterModule = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
require(filterModule);
const cached = require.cache[filterModule];
if (cached === undefined) throw new Error('kafkajs: cannot patch filterAbortedMessages');
cached.exports = ({ messages, abortedTransactions }: { messages: FetchedRecord[]; abortedTransactions?: AbortedTransaction[] }) =>
  filterAbortedRecords(messages, abortedTransactions);

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

/** Brokers' refusals of coordinator lookups, kept until a broker answers the same key (coordinator-loss.ts). */
const refusals = new LookupRefusals();
const brokerModule = require('kafkajs/src/broker/index.js') as { prototype: { findGroupCoordinator(query: CoordinatorQuery): Promise<unknown> } };
const kafkajsBrokerLookup = brokerModule.prototype.findGroupCoordinator;
if (typeof kafkajsBrokerLookup !== 'function') throw new Error('kafkajs: cannot patch Broker.findGroupCoordinator');
brokerModule.prototype.findGroupCoordinator = async function findGroupCoordinator(this: unknown, query: CoordinatorQuery): Promise<unknown> {
  const key = coordinatorKey(query.groupId, query.coordinatorType ?? GROUP_COORDINATOR);
  try {
    const answer = await kafkajsBrokerLookup.call(this, query);
    refusals.answered(key);
    return answer;
  } catch (error) {
    refusals.failed(key, error);
    throw error;
  }
};

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

/**
 * A consumer whose rejoin failed crashes instead of fetching on in a generation it has left.
 * kafkajs 2.2.4's runner rejoins from inside its fetch loop's retrier (runner.js,
 * scheduleFetchManager): when the join fails with a retriable error (the coordinator lookup or a
 * connection refused while a broker restarts), the retrier runs the loop body again, which starts
 * the fetchers without a join. Measured with a single broker restarted twice: the member, no
 * longer in the group, fetched about 3,000 times a second, never heartbeated or rejoined, and
 * logged nothing above debug; the worker looked ready and live and sent nothing (the integration
 * test test/worker/broker-restart.int.test.ts). Made non-retriable, the failure ends the loop as a
 * crash, and kafkajs restarts the consumer (a fresh member joining) when the failure's original
 * cause is retriable: the same way it recovers from any other retriable crash. A failure that is
 * non-retriable already (retries used up, or a lookup that failed: see the runner's patch below)
 * is left as it is.
 */
interface InternalConsumerGroup {
  joinAndSync(): Promise<void>;
}
const consumerGroupModule = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: InternalConsumerGroup };
const kafkajsJoin = consumerGroupModule.prototype.joinAndSync;
if (typeof kafkajsJoin !== 'function') throw new Error('kafkajs: cannot patch ConsumerGroup.joinAndSync');
const { KafkaJSNonRetriableError, KafkaJSGroupCoordinatorNotFound } = require('kafkajs/src/errors.js') as {
  KafkaJSNonRetriableError: new (error: unknown, options: { cause: unknown }) => Error;
  KafkaJSGroupCoordinatorNotFound: new (message: string) => Error & { retriable: boolean };
};
consumerGroupModule.prototype.joinAndSync = async function joinAndSync(this: InternalConsumerGroup): Promise<void> {
  try {
    await kafkajsJoin.call(this);
  } catch (error) {
    if ((error as { retriable?: unknown } | null)?.retriable === false) throw error;
    throw new KafkaJSNonRetriableError(error, { cause: error });
  }
};

/** Listeners of each consumer group told of a crash of its consumer before kafkajs acts on it (onConsumerCrashing). */
const crashing = new Map<string, Set<(error: unknown) => void>>();

/**
 * Calls `listener` when the consumer of `groupId` in this process crashes, before kafkajs leaves
 * the group and decides on a restart (its CRASH event comes only after both): from that moment the
 * process is out of its group, whatever follows. Returns the unsubscribe.
 */
export function onConsumerCrashing(groupId: string, listener: (error: unknown) => void): () => void {
  let listeners = crashing.get(groupId);
  if (listeners === undefined) crashing.set(groupId, (listeners = new Set()));
  const own = listeners;
  own.add(listener);
  return () => {
    own.delete(listener);
    if (own.size === 0 && crashing.get(groupId) === own) crashing.delete(groupId);
  };
}

/**
 * kafkajs's consumer runner, at its first start, gets a crash handler (its `onCrash`, called where
 * the runner gives up: a join that failed, or its fetch loop's last retry) that first tells the
 * group's crash listeners, then shows kafkajs's own handler the crash as coordinator-loss.ts
 * decides: a lookup no broker answered becomes a restartable error (a new one: the error kafkajs
 * made stays as it is for everyone else), a refused one a final error naming the refusal.
 */
interface InternalRunner {
  onCrash: (error: unknown) => unknown;
  readonly consumerGroup: { readonly groupId: string };
  start(): Promise<unknown>;
}
const runnerModule = require('kafkajs/src/consumer/runner.js') as { prototype: InternalRunner };
const kafkajsRunnerStart = runnerModule.prototype.start;
if (typeof kafkajsRunnerStart !== 'function') throw new Error('kafkajs: cannot patch Runner.start');
const crashHandled = new WeakSet<InternalRunner>();
runnerModule.prototype.start = function start(this: InternalRunner): Promise<unknown> {
  if (!crashHandled.has(this)) {
    crashHandled.add(this);
    const kafkajsOnCrash = this.onCrash;
    const { groupId } = this.consumerGroup;
    this.onCrash = (error: unknown): unknown => {
      for (const listener of [...(crashing.get(groupId) ?? [])]) {
        try {
          listener(error);
        } catch {
          // A listener's failure must not keep kafkajs from handling its crash.
        }
      }
      return kafkajsOnCrash(crashAsDecided(error, groupId));
    };
  }
  return kafkajsRunnerStart.call(this);
};

function crashAsDecided(error: unknown, groupId: string): unknown {
  const refusal = refusals.refusal(coordinatorKey(groupId, GROUP_COORDINATOR));
  const verdict = crashVerdict(error, refusal);
  if (verdict === 'as-is') return error;
  const message = error instanceof Error ? error.message : String(error);
  if (verdict === 'refused') {
    const reason = refusal instanceof Error ? refusal.message : String(refusal);
    return new KafkaJSNonRetriableError(`${message}: a broker refused the lookup: ${reason}`, { cause: refusal });
  }
  // No cause: kafkajs decides on the restart by the original cause's `retriable`.
  const restartable = new KafkaJSGroupCoordinatorNotFound(message);
  restartable.retriable = true;
  return restartable;
}

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
    return cluster;
  };
}

export default kafkajs;
export const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = kafkajs;
