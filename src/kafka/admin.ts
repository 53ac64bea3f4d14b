import type { Admin, Kafka } from 'kafkajs';

/** An admin client for the length of `use`, always disconnected afterwards. */
export async function withAdmin<T>(kafka: Kafka, use: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

export interface TopicSpec {
  readonly topic: string;
  /** Default 1. */
  readonly partitions?: number;
  /** Default: the broker's default.replication.factor. */
  readonly replicationFactor?: number;
  /** Topic settings, e.g. cleanup.policy=compact for the ledger. */
  readonly configs?: Readonly<Record<string, string>>;
}

/**
 * Creates the topics that do not exist yet and waits for their partition leaders, so the caller
 * can produce at once. Returns the names it created. Given a client rather than an admin, it
 * connects an admin for the call. The one topic-creation helper: the worker's
 * start-up check, the local stack's probe, the benchmarks and the tests use it.
 */
export async function createTopics(client: Admin | Kafka, topics: readonly TopicSpec[]): Promise<string[]> {
  if ('admin' in client) return withAdmin(client, (admin) => createTopics(admin, topics));
  const admin = client;
  const existing = new Set(await admin.listTopics());
  const missing = topics.filter((t) => !existing.has(t.topic));
  if (missing.length === 0) return [];
  await admin.createTopics({
    waitForLeaders: true,
    topics: missing.map((t) => ({
      topic: t.topic,
      numPartitions: t.partitions ?? 1,
      ...(t.replicationFactor !== undefined && { replicationFactor: t.replicationFactor }),
      configEntries: Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
    })),
  });
  return missing.map((t) => t.topic);
}
