import { randomUUID } from 'node:crypto';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { inject } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createRegistry } from '../../src/schema/codec.ts';

export { createTopics, withAdmin } from '../../src/kafka/admin.ts';
export { eventually } from '../../tools/poll.ts';

/** A name no other test uses: every test gets its own topics and groups. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export function testBrokers(): string[] {
  return inject('kafkaBrokers').split(',');
}

/** A client of the test stack, made by the worker's own factory (kafkajs's log silenced). */
export function testKafka(clientId = uniqueName('test')): Kafka {
  return createKafka(plaintextKafkaSettings(testBrokers(), clientId), createLogger('silent'));
}

export function testRegistry(): SchemaRegistry {
  return createRegistry(inject('schemaRegistryUrl'));
}
