import { randomUUID } from 'node:crypto';
import { createTopics } from '../../src/kafka/admin.ts';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { within } from '../poll.ts';

/** True when the registry answers its Confluent-compatible subjects endpoint. */
export async function registryAnswers(url: string): Promise<boolean> {
  try {
    const response = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2_000) });
    if (!response.ok) return false;
    return Array.isArray(await response.json());
  } catch {
    return false;
  }
}

/**
 * Readiness of the broker is a real round trip, not an open port: a transactional produce, a
 * commit, and a `read_committed` consumer in a group reading it back. This also warms up the
 * group and transaction coordinators, whose first requests otherwise answer "loading".
 */
export async function kafkaRoundTrip(brokers: readonly string[], timeoutMs: number): Promise<void> {
  const kafka = createKafka(plaintextKafkaSettings(brokers, 'sms-worker-stack-probe'), createLogger('silent'), undefined, {
    retry: { retries: 10, initialRetryTime: 100 },
  });
  const topic = `__stack-probe-${randomUUID()}`;
  const admin = kafka.admin();
  const producer = kafka.producer({ transactionalId: `stack-probe-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });
  const consumer = kafka.consumer({ groupId: `stack-probe-${randomUUID()}`, readUncommitted: false });
  const roundTrip = (async () => {
    await admin.connect();
    await createTopics(admin, [{ topic }]);
    await producer.connect();
    const transaction = await producer.transaction();
    await transaction.send({ topic, messages: [{ key: 'probe', value: 'ready' }] });
    await transaction.commit();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolveRead, rejectRead) => {
      consumer
        .run({
          eachMessage: async ({ message }) => {
            if (message.value?.toString() === 'ready') resolveRead();
          },
        })
        .catch(rejectRead);
    });
  })();
  try {
    await within(timeoutMs, 'Kafka round trip', roundTrip);
  } finally {
    await consumer.disconnect().catch(() => undefined);
    await producer.disconnect().catch(() => undefined);
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  }
}
