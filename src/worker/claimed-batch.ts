import type { WorkerConfig } from '../config/index.ts';
import { FencedError } from '../kafka/ports.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { processBatch, type FetchedBatch } from './partition-batch.ts';
import type { Semaphore } from './semaphore.ts';
import { groupOffset, type WorkerParts } from './wiring.ts';

export interface ClaimedBatchOptions {
  readonly parts: WorkerParts;
  readonly slots: Semaphore;
  readonly markPermits: Semaphore;
  readonly config: WorkerConfig;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  readonly wrappingUp: () => boolean;
  readonly abandon: AbortSignal;
  readonly onProgress: () => void;
}

/**
 * One fetched batch under this generation's claim of its partition. How it can end, and what
 * follows for the partition:
 * - fenced while the claim is current and the lease holds: another process owns it; lost until
 *   the next rebalance (never re-fenced: that would fence the owner back);
 * - refused because the claim is stale (a newer generation claimed it): nothing to do, the new
 *   claim handles it;
 * - refused because the lease expired (no heartbeat got through: a freeze, a broker outage):
 *   released and retried, re-claimed only once the group confirms this member again;
 * - any other error: released, so the next batch starts afresh (producer, ledger, offsets).
 */
export async function runClaimedBatch(batch: FetchedBatch, o: ClaimedBatchOptions): Promise<void> {
  const { parts, config: c } = o;
  const { topic, partition } = batch;
  const claim = await parts.ownership.claim(topic, partition);
  // Sends and commits need both: the group still counts this member in (the lease) and the
  // claim is of the current generation (not a batch left over from before a rebalance).
  const owns = (): boolean => parts.ownership.leaseHolds() && parts.ownership.isCurrent(claim);
  try {
    await processBatch(batch, {
      deps: {
        codec: parts.codec,
        sender: parts.sender,
        policy: c.validation,
        inDoubtPolicy: c.ledger.inDoubt,
        maxRecordBytes: parts.maxRecordBytes,
        maxCommandBytes: c.maxCommandBytes,
        onRegistryRetry: (error) => o.log.warn({ err: error }, 'schema registry unavailable; retrying'),
        tracer: parts.tracer,
      },
      producers: parts.producers,
      slots: o.slots,
      markPermits: o.markPermits,
      metrics: o.metrics,
      log: o.log,
      target: {
        consumerGroup: c.consumerGroup,
        resultTopic: c.topics.results,
        deadLetterTopic: c.topics.deadLetter,
        ledgerTopic: c.ledger.enabled ? c.topics.ledger : undefined,
        maxBatchBytes: parts.maxRecordBytes,
        generation: claim.generation,
        mayFence: owns,
      },
      commitIntervalMs: c.commitIntervalMs,
      claim,
      maxRunAhead: c.ledger.maxRunAhead,
      fetchCommittedOffset: (t, p) => groupOffset(parts.admin, c.consumerGroup, t, p),
      leaseHolds: owns,
      wrappingUp: o.wrappingUp,
      abandon: o.abandon,
      onProgress: o.onProgress,
    });
  } catch (error) {
    if (!parts.ownership.isCurrent(claim)) return;
    if (error instanceof FencedError && parts.ownership.leaseHolds()) {
      parts.ownership.lose(topic, partition);
      return;
    }
    parts.ownership.release(topic, partition);
    throw error;
  }
}
