import { randomUUID } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Admin, Kafka } from 'kafkajs';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { inject } from 'vitest';

const { Kafka: KafkaClient, logLevel } = kafkajs;

/** A name no other test uses: every test gets its own topics and groups. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function testBrokers(): string[] {
  return inject('kafkaBrokers').split(',');
}

export function testKafka(clientId = uniqueName('test')): Kafka {
  return new KafkaClient({ clientId, brokers: testBrokers(), logLevel: logLevel.NOTHING });
}

export function testRegistry(): SchemaRegistry {
  return new SchemaRegistry({ host: inject('schemaRegistryUrl') });
}

export async function withAdmin<T>(kafka: Kafka, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

export async function createTopics(kafka: Kafka, topics: readonly { topic: string; partitions?: number }[]): Promise<void> {
  await withAdmin(kafka, async (admin) => {
    await admin.createTopics({ topics: topics.map((t) => ({ topic: t.topic, numPartitions: t.partitions ?? 1 })), waitForLeaders: true });
  });
}

/** Polls until `check` holds, so tests wait for asynchronous effects without fixed sleeps. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
