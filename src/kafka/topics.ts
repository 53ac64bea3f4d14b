import type { Admin } from 'kafkajs';
import { SmsWorkerError } from '../errors.ts';
import { createTopics } from './admin.ts';

export interface TopicPlan {
  readonly topics: readonly string[];
  readonly create: boolean;
  readonly partitions: number;
  readonly replicationFactor: number;
}

/**
 * Checks at start-up that the topics exist (a typo in a topic name should stop the worker, not
 * make it consume nothing forever); creates missing ones only when configured to.
 */
export async function ensureTopics(admin: Admin, plan: TopicPlan): Promise<{ created: string[]; partitions: Map<string, number> }> {
  const existing = new Set(await admin.listTopics());
  const missing = plan.topics.filter((t) => !existing.has(t));
  if (missing.length > 0 && !plan.create) {
    throw new SmsWorkerError('TOPICS_MISSING', `topics do not exist: ${missing.join(', ')} (create them, or set TOPICS_CREATE=true)`);
  }
  if (missing.length > 0) await createTopics(admin, missing.map((topic) => ({ topic, partitions: plan.partitions, replicationFactor: plan.replicationFactor })));
  const metadata = await admin.fetchTopicMetadata({ topics: [...plan.topics] });
  const partitions = new Map(metadata.topics.map((t) => [t.name, t.partitions.length]));
  return { created: missing, partitions };
}
