/**
 * The one place that loads kafkajs at run time. Import kafkajs values from here, never from
 * 'kafkajs' directly (types may come from 'kafkajs'): this module first replaces kafkajs's
 * aborted-transaction filter with a correct one (see aborted-transactions.ts), which only works
 * if it happens before kafkajs loads its consumer, and makes its clusters remember coordinators
 * (see coordinator-cache.ts).
 */
import { createRequire } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import { filterAbortedRecords, type AbortedTransaction, type FetchedRecord } from './aborted-transactions.ts';
import { coordinatorFailure, coordinatorKey, CoordinatorMemory, RESENDABLE_WHEN_MOVED } from './coordinator-cache.ts';

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
const memories = new WeakMap<InternalCluster, CoordinatorMemory>();

clusterModule.prototype.findGroupCoordinator = async function findGroupCoordinator(this: InternalCluster, query: CoordinatorQuery): Promise<InternalBroker> {
  let memory = memories.get(this);
  if (memory === undefined) memories.set(this, (memory = new CoordinatorMemory()));
  const key = coordinatorKey(query.groupId, query.coordinatorType ?? 0);
  const remembered = memory.recall(key);
  if (remembered !== undefined) {
    try {
      return watched(this, memory, key, query, await this.findBroker({ nodeId: remembered }), true);
    } catch {
      memory.forget(key, remembered);
    }
  }
  const found = await findCoordinatorAfresh.call(this, query);
  memory.remember(key, found.nodeId);
  return watched(this, memory, key, query, found, false);
};

/**
 * The coordinator as its caller sees it: each request failing for a reason that says the broker is
 * not the coordinator, or is unreachable, forgets it; one of the coordinator's transactional
 * requests refused as "not the coordinator" by a remembered broker goes once to the one found afresh.
 */
function watched(
  cluster: InternalCluster,
  memory: CoordinatorMemory,
  key: string,
  query: CoordinatorQuery,
  broker: InternalBroker,
  remembered: boolean,
): InternalBroker {
  return new Proxy(broker, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = Reflect.apply(value, target, args);
        if (!(result instanceof Promise)) return result;
        return result.catch(async (error: unknown) => {
          const failure = coordinatorFailure(error);
          if (failure === 'other') throw error;
          memory.forget(key, target.nodeId);
          if (failure !== 'moved' || !remembered || typeof property !== 'string' || !RESENDABLE_WHEN_MOVED.has(property)) throw error;
          const found = await findCoordinatorAfresh.call(cluster, query);
          memory.remember(key, found.nodeId);
          const again = Reflect.get(found, property, found);
          if (typeof again !== 'function') throw error;
          return Reflect.apply(again, found, args) as unknown;
        });
      };
    },
  });
}

const kafkajs = require('kafkajs') as typeof KafkaJs;

export default kafkajs;
export const { Kafka, logLevel, AssignerProtocol, PartitionAssigners } = kafkajs;
