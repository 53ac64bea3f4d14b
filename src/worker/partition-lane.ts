import type { Logger } from '../observability/logger.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import { encodeCheckpoint } from './ledger-checkpoint.ts';
import { reportOutcome } from './outcome-report.ts';
import { abortable, deferred } from './waiting.ts';
import { OffsetTracker } from './offset-tracker.ts';
import type { PartitionClaim } from './partition-ownership.ts';
import { handleRecord, type RecordHandlerDeps, type RecordLane, type RecordOutcome } from './record-handler.ts';
import type { Semaphore } from './semaphore.ts';
import type { BytesInHand } from './bytes-in-hand.ts';
import { commandRecordBytes } from '../contracts/dead-letter.ts';
import { commitPrefix, type CommitTarget } from './transaction-committer.ts';
import type { FetchedBatch, PartitionProducers } from '../kafka/ports.ts';
import type { SendHooks } from './guarded-sender.ts';

/** One fetched batch and its records, as the worker needs them (defined with the other Kafka ports). */
export type { FetchedBatch, FetchedRecord } from '../kafka/ports.ts';

export interface LaneContext {
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
  /** Where results go; `mayFence` is the lane's own (see `mayCommit`). */
  readonly target: Omit<CommitTarget, 'topic' | 'partition' | 'mayFence' | 'generation'>;
  readonly commitIntervalMs: number;
  /** This generation's claim of the partition: start offset, inherited and open marks, dedup window. */
  readonly claim: PartitionClaim;
  /** Records dispatched past the committed offset, at most (the run-ahead bound). */
  readonly maxRunAhead: number;
  /** Bytes of records dispatched and not yet done, process-wide (MAX_BYTES_IN_HAND). */
  readonly bytesInHand: BytesInHand;
  /** Reads the partition's committed offset from the broker (to resolve an ambiguous commit). */
  readonly fetchCommittedOffset: (topic: string, partition: number) => Promise<bigint>;
  /** Whether this process may still start a send for the partition (its lease holds and the claim is current). */
  readonly leaseHolds: () => boolean;
  /**
   * Whether the lane may still commit: a current claim may (re)initialise its producer; a lane
   * retiring after a rebalance only while its generation's producer is still there (nobody fenced
   * it), never initialising one (that would fence the new owner).
   */
  readonly mayCommit: () => boolean;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  /** Real progress: a record dispatched or a transaction committed. */
  readonly onProgress: () => void;
  /** The lane has records in hand (dispatched, not yet committed), or none any more. */
  readonly onBusy: (busy: boolean) => void;
  /** Stop fetching the partition (the run-ahead bound or the bytes budget is reached), or fetch it again. */
  readonly holdFetching: (held: boolean) => void;
}

/** How a lane ended: retired (a rebalance, shutdown) with everything it could commit committed, or failed. */
export interface LaneEnd {
  readonly failure?: unknown;
}

/**
 * One partition's work in one claim: records go out in offset order, each behind the previous
 * record with the same key (same-key commands are sent in order), within the process-wide
 * in-flight limit and at most `maxRunAhead` records past the committed offset.
 *
 * Fetching is decoupled from sending: `accept` dispatches a fetched batch and returns at once, so
 * the consumer fetches the next records while earlier sends are still under way; a command waits
 * for the previous one of its key only, never for the slowest send of an earlier batch. When the
 * run-ahead bound is reached the partition stops being fetched (`holdFetching`) and the records
 * not taken are fetched again once commits catch up.
 *
 * With the ledger on, a command is marked "attempting" in the ledger before its send, and the
 * send starts only once the transaction carrying the mark has committed: a fenced zombie cannot
 * commit, so it cannot send. Marks ride in the next transaction, which runs at once when marks
 * wait (results alone wait up to `commitIntervalMs`): at most one extra commit per wave.
 *
 * A lane ends by `retire` (a rebalance or shutdown: commands not yet sending give up unsent,
 * calls under way finish and commit) or by a failure (a commit failed or was fenced, or a bug);
 * `ended` then settles once every dispatched record is done.
 */
export class PartitionLane {
  readonly claim: PartitionClaim;
  readonly #ctx: LaneContext;
  readonly #ledgerOn: boolean;
  readonly #target: CommitTarget;
  readonly #tracker = new OffsetTracker<RecordOutcome>();
  readonly #chains = new Map<string, Promise<unknown>>();
  readonly #tasks = new Set<Promise<void>>();
  readonly #local = new AbortController();
  readonly #signal: AbortSignal;
  /** Aborted at retirement: sends that have not started give up (calls under way finish). */
  readonly #stopSending = new AbortController();
  /** Marks waiting for the transaction that carries them. */
  #unflushed: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  /** A mark was withdrawn (the send surely did not happen): the next checkpoint must drop it. */
  #marksWithdrawn = false;
  #failure: unknown;
  #failed = false;
  #retired = false;
  #committing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** When the last transaction ended: results commit at most once per COMMIT_INTERVAL_MS. */
  #lastCommitEnded = Number.NEGATIVE_INFINITY;
  #urgent: NodeJS.Immediate | undefined;
  /** Records holding an in-flight slot (taken right before their call, kept until they end). */
  readonly #slotHeld = new Set<bigint>();
  /** The highest offset dispatched: a record fetched again is never dispatched twice. */
  #lastAccepted = -1n;
  #highWatermark = 0n;
  #held = false;
  /** At the run-ahead bound, until half of it is committed. */
  #runAheadFull = false;
  /** Held for the bytes budget (a separate reason from the run-ahead bound). */
  #heldForBytes = false;
  readonly #bytesFreed = (): void => {
    this.#heldForBytes = false;
    this.#syncHold();
  };
  #busy = false;
  #finishing = false;
  readonly #ended = deferred<LaneEnd>();

  constructor(ctx: LaneContext) {
    this.#ctx = ctx;
    this.claim = ctx.claim;
    this.#ledgerOn = ctx.target.ledgerTopic !== undefined;
    this.#signal = AbortSignal.any([ctx.abandon, this.#local.signal]);
    this.#target = {
      ...ctx.target,
      topic: ctx.claim.topic,
      partition: ctx.claim.partition,
      generation: ctx.claim.generation,
      mayFence: ctx.mayCommit,
    };
    ctx.abandon.addEventListener('abort', () => this.#stopSending.abort(ctx.abandon.reason), { once: true });
  }

  /** Settles once the lane has retired or failed and every dispatched record is done. Never rejects. */
  get ended(): Promise<LaneEnd> {
    return this.#ended.promise;
  }

  /** Whether the lane takes new records (not retired, not failed). */
  get accepting(): boolean {
    return !this.#retired && !this.#failed;
  }

  /** Records dispatched and not yet done (sending, or waiting to). */
  get working(): number {
    return this.#tasks.size;
  }

  /** Records dispatched and not yet committed. */
  get pending(): number {
    return this.#tracker.pending;
  }

  /**
   * Dispatches the batch's records, in offset order, as far as the run-ahead bound and the lane's
   * state allow, and returns without waiting for any send. Records taken (or skipped as already
   * answered) are resolved, so the consumer's next fetch starts after them.
   */
  accept(batch: FetchedBatch): void {
    const { claim } = this;
    this.#highWatermark = BigInt(batch.highWatermark);
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      if (offset < claim.start || offset < claim.position.committed || offset <= this.#lastAccepted) {
        batch.resolveOffset(message.offset);
        continue;
      }
      if (!this.accepting || this.#signal.aborted || !batch.isRunning() || batch.isStale() || !this.#ctx.leaseHolds()) return;
      if (this.#tracker.pending >= this.#ctx.maxRunAhead) {
        // The run-ahead bound: stop fetching this partition until commits catch up. The records
        // not taken are fetched again then (their offsets stay unresolved).
        this.#runAheadFull = true;
        this.#syncHold();
        this.#scheduleCommit(false);
        return;
      }
      const bytes = commandRecordBytes(message);
      if (!this.#ctx.bytesInHand.tryTake(bytes)) {
        // The process holds as many record bytes as it may: fetch this partition again once
        // other records are done.
        this.#heldForBytes = true;
        this.#ctx.bytesInHand.whenFree(this.#bytesFreed);
        this.#syncHold();
        return;
      }
      this.#dispatch(message, batch, bytes);
      batch.resolveOffset(message.offset);
      this.#lastAccepted = offset;
    }
  }

  /**
   * A rebalance or shutdown: take no more records; commands still waiting (gate, rate limit, a
   * slot, a mark) give up unsent; calls under way finish and their results commit.
   */
  retire(reason: unknown): void {
    if (this.#retired) return;
    this.#retired = true;
    this.#stopSending.abort(reason);
    this.#releaseHolds();
    this.#maybeEnd();
  }

  #fail(error: unknown): void {
    if (!this.#failed) {
      this.#failed = true;
      this.#failure = error;
    }
    this.#local.abort(error);
    this.#stopSending.abort(error);
    this.#releaseHolds();
    for (const mark of this.#unflushed.splice(0)) mark.reject(error);
    this.#maybeEnd();
  }

  #dispatch(message: FetchedBatch['messages'][number], batch: FetchedBatch, bytes: number): void {
    const ctx = this.#ctx;
    const offset = BigInt(message.offset);
    this.#tracker.register(message.offset);
    this.#setBusy(true);
    ctx.metrics.commandsConsumed.inc();
    ctx.onProgress();
    // Null keys carry no ordering promise: each such record is its own chain.
    const key = message.key === null ? `offset:${message.offset}` : `key:${message.key.toString('base64')}`;
    const previous = this.#chains.get(key) ?? Promise.resolve();
    const source = { topic: batch.topic, partition: batch.partition, offset: message.offset };
    const task: Promise<void> = previous
      .then(() => handleRecord(message, source, ctx.deps, this.#signal, this.#recordLane))
      .then((outcome) => {
        if (outcome.kind === 'abandoned') {
          // Not sent: a later checkpoint must not list it (the next owner sends it normally).
          // A call cut while under way keeps its mark: the next owner reports it UNKNOWN.
          if (outcome.maybeSent !== true) this.#withdraw(offset);
          return;
        }
        this.#tracker.complete(message.offset, outcome);
        this.#scheduleCommit(false);
      })
      .catch((error: unknown) => {
        // A bug, not a record problem (those become results or dead letters): the lane fails,
        // the offset stays uncommitted, and the record is consumed again by the next claim.
        ctx.log.error({ err: error, topic: batch.topic, partition: batch.partition, offset: message.offset }, 'record handling failed unexpectedly');
        this.#fail(error);
      })
      .finally(() => {
        if (this.#slotHeld.delete(offset)) ctx.slots.release();
        ctx.bytesInHand.free(bytes);
        // The last record of its key is done: nothing needs to wait for it any more.
        if (this.#chains.get(key) === task) this.#chains.delete(key);
        this.#tasks.delete(task);
        this.#maybeEnd();
      });
    this.#chains.set(key, task);
    this.#tasks.add(task);
  }

  #withdraw(offset: bigint): void {
    if (this.claim.open.delete(offset)) this.#marksWithdrawn = true;
  }

  readonly #recordLane: RecordLane = {
    inherited: (offset) => this.claim.inDoubt.get(offset),
    claimCommandId: (commandId, offset) => {
      const first = this.claim.dedup.firstOffset(commandId);
      if (first !== undefined && first !== offset) return first;
      this.claim.dedup.remember(commandId, offset);
      return undefined;
    },
    releaseCommandId: (commandId, offset) => this.claim.dedup.forget(commandId, offset),
    onInDoubt: (action) => this.#ctx.metrics.inDoubt.inc({ action }),
    sendHooks: (offset, commandId): SendHooks => ({
      beforeSend: (gateSignal) => this.#beforeSend(offset, commandId, gateSignal),
      notSent: () => this.#withdraw(offset),
    }),
  };

  async #beforeSend(offset: bigint, commandId: string, gateSignal: AbortSignal): Promise<boolean> {
    const ctx = this.#ctx;
    const waitSignal = AbortSignal.any([gateSignal, this.#stopSending.signal]);
    if (!ctx.leaseHolds() || this.#stopSending.signal.aborted) return false;
    const permits = this.#ledgerOn && !this.#slotHeld.has(offset) ? ctx.markPermits : undefined;
    await permits?.acquire(waitSignal);
    try {
      if (this.#ledgerOn) {
        if (!this.claim.open.has(offset)) {
          this.claim.open.set(offset, { offset, commandId, at: Date.now() });
          ctx.metrics.ledgerMarks.inc();
        }
        const flushed = new Promise<void>((resolve, reject) => this.#unflushed.push({ resolve, reject }));
        this.#scheduleCommit(true);
        await abortable(flushed, waitSignal);
      }
      // The in-flight slot bounds calls to the service, so it is taken once the mark has
      // committed: the next wave's marks commit while this wave's calls are under way.
      if (!this.#slotHeld.has(offset)) {
        await ctx.slots.acquire(waitSignal);
        this.#slotHeld.add(offset);
      }
    } finally {
      permits?.release();
    }
    // The lease is checked again after the waits: a process frozen in between sends nothing.
    return ctx.leaseHolds() && !this.#stopSending.signal.aborted;
  }

  async #commitNow(): Promise<void> {
    const ctx = this.#ctx;
    const { claim } = this;
    const prefix = this.#tracker.takePrefix();
    const marks = this.#unflushed;
    this.#unflushed = [];
    if (prefix === undefined && marks.length === 0 && !(this.#marksWithdrawn && this.#ledgerOn)) return;
    this.#marksWithdrawn = false;
    const next = prefix === undefined ? claim.position.committed : BigInt(prefix.commitOffset);
    const ledgerRecord = this.#ledgerOn ? encodeCheckpoint({ next, open: [...claim.open.values()].filter((m) => m.offset >= next) }) : undefined;
    const started = performance.now();
    try {
      await commitPrefix(ctx.producers, this.#target, prefix?.values ?? [], prefix?.commitOffset, ledgerRecord, ctx.log, () =>
        ctx.fetchCommittedOffset(claim.topic, claim.partition),
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
      const lag = this.#highWatermark > next ? Number(this.#highWatermark - next) : 0;
      ctx.metrics.consumerLag.set({ topic: claim.topic, partition: String(claim.partition) }, lag);
    }
    // Half the bound free again: fetch the partition again (hysteresis, so it does not flap).
    if (this.#runAheadFull && this.#tracker.pending <= Math.floor(ctx.maxRunAhead / 2)) {
      this.#runAheadFull = false;
      this.#syncHold();
    }
    if (this.#tracker.pending === 0) this.#setBusy(false);
    ctx.onProgress();
  }

  #runCommit(): void {
    if (this.#committing !== undefined || this.#failed) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#committing = this.#commitNow()
      .catch((error: unknown) => this.#fail(error))
      .finally(() => {
        this.#committing = undefined;
        this.#lastCommitEnded = performance.now();
        if (this.#unflushed.length > 0) this.#scheduleCommit(true);
        else if (this.#tracker.pending > 0) this.#scheduleCommit(false);
        this.#maybeEnd();
      });
  }

  /**
   * `now`: marks are waiting (a send waits for them), so commit as soon as the current one ends.
   * Results alone commit at most once per `commitIntervalMs`: at once when the last transaction
   * ended longer ago than that (a quiet partition shows a result without waiting), else when the
   * interval since it is up (a busy one batches them).
   */
  #scheduleCommit(now: boolean): void {
    if (this.#failed || this.#committing !== undefined) return;
    const wait = this.#ctx.commitIntervalMs - (performance.now() - this.#lastCommitEnded);
    if (now || wait <= 0) {
      this.#urgent ??= setImmediate(() => {
        this.#urgent = undefined;
        this.#runCommit();
      });
      return;
    }
    this.#timer ??= setTimeout(() => this.#runCommit(), wait);
  }

  /** Retired or failed, and nothing left in hand: commit what is done (unless failed) and end. */
  #maybeEnd(): void {
    if (this.accepting || this.#finishing || this.#tasks.size > 0 || this.#committing !== undefined) return;
    this.#finishing = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#urgent !== undefined) clearImmediate(this.#urgent);
    this.#timer = undefined;
    this.#urgent = undefined;
    void (async () => {
      if (!this.#failed) {
        try {
          await this.#commitNow();
        } catch (error) {
          this.#failed = true;
          this.#failure = error;
        }
      }
      this.#setBusy(false);
      this.#ended.resolve(this.#failed ? { failure: this.#failure } : {});
    })();
  }

  /** The partition is not fetched while either bound holds it. */
  #syncHold(): void {
    const held = this.accepting && (this.#runAheadFull || this.#heldForBytes);
    if (this.#held === held) return;
    this.#held = held;
    this.#ctx.holdFetching(held);
  }

  #releaseHolds(): void {
    this.#runAheadFull = false;
    this.#heldForBytes = false;
    this.#ctx.bytesInHand.cancel(this.#bytesFreed);
    this.#syncHold();
  }

  #setBusy(busy: boolean): void {
    if (this.#busy === busy) return;
    this.#busy = busy;
    this.#ctx.onBusy(busy);
  }
}
