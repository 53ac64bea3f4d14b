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
    // kafkajs's own wait gives up on the first UNKNOWN_TOPIC_OR_PARTITION, which a KRaft broker
    // answers for a topic it created a moment ago and has not yet applied to its metadata
    // (seen in CI under load): this waits itself, and treats that answer as "not yet".
    waitForLeaders: false,
    topics: missing.map((t) => ({
      topic: t.topic,
      numPartitions: t.partitions ?? 1,
      ...(t.replicationFactor !== undefined && { replicationFactor: t.replicationFactor }),
      configEntries: Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
    })),
  });
  const names = missing.map((t) => t.topic);
  await waitForLeaders(admin, names);
  return names;
}

/**
 * How long a new topic's partitions get to show a leader before createTopics gives up: checked
 * between looks, so the wait may pass it by one metadata request (and kafkajs's own retries of it).
 */
export const TOPIC_LEADERS_WAIT_MS = 30_000;
const TOPIC_LEADERS_POLL_MS = 100;

/**
 * Errors a broker answers for a topic it has created but not yet fully applied: wait, not fail.
 * kafkajs retries some of them itself and then throws its own error with the broker's as `cause`.
 */
export function isTopicNotReadyYet(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 5; depth++) {
    const { type, cause } = e as { type?: unknown; cause?: unknown };
    if (type === 'UNKNOWN_TOPIC_OR_PARTITION' || type === 'LEADER_NOT_AVAILABLE') return true;
    e = cause;
  }
  return false;
}

async function waitForLeaders(admin: Admin, topics: readonly string[], waitMs = TOPIC_LEADERS_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    let waitingFor: string;
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const leaderless = found.find((t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0));
      if (found.length === topics.length && leaderless === undefined) return;
      waitingFor = leaderless === undefined ? 'every topic in the metadata' : `a leader for every partition of ${leaderless.name}`;
    } catch (error) {
      if (!isTopicNotReadyYet(error)) throw error;
      waitingFor = `the topics (${(error as Error).message})`;
    }
    if (Date.now() >= deadline) {
      throw new Error(`created ${topics.join(', ')} but waited ${waitMs} ms for ${waitingFor}`);
    }
    await new Promise((resolve) => setTimeout(resolve, TOPIC_LEADERS_POLL_MS));
  }
}
