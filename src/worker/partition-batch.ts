import type { EachBatchPayload } from 'kafkajs';
import type { Logger } from '../observability/logger.ts';
import { toMicros, type WorkerMetrics } from '../metrics/metrics.ts';
import { OffsetTracker } from './offset-tracker.ts';
import { handleRecord, type RecordHandlerDeps, type RecordOutcome } from './record-handler.ts';
import type { Semaphore } from './semaphore.ts';
import { commitPrefix, type CommitTarget } from './transaction-committer.ts';
import type { TransactionalProducers } from '../kafka/transactional-producers.ts';

export interface BatchContext {
  readonly deps: RecordHandlerDeps;
  readonly producers: TransactionalProducers;
  readonly slots: Semaphore;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  readonly target: Omit<CommitTarget, 'topic' | 'partition'>;
  readonly commitIntervalMs: number;
  /** Offsets below this were committed by an earlier owner of the partition: skip them. */
  readonly committedOffset: bigint;
  /** Reads the partition's committed offset from the broker (to resolve an ambiguous commit). */
  readonly fetchCommittedOffset: (topic: string, partition: number) => Promise<bigint>;
  /** Stop taking new records (shutdown or rebalance); dispatched ones still finish. */
  readonly wrappingUp: () => boolean;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  readonly onProgress: () => void;
}

/**
 * Processes one kafkajs batch of one partition: records go out in offset order, each behind the
 * previous record with the same key (so same-key commands are sent in order) and within the
 * process-wide in-flight limit; finished prefixes are committed every `commitIntervalMs`.
 */
export async function processBatch(payload: EachBatchPayload, ctx: BatchContext): Promise<void> {
  const { batch } = payload;
  const target: CommitTarget = { ...ctx.target, topic: batch.topic, partition: batch.partition };
  const tracker = new OffsetTracker<RecordOutcome>();
  const chains = new Map<string, Promise<unknown>>();
  const tasks: Promise<void>[] = [];
  const local = new AbortController();
  const signal = AbortSignal.any([ctx.abandon, local.signal]);
  let commitError: unknown;
  let committing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const commitNow = async (): Promise<void> => {
    const prefix = tracker.takePrefix();
    if (prefix === undefined) return;
    const started = performance.now();
    try {
      await commitPrefix(ctx.producers, target, prefix.values, prefix.commitOffset, ctx.log, () => ctx.fetchCommittedOffset(batch.topic, batch.partition));
      ctx.metrics.transactions.inc({ outcome: 'committed' });
    } catch (error) {
      ctx.metrics.transactions.inc({ outcome: 'failed' });
      throw error;
    } finally {
      ctx.metrics.commitLatency.observe((performance.now() - started) / 1000);
    }
    for (const outcome of prefix.values) {
      countOutcome(ctx.metrics, outcome);
      logOutcome(ctx.log, outcome);
    }
    payload.resolveOffset((BigInt(prefix.commitOffset) - 1n).toString());
    ctx.metrics.consumerLag.set({ topic: batch.topic, partition: String(batch.partition) }, Math.max(0, Number(BigInt(batch.highWatermark) - BigInt(prefix.commitOffset))));
    ctx.onProgress();
  };
  const scheduleCommit = (): void => {
    if (timer !== undefined || committing !== undefined || commitError !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      committing = commitNow()
        .catch((error: unknown) => {
          commitError = error;
          local.abort(error);
        })
        .finally(() => {
          committing = undefined;
          if (tracker.pending > 0) scheduleCommit();
        });
    }, ctx.commitIntervalMs);
  };

  let rebalancing = false;
  const heartbeat = setInterval(() => {
    payload.heartbeat().catch((error: unknown) => {
      // A rebalance is under way: stop taking records; what was dispatched finishes and commits.
      ctx.log.info({ err: error, topic: batch.topic, partition: batch.partition }, 'heartbeat failed during batch; wrapping up');
      rebalancing = true;
    });
    ctx.onProgress();
  }, 1_000);

  try {
    for (const message of batch.messages) {
      if (BigInt(message.offset) < ctx.committedOffset) {
        payload.resolveOffset(message.offset);
        continue;
      }
      if (ctx.wrappingUp() || rebalancing || signal.aborted || !payload.isRunning() || payload.isStale()) break;
      try {
        await ctx.slots.acquire(signal);
      } catch {
        break;
      }
      tracker.register(message.offset);
      ctx.metrics.commandsConsumed.inc();
      // Null keys carry no ordering promise: each such record is its own chain.
      const key = message.key === null ? `offset:${message.offset}` : `key:${message.key.toString('base64')}`;
      const previous = chains.get(key) ?? Promise.resolve();
      const source = { topic: batch.topic, partition: batch.partition, offset: message.offset };
      const task = previous
        .then(() => handleRecord(message, source, ctx.deps, signal))
        .then((outcome) => {
          if (outcome.kind !== 'abandoned') {
            tracker.complete(message.offset, outcome);
            scheduleCommit();
          }
        })
        .catch((error: unknown) => {
          // A bug, not a record problem (those become results or dead letters): leave the
          // offset uncommitted so the record is consumed again, and stop this batch.
          ctx.log.error({ err: error, topic: batch.topic, partition: batch.partition, offset: message.offset }, 'record handling failed unexpectedly');
          local.abort(error);
        })
        .finally(() => {
          ctx.slots.release();
          // The last record of its key is done: nothing needs to wait for it any more.
          if (chains.get(key) === task) chains.delete(key);
        });
      chains.set(key, task);
      tasks.push(task);
    }
    await Promise.all(tasks);
  } finally {
    clearInterval(heartbeat);
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    await Promise.all(tasks);
    await committing;
  }
  if (commitError !== undefined) throw commitError;
  await commitNow();
}

function countOutcome(metrics: WorkerMetrics, outcome: RecordOutcome): void {
  if (outcome.kind === 'dead-letter') {
    metrics.deadLettered.inc({ reason: outcome.record.error.code });
    return;
  }
  if (outcome.kind !== 'result') return;
  const { result } = outcome;
  metrics.results.inc({ operation: result.operation, outcome: result.outcome, code: result.error === null ? '' : metrics.label.code(result.error.code) });
  for (const message of result.messages) {
    const labels = { region: metrics.label.region(message.regionCode), upstream: metrics.label.upstream(message.upstream) };
    metrics.billedMessages.inc(labels, message.messageCount);
    const micros = toMicros(message.price);
    if (micros !== undefined && micros >= 0n) metrics.chargedMicros.inc(labels, Number(micros));
  }
}

/** One line per committed outcome: debug for the expected ones, warn for failures and dead letters. */
function logOutcome(log: Logger, outcome: RecordOutcome): void {
  if (outcome.kind === 'dead-letter') {
    const { source, error } = outcome.record;
    log.warn({ partition: source.partition, offset: source.offset, code: error.code }, `dead-lettered: ${error.message}`);
    return;
  }
  if (outcome.kind !== 'result') return;
  const { result } = outcome;
  const fields = { commandId: result.commandId, partition: result.source.partition, offset: result.source.offset, outcome: result.outcome, attempts: result.attempts };
  if (result.outcome === 'FAILED') log.warn({ ...fields, code: result.error?.code, retryable: result.error?.retryable }, `command failed: ${result.error?.message ?? ''}`);
  else log.debug({ ...fields, ...(result.error !== null && { code: result.error.code }) }, 'result committed');
}
