import type { Admin, Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { TransactionalProducers, transactionalKafka } from '../../src/kafka/transactional-producers.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { useCleanups } from '../helpers/fixtures.ts';
import { eventually, uniqueName } from '../helpers/kafka.ts';
import { startPrivateCluster } from '../helpers/private-kafka.ts';

// Moves of leaders and coordinators within a two-broker cluster of its own, as a broker restart
// among others makes them, each made deterministic by a partition reassignment: src/kafka/
// send-messages.ts (a send's partition moving) and transactional-producers.ts (sendOffsets while
// the group's coordinator moves).
const cleanups = useCleanups();
let cluster: Awaited<ReturnType<typeof startPrivateCluster>>;

beforeAll(async () => {
  cluster = await startPrivateCluster(2);
}, 240_000);
afterAll(async () => {
  await cluster?.dispose();
});

/** A client of the cluster (kafkajs's retries at 5) and its admin, connected, disconnected after the test. */
async function clusterClient(name: string): Promise<{ kafka: Kafka; admin: Admin }> {
  const kafka = createKafka(plaintextKafkaSettings(cluster.bootstrap, uniqueName(name)), createLogger('silent'), undefined, { retry: { retries: 5 } });
  const admin = kafka.admin();
  await admin.connect();
  cleanups.add(() => admin.disconnect());
  return { kafka, admin };
}

/** The leader of topic[partition] as the cluster's metadata names it now. */
async function leaderOf(admin: Admin, topic: string, partition: number): Promise<number | undefined> {
  return (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader;
}

// The worker's results transaction writes the results and the ledger checkpoint in one send; on a
// cluster their partitions often have different leaders. kafkajs 2.2.4 remembered a send's answers
// per broker: when the results' leader moved to the broker that had already answered for the
// checkpoint, the results were never sent again, and the transaction committed without them
// (found by test/repro/broker-failover.repro.test.ts: a result missing after a broker restart).
describe('a transactional send to two topics whose leaders differ, one of which moves before the send', () => {
  it('writes the records of both, the moved partition’s to its new leader', { timeout: 120_000 }, async () => {
    const { kafka, admin } = await clusterClient('send');
    const moving = uniqueName('moving');
    const staying = uniqueName('staying');
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: moving, replicaAssignment: [{ partition: 0, replicas: [2, 1] }] },
        { topic: staying, replicaAssignment: [{ partition: 0, replicas: [1] }] },
      ],
    });
    await eventually(
      async () => ((await leaderOf(admin, moving, 0)) === 2 && (await leaderOf(admin, staying, 0)) === 1 ? true : undefined),
      30_000,
      'the leaders as assigned',
    );

    const producer = kafka.producer({ transactionalId: uniqueName('tx'), idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.add(() => producer.disconnect());
    const sendBoth = async (value: string): Promise<void> => {
      const transaction = await producer.transaction();
      try {
        await transaction.sendBatch({
          topicMessages: [
            { topic: staying, messages: [{ key: 'k', value }] },
            { topic: moving, messages: [{ key: 'k', value }] },
          ],
        });
        await transaction.commit();
      } catch (error) {
        await transaction.abort().catch(() => undefined);
        throw error;
      }
    };
    // The producer learns the leaders: node 2 for `moving`, node 1 for `staying`.
    await sendBoth('before');

    // `moving` leaves node 2 (its only replica now on node 1): the producer's metadata still names
    // node 2, which refuses the next send's records for it; node 1 takes those for `staying`.
    await admin.alterPartitionReassignments({ topics: [{ topic: moving, partitionAssignment: [{ partition: 0, replicas: [1] }] }] });
    await eventually(
      async () =>
        (await admin.listPartitionReassignments({ topics: [{ topic: moving, partitions: [0] }] })).topics.length === 0 &&
        (await leaderOf(admin, moving, 0)) === 1
          ? true
          : undefined,
      60_000,
      'the reassignment of the moving topic to node 1',
    );
    await sendBoth('after');

    const read = async (topic: string): Promise<string[]> => {
      const values: string[] = [];
      const consumer = kafka.consumer({ groupId: uniqueName('read') });
      await consumer.connect();
      try {
        await consumer.subscribe({ topic, fromBeginning: true });
        await consumer.run({ eachMessage: async ({ message }) => void values.push(message.value?.toString() ?? '') });
        await eventually(() => (values.length >= 2 ? true : undefined), 30_000, `two records on ${topic}`).catch(() => undefined);
        // Anything more (a record written twice) arrives within this.
        await new Promise((r) => setTimeout(r, 1_000));
      } finally {
        await consumer.disconnect();
      }
      return values;
    };
    expect(await read(staying)).toEqual(['before', 'after']);
    expect(await read(moving)).toEqual(['before', 'after']);
  });
});

/** The partition of `__consumer_offsets` (4 here) whose leader coordinates `group`: Java's String.hashCode, made non-negative, modulo. */
function offsetsPartitionOf(group: string, partitions: number): number {
  let hash = 0;
  for (let i = 0; i < group.length; i++) hash = (Math.imul(hash, 31) + group.charCodeAt(i)) | 0;
  return (hash & 0x7fffffff) % partitions;
}

describe('sendOffsets while the group’s coordinator moves to the other broker', () => {
  it('commits the transaction with its offsets: the offsets are sent again to the new coordinator within it', { timeout: 120_000 }, async () => {
    const { admin } = await clusterClient('offsets');
    const topic = uniqueName('moves');
    const group = uniqueName('moves-group');
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1, replicationFactor: 2 }] });
    const producers = new TransactionalProducers(
      transactionalKafka(plaintextKafkaSettings(cluster.bootstrap, uniqueName('moves-tx')), createLogger('silent')),
      uniqueName('moves-tx'),
    );
    cleanups.add(() => producers.closeAll());
    const commit = async (value: string, offset: string): Promise<void> => {
      const transaction = await (await producers.forPartition(topic, 0, 1)).transaction();
      try {
        await transaction.send([{ topic, messages: [{ key: 'k', value: Buffer.from(value) }] }]);
        await transaction.sendOffsets({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset }] }] });
        await transaction.commit();
      } catch (error) {
        await transaction.abort().catch(() => undefined);
        throw error;
      }
    };
    // The producer's cluster remembers the group's coordinator from this first commit.
    await commit('before', '1');

    const offsetsPartition = offsetsPartitionOf(group, 4);
    const leaderOfOffsets = (): Promise<number | undefined> => leaderOf(admin, '__consumer_offsets', offsetsPartition);
    const coordinator = await leaderOfOffsets();
    const other = coordinator === 1 ? 2 : 1;
    await admin.alterPartitionReassignments({
      topics: [{ topic: '__consumer_offsets', partitionAssignment: [{ partition: offsetsPartition, replicas: [other] }] }],
    });
    await eventually(async () => ((await leaderOfOffsets()) === other ? true : undefined), 60_000, 'the group’s coordinator on the other broker');

    // The remembered coordinator answers NOT_COORDINATOR_FOR_GROUP (then the new one may answer
    // GROUP_LOAD_IN_PROGRESS): kafkajs gave up there and the transaction failed.
    await commit('after', '2');
    // The offsets show once the coordinator has written the commit's markers, just after it answered.
    const committedOffset = async (): Promise<string | undefined> => (await admin.fetchOffsets({ groupId: group, topics: [topic] }))[0]?.partitions[0]?.offset;
    await eventually(async () => ((await committedOffset()) === '2' ? true : undefined), 10_000, 'the committed offset 2').catch(() => undefined);
    expect(await committedOffset()).toBe('2');
  });
});
