/** Kafka plumbing shared by the benchmark and the chaos run: clients, topics, backlog loading. */
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { createTopics as createMissingTopics, withAdmin } from '../../src/kafka/admin.ts';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { CommandPublisher } from '../../src/kafka/command-publisher.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { kindAt, makeCommand, prng } from './commands.ts';

export const PRODUCED_AT_HEADER = 'sms-worker-produced-at';

/** `quiet: false` lets kafkajs print its errors (the bench pipelines, whose output is kept for diagnostics). */
export function benchKafka(brokers: string, clientId: string, options: { quiet?: boolean } = {}): Kafka {
  return createKafka(plaintextKafkaSettings(brokers, clientId), createLogger(options.quiet === false ? 'error' : 'silent'), undefined, {
    retry: { retries: 12, initialRetryTime: 200, maxRetryTime: 5_000 },
  });
}

/** The bench's topics: replication factor 1 (one local broker); existing ones are kept. */
export async function createTopics(kafka: Kafka, topics: readonly { topic: string; partitions: number }[]): Promise<void> {
  // A topic just created may not be in the broker's metadata yet ("This server does not host this
  // topic-partition" while waiting for its leaders), more so on a busy machine: try again.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await createMissingTopics(
        kafka,
        topics.map((t) => ({ ...t, replicationFactor: 1 })),
      );
      return;
    } catch (error) {
      if (attempt >= 5 || (error as { retriable?: unknown }).retriable !== true) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

export async function deleteTopics(kafka: Kafka, topics: readonly string[]): Promise<void> {
  if (topics.length === 0) return;
  await withAdmin(kafka, (admin) => admin.deleteTopics({ topics: [...topics] }).catch(() => undefined));
}

/** Records in a topic (sum of high watermarks minus low watermarks; exact for a non-transactional topic). */
export async function topicSize(kafka: Kafka, topic: string): Promise<number> {
  return withAdmin(kafka, async (admin) => {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  });
}

export interface BacklogCommand {
  readonly commandId: string;
  readonly producedAt: number;
}

/**
 * Publishes `count` commands of the realistic mix in batches (Avro, Confluent framing, the
 * produced-at header set just before each batch is sent) and returns the produced-at per id.
 */
export async function loadBacklog(options: {
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly topic: string;
  readonly count: number;
  readonly idPrefix: string;
  readonly seed: number;
  readonly batchSize?: number;
  readonly onProgress?: (done: number) => void;
}): Promise<Map<string, number>> {
  const publisher = new CommandPublisher(options.kafka, options.registry, options.topic);
  await publisher.connect();
  const random = prng(options.seed);
  const producedAt = new Map<string, number>();
  const batchSize = options.batchSize ?? 1000;
  try {
    for (let start = 0; start < options.count; start += batchSize) {
      const records = [];
      const now = Date.now();
      for (let i = start; i < Math.min(options.count, start + batchSize); i += 1) {
        const commandId = `${options.idPrefix}-${i}`;
        const value = await publisher.encode(makeCommand(commandId, kindAt(random), random, now));
        producedAt.set(commandId, now);
        records.push({ key: commandId, value, headers: { [PRODUCED_AT_HEADER]: String(now) } });
      }
      await publisher.publishRaw(records);
      options.onProgress?.(Math.min(options.count, start + batchSize));
    }
  } finally {
    await publisher.disconnect();
  }
  return producedAt;
}
