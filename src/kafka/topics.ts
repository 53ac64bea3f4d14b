import type { Admin } from 'kafkajs';
import { SmsWorkerError } from '../errors.ts';
import { createTopics } from './admin.ts';

export interface TopicPlan {
  readonly topics: readonly string[];
  /** Per-topic settings for topics this creates (e.g. the compacted ledger). */
  readonly configs?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly create: boolean;
  readonly partitions: number;
  readonly replicationFactor: number;
}

/**
 * Checks at start-up that the topics exist (a typo in a topic name should stop the worker, not
 * make it consume nothing forever); creates missing ones only when configured to. Also names the
 * topics with a partition of a single replica.
 */
export async function ensureTopics(admin: Admin, plan: TopicPlan): Promise<{ created: string[]; partitions: Map<string, number>; singleReplica: string[] }> {
  const existing = new Set(await admin.listTopics());
  const missing = plan.topics.filter((t) => !existing.has(t));
  if (missing.length > 0 && !plan.create) {
    throw new SmsWorkerError('TOPICS_MISSING', `topics do not exist: ${missing.join(', ')} (create them, or set TOPICS_CREATE=true)`);
  }
  if (missing.length > 0)
    await createTopics(
      admin,
      missing.map((topic) => ({ topic, partitions: plan.partitions, replicationFactor: plan.replicationFactor, configs: plan.configs?.[topic] ?? {} })),
    );
  const metadata = await admin.fetchTopicMetadata({ topics: [...plan.topics] });
  const partitions = new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
  // A partition of one replica has no leader while its broker is down, and Kafka 4 then drops
  // transaction markers meant for it (docs/operations.md): the worker says so at start-up.
  const singleReplica = metadata.topics.filter((t) => t.partitions.some((p) => p.replicas.length < 2)).map((t) => t.name);
  return { created: missing, partitions, singleReplica };
}

/** The broker's default max.message.bytes (1 MiB + 12): used when a topic's setting cannot be read. */
const DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/**
 * The smallest max.message.bytes among the topics this worker writes: every record batch it sends
 * must stay below it, or the broker rejects the whole send (MESSAGE_TOO_LARGE).
 */
export async function maxMessageBytes(admin: Admin, topics: readonly string[]): Promise<number> {
  try {
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({ type: TOPIC_RESOURCE, name, configNames: ['max.message.bytes'] })),
    });
    const values = described.resources.flatMap((r) => r.configEntries.filter((e) => e.configName === 'max.message.bytes').map((e) => Number(e.configValue)));
    const valid = values.filter((v) => Number.isInteger(v) && v > 0);
    return valid.length === 0 ? DEFAULT_MAX_MESSAGE_BYTES : Math.min(...valid);
  } catch {
    return DEFAULT_MAX_MESSAGE_BYTES;
  }
}

/** kafkajs's ConfigResourceTypes.TOPIC. */
const TOPIC_RESOURCE = 2;
