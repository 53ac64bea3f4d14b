import type { Logger } from '../observability/logger.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import { encodeCheckpoint } from './ledger-checkpoint.ts';
import { reportOutcome } from './outcome-report.ts';
import { abortable, deferred } from './waiting.ts';
import { OffsetTracker } from './offset-tracker.ts';
import type { PartitionClaim } from './partition-ownership.ts';
import { handleRecord, type RecordHandlerDeps, type RecordLane, type RecordOutcome } from './record-handler.ts';
import type { Semaphore } from './semaphore.ts';
import { commitPrefix, type CommitTarget } from './transaction-committer.ts';
import type { FetchedBatch, PartitionProducers } from '../kafka/ports.ts';
import type { SendHooks } from './guarded-sender.ts';

/** One fetched batch and its records, as the worker needs them (defined with the other Kafka ports). */
export type { FetchedBatch, FetchedRecord } from '../kafka/ports.ts';

export interface BatchContext {
  readonly deps: RecordHandlerDeps;
  readonly producers: PartitionProducers;
  readonly slots: Semaphore;
  /**
   * Bounds the commands marked in the ledger but not yet holding a slot (process-wide; 2 ×
   * MAX_IN_FLIGHT): marks a wave or two ahead of the calls keep the pipeline full, more would only
   * grow what a crash leaves UNKNOWN.
   */
  readonly markPermits?: Semaphore;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  readonly target: Omit<CommitTarget, 'topic' | 'partition'>;
  readonly commitIntervalMs: number;
  /** This generation's claim of the partition: start offset, inherited and open marks, dedup window. */
  readonly claim: PartitionClaim;
  /** Records dispatched past the committed offset, at most (the run-ahead bound). */
  readonly maxRunAhead: number;
  /** Reads the partition's committed offset from the broker (to resolve an ambiguous commit). */
  readonly fetchCommittedOffset: (topic: string, partition: number) => Promise<bigint>;
  /** Whether this process may still start a send for the partition (its group lease holds). */
  readonly leaseHolds: () => boolean;
  /** Stop taking new records (shutdown); dispatched ones still finish. */
  readonly wrappingUp: () => boolean;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  /** Real progress: a record dispatched or a transaction committed. */
  readonly onProgress: () => void;
}

/**
 * Processes one fetched batch of one partition: records go out in offset order, each behind the
 * previous record with the same key (same-key commands are sent in order), within the
 * process-wide in-flight limit and at most `maxRunAhead` records past the committed offset.
 *
 * With the ledger on, a command is marked "attempting" in the ledger before its send, and the
 * send starts only once the transaction carrying the mark has committed: a fenced zombie cannot
 * commit, so it cannot send. Marks ride in the next transaction, which runs at once when marks
 * wait (results alone wait up to `commitIntervalMs`): at most one extra commit per wave.
 */
export async function processBatch(batch: FetchedBatch, ctx: BatchContext): Promise<void> {
  const { claim } = ctx;
  const ledgerOn = ctx.target.ledgerTopic !== undefined;
  const target: CommitTarget = { ...ctx.target, topic: batch.topic, partition: batch.partition };
  const tracker = new OffsetTracker<RecordOutcome>();
  const chains = new Map<string, Promise<unknown>>();
  const tasks: Promise<void>[] = [];
  const local = new AbortController();
  const signal = AbortSignal.any([ctx.abandon, local.signal]);
  /** Marks waiting for the transaction that carries them. */
  let unflushed: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** A mark was withdrawn (the send surely did not happen): the next checkpoint must drop it. */
  let marksWithdrawn = false;
  const withdraw = (offset: bigint): void => {
    if (claim.open.delete(offset)) marksWithdrawn = true;
  };
  let commitError: unknown;
  let committing: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let urgent: NodeJS.Immediate | undefined;
  let committed: { promise: Promise<void>; resolve: () => void } = deferred();
  /** Records holding an in-flight slot (taken right before their call, kept until they end). */
  const slotHeld = new Set<bigint>();

  const commitNow = async (): Promise<void> => {
    const prefix = tracker.takePrefix();
    const marks = unflushed;
    unflushed = [];
    if (prefix === undefined && marks.length === 0 && !(marksWithdrawn && ledgerOn)) return;
    marksWithdrawn = false;
    const next = prefix === undefined ? claim.position.committed : BigInt(prefix.commitOffset);
    const ledgerRecord = ledgerOn ? encodeCheckpoint({ next, open: [...claim.open.values()].filter((m) => m.offset >= next) }) : undefined;
    const started = performance.now();
    try {
      await commitPrefix(ctx.producers, target, prefix?.values ?? [], prefix?.commitOffset, ledgerRecord, ctx.log, () =>
        ctx.fetchCommittedOffset(batch.topic, batch.partition),
      );
      ctx.metrics.transactions.inc({ outcome: 'committed' });
    } catch (error) {
      ctx.metrics.transactions.inc({ outcome: 'failed' });
      for (const mark of marks) mark.reject(error);
      throw error;
    } finally {
      ctx.metrics.commitLatency.observe((performance.now() - started) / 1000);
    }
    for (const mark of marks) mark.resolve();
    if (prefix !== undefined) {
      claim.position.committed = next;
      for (const offset of [...claim.open.keys()]) if (offset < next) claim.open.delete(offset);
      for (const offset of [...claim.inDoubt.keys()]) if (offset < next) claim.inDoubt.delete(offset);
      for (const outcome of prefix.values) reportOutcome(ctx.metrics, ctx.log, outcome);
      batch.resolveOffset((next - 1n).toString());
      ctx.metrics.consumerLag.set({ topic: batch.topic, partition: String(batch.partition) }, Math.max(0, Number(BigInt(batch.highWatermark) - next)));
    }
    const wake = committed;
    committed = deferred();
    wake.resolve();
    ctx.onProgress();
  };
  const runCommit = (): void => {
    if (committing !== undefined || commitError !== undefined) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    committing = commitNow()
      .catch((error: unknown) => {
        commitError = error;
        local.abort(error);
        for (const mark of unflushed.splice(0)) mark.reject(error);
        const wake = committed;
        committed = deferred();
        wake.resolve();
      })
      .finally(() => {
        committing = undefined;
        if (unflushed.length > 0) scheduleCommit(true);
        else if (tracker.pending > 0) scheduleCommit(false);
      });
  };
  /** `now`: marks are waiting (a send waits for them), so commit as soon as the current one ends. */
  const scheduleCommit = (now: boolean): void => {
    if (commitError !== undefined || committing !== undefined) return;
    if (now) {
      urgent ??= setImmediate(() => {
        urgent = undefined;
        runCommit();
      });
      return;
    }
    timer ??= setTimeout(runCommit, ctx.commitIntervalMs);
  };

  const lane: RecordLane = {
    inherited: (offset) => claim.inDoubt.get(offset),
    claimCommandId: (commandId, offset) => {
      const first = claim.dedup.firstOffset(commandId);
      if (first !== undefined && first !== offset) return first;
      claim.dedup.remember(commandId, offset);
      return undefined;
    },
    releaseCommandId: (commandId, offset) => claim.dedup.forget(commandId, offset),
    onInDoubt: (action) => ctx.metrics.inDoubt.inc({ action }),
    sendHooks: (offset, commandId): SendHooks => ({
      beforeSend: async (gateSignal) => {
        const waitSignal = AbortSignal.any([gateSignal, stopSending.signal]);
        if (!ctx.leaseHolds() || ctx.wrappingUp()) return false;
        const permits = ledgerOn && !slotHeld.has(offset) ? ctx.markPermits : undefined;
        await permits?.acquire(waitSignal);
        try {
          if (ledgerOn) {
            if (!claim.open.has(offset)) {
              claim.open.set(offset, { offset, commandId, at: Date.now() });
              ctx.metrics.ledgerMarks.inc();
            }
            const flushed = new Promise<void>((resolve, reject) => unflushed.push({ resolve, reject }));
            scheduleCommit(true);
            await abortable(flushed, waitSignal);
          }
          // The in-flight slot bounds calls to the service, so it is taken once the mark has
          // committed: the next wave's marks commit while this wave's calls are under way.
          if (!slotHeld.has(offset)) {
            await ctx.slots.acquire(waitSignal);
            slotHeld.add(offset);
          }
        } finally {
          permits?.release();
        }
        // The lease is checked again after the waits: a process frozen in between sends nothing.
        return ctx.leaseHolds() && !ctx.wrappingUp();
      },
      notSent: () => withdraw(offset),
    }),
  };

  let rebalancing = false;
  /** Aborted at shutdown or a rebalance: sends that have not started give up (calls under way finish). */
  const stopSending = new AbortController();
  const heartbeat = setInterval(() => {
    if (ctx.wrappingUp()) stopSending.abort(new Error('shutting down'));
    batch.heartbeat().catch((error: unknown) => {
      // A rebalance is under way: stop taking records, and commands still waiting (gate, rate
      // limit, a slot, a mark) give up unsent; sends already made finish and commit.
      if (!rebalancing) ctx.log.info({ err: error, topic: batch.topic, partition: batch.partition }, 'heartbeat failed during batch; wrapping up');
      rebalancing = true;
      stopSending.abort(error);
      local.abort(error);
    });
  }, 1_000);

  try {
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      if (offset < claim.start || offset < claim.position.committed) {
        batch.resolveOffset(message.offset);
        continue;
      }
      // The run-ahead bound: wait for commits to catch up.
      while (tracker.pending >= ctx.maxRunAhead && !signal.aborted && commitError === undefined) {
        scheduleCommit(false);
        await abortable(committed.promise, signal).catch(() => undefined);
      }
      if (ctx.wrappingUp() || rebalancing || signal.aborted || !batch.isRunning() || batch.isStale() || !ctx.leaseHolds()) break;
      tracker.register(message.offset);
      ctx.metrics.commandsConsumed.inc();
      ctx.onProgress();
      // Null keys carry no ordering promise: each such record is its own chain.
      const key = message.key === null ? `offset:${message.offset}` : `key:${message.key.toString('base64')}`;
      const previous = chains.get(key) ?? Promise.resolve();
      const source = { topic: batch.topic, partition: batch.partition, offset: message.offset };
      const task = previous
        .then(() => handleRecord(message, source, ctx.deps, signal, lane))
        .then((outcome) => {
          if (outcome.kind === 'abandoned') {
            // Not sent: a later checkpoint must not list it (the next owner sends it normally).
            // A call cut while under way keeps its mark: the next owner reports it UNKNOWN.
            if (outcome.maybeSent !== true) withdraw(offset);
            return;
          }
          tracker.complete(message.offset, outcome);
          scheduleCommit(false);
        })
        .catch((error: unknown) => {
          // A bug, not a record problem (those become results or dead letters): leave the
          // offset uncommitted so the record is consumed again, and stop this batch.
          ctx.log.error({ err: error, topic: batch.topic, partition: batch.partition, offset: message.offset }, 'record handling failed unexpectedly');
          local.abort(error);
        })
        .finally(() => {
          if (slotHeld.delete(offset)) ctx.slots.release();
          // The last record of its key is done: nothing needs to wait for it any more.
          if (chains.get(key) === task) chains.delete(key);
        });
      chains.set(key, task);
      tasks.push(task);
    }
    await Promise.all(tasks);
  } finally {
    clearInterval(heartbeat);
    await Promise.all(tasks);
    if (timer !== undefined) clearTimeout(timer);
    if (urgent !== undefined) clearImmediate(urgent);
    timer = undefined;
    urgent = undefined;
    await committing;
  }
  if (commitError !== undefined) throw commitError;
  await commitNow();
}
