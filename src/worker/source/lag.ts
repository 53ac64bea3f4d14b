import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import type { OffsetsAdmin } from '../../kafka/ports.ts';

/**
 * Lag of this process's partitions from the broker (high watermark − committed offset). Commits
 * update it as they happen; this keeps it true while consumption is paused or there is nothing
 * to commit, which is when an operator most needs it.
 */
export async function refreshConsumerLag(options: {
  admin: OffsetsAdmin;
  group: string;
  topic: string;
  assigned: readonly number[];
  metrics: WorkerMetrics;
  log: Logger;
}): Promise<void> {
  const { admin, group, topic, assigned, metrics, log } = options;
  if (assigned.length === 0) return;
  try {
    const [ends, committed] = await Promise.all([admin.fetchTopicOffsets(topic), admin.fetchOffsets({ groupId: group, topics: [topic] })]);
    const committedBy = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
    for (const end of ends) {
      if (!assigned.includes(end.partition)) continue;
      const position = committedBy.get(end.partition) ?? '-1';
      const from = position === '-1' ? BigInt(end.low) : BigInt(position);
      const lag = BigInt(end.high) - from;
      metrics.consumerLag.set({ topic, partition: String(end.partition) }, Number(lag > 0n ? lag : 0n));
    }
  } catch (error) {
    log.debug({ err: error }, 'reading consumer lag failed');
  }
}
