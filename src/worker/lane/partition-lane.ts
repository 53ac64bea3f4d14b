import { encodeCheckpoint, type OpenMark } from './ledger-checkpoint.ts';
import type { HandoverLookout } from '../ownership/handover-lookout.ts';
import type { HandoverSettlement } from '../ownership/handover-record.ts';
import { reportOutcome } from './outcome-report.ts';
import { deferred } from '../waiting.ts';
import type { PartitionClaim } from '../protocol/claim.ts';
import { PartitionMachine, type Effect, type TransactionPlan } from '../protocol/partition-machine.ts';
import { ProtocolViolation } from '../protocol/assertions.ts';
import { handleRecord, type RecordLane, type RecordOutcome } from '../send/record-handler.ts';
import { publishesRecord } from './record-outcomes.ts';
import { commandRecordBytes } from '../../contracts/dead-letter.ts';
import { commitTransaction, type CommitTarget, type CommittedWrite } from './partition-transaction.ts';
import type { FetchedBatch, FetchedRecord } from '../../kafka/ports.ts';
import type { LaneContext } from './lane-context.ts';

export type { LaneContext } from './lane-context.ts';

/** One fetched batch and its records, as the worker needs them (defined with the other Kafka ports). */
export type { FetchedBatch, FetchedRecord } from '../../kafka/ports.ts';

/** How long a lane that ends waits, at most, for its last handovers to be written. */
const HANDOVER_WRITE_WAIT_MS = 5_000;

/** How a lane ended: retired (a rebalance, shutdown) with everything it could commit committed, or failed. */
export interface LaneEnd {
  readonly failure?: unknown;
}

/** A record taken, until its handler returns. */
interface InHand {
  readonly message: FetchedRecord;
  readonly source: { topic: string; partition: number; offset: string };
  readonly bytes: number;
}

/**
 * The I/O around one partition claim's protocol (protocol/partition-machine.ts, which decides
 * everything: when a record may call, what each transaction carries, when the claim ends). The lane
 * feeds it events — records fetched, handlers' answers, permits and slots granted, transactions
 * ended, timers — and carries out its effects. Nothing here decides; it waits and does.
 *
 * Fetching is decoupled from sending: `accept` takes what the machine allows of a fetched batch and
 * returns at once, so the consumer fetches on while earlier sends are under way.
 */
export class PartitionLane {
  readonly claim: PartitionClaim;
  readonly #ctx: LaneContext;
  readonly #machine: PartitionMachine<RecordOutcome>;
  readonly #target: CommitTarget;
  readonly #records = new Map<bigint, InHand>();
  /** When each record marking now got its mark permit (performance.now), until its mark commits. */
  readonly #markedAt = new Map<bigint, number>();
  /** Each record's pending "may I call?" (answered by a `call` or `refuse-call` effect). */
  readonly #callAnswers = new Map<bigint, (go: boolean) => void>();
  /** Aborted when the claim fails: every record's waits (decoding, the gate) give up. */
  readonly #local = new AbortController();
  readonly #signal: AbortSignal;
  /** Aborted when sending stops (retired, failed, forced): pending permit and slot waits are cut. */
  readonly #stopSending = new AbortController();
  /** Either of the two: what every wait of a record (permit, slot, and in the handler) gives up on. */
  readonly #waitSignal: AbortSignal;
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  #highWatermark = 0n;
  #applying = false;
  /** The protocol invariant whose breaking failed the claim (#violated): no call starts any more. */
  #broken: ProtocolViolation | undefined;
  /** A second violation stopped the lane (#stop): the machine is not driven any more. */
  #stopped: ProtocolViolation | undefined;
  readonly #ended = deferred<LaneEnd>();
  readonly #bytesFreed = (): void => this.#apply(() => this.#machine.bytesHeld(false));
  /** The last transaction committed with a checkpoint: published again should Kafka have lost it (partition-transaction.ts, withLostRepublished). */
  #lastCommitted: CommittedWrite | undefined;
  /** The claim's last committed transaction that published records: what a later one's abort may take with it (partition-transaction.ts, abortedWithFailed). */
  #lastPublished: CommittedWrite | undefined;
  /** Waiters for what was done at the retirement to be committed (retireCommittedSoon): told after each event. */
  #retireCommitWaiters: (() => void)[] = [];
  /** Handovers being written: the lane ends after them (a shutdown disconnects their producer next). */
  readonly #handoverWrites = new Set<Promise<void>>();
  /** Looks for the handovers of the marks this claim inherited in doubt (ledger on, any inherited). */
  readonly #lookout: HandoverLookout | undefined;

  constructor(ctx: LaneContext) {
    this.#ctx = ctx;
    this.claim = ctx.claim;
    this.#machine = new PartitionMachine<RecordOutcome>({
      claim: ctx.claim,
      ledger: ctx.target.ledgerTopic !== undefined,
      markPermits: ctx.markPermits !== undefined,
      maxRunAhead: ctx.maxRunAhead,
      commitIntervalMs: ctx.commitIntervalMs,
      markLingerMs: ctx.markLingerMs,
      handovers: ctx.handovers !== undefined,
      publishes: publishesRecord,
    });
    this.#signal = AbortSignal.any([ctx.abandon, this.#local.signal]);
    this.#waitSignal = AbortSignal.any([this.#signal, this.#stopSending.signal]);
    const { claim } = ctx;
    this.#target = {
      ...ctx.target,
      topic: claim.topic,
      partition: claim.partition,
      // Read at each use: a kept claim moves to the next generation, and its producer with it.
      get generation() {
        return claim.generation;
      },
      standing: ctx.standing,
    };
    ctx.abandon.addEventListener('abort', () => this.#apply(() => this.#machine.stopSending()), { once: true });
    this.#lookout = claim.inDoubt.size > 0 ? ctx.handovers?.lookout(claim.partition, claim.inDoubt.values(), Date.now()) : undefined;
  }

  /** Settles once the lane has retired or failed and every dispatched record is done. Never rejects. */
  get ended(): Promise<LaneEnd> {
    return this.#ended.promise;
  }
  /** Whether the lane takes new records (not retired, not failed). */
  get accepting(): boolean {
    return this.#machine.accepting;
  }
  /** What the lane had done when it retired is committed (its calls under way may go on). */
  get retireCommitted(): boolean {
    return this.#machine.retireCommitted;
  }
  /** Resolves once `retireCommitted` holds (at once if it does): the machine's event that settles it wakes the waiter. */
  retireCommittedSoon(): Promise<void> {
    if (this.#machine.retireCommitted) return Promise.resolve();
    return new Promise((resolve) => this.#retireCommitWaiters.push(resolve));
  }
  /** Records dispatched and not yet done (sending, or waiting to). */
  get working(): number {
    return this.#machine.working;
  }
  /** Records dispatched and not yet committed. */
  get pending(): number {
    return this.#machine.pending;
  }

  /**
   * Takes the batch's records, in offset order, as far as the machine allows (run-ahead bound,
   * claim state, lease) and the bytes budget does, and returns without waiting for any send.
   * Records taken (or skipped as already answered) are resolved, so the next fetch starts after them.
   */
  accept(batch: FetchedBatch): void {
    const ctx = this.#ctx;
    this.#highWatermark = BigInt(batch.highWatermark);
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      const mayTake = !this.#signal.aborted && batch.isRunning() && !batch.isStale() && ctx.standing.maySend();
      const verdict = this.#apply(() => this.#machine.offer(offset, mayTake, performance.now())) ?? 'closed';
      if (verdict === 'skip') {
        batch.resolveOffset(message.offset);
        continue;
      }
      if (verdict !== 'take') return;
      const bytes = commandRecordBytes(message);
      if (!ctx.bytesInHand.tryTake(bytes)) {
        // The process holds as many record bytes as it may: fetch this partition again once
        // other records are done (their offsets stay unresolved).
        this.#apply(() => this.#machine.bytesHeld(true));
        ctx.bytesInHand.whenFree(this.#bytesFreed);
        return;
      }
      this.#records.set(offset, { message, source: { topic: batch.topic, partition: batch.partition, offset: message.offset }, bytes });
      ctx.metrics.commandsConsumed.inc();
      // Null keys carry no ordering promise: each such record is its own key.
      const key = message.key === null ? `offset:${message.offset}` : `key:${message.key.toString('base64')}`;
      this.#apply(() => this.#machine.take(offset, key));
      batch.resolveOffset(message.offset);
    }
  }

  /** The group started rebalancing: no call starts and nothing is taken until `keep` or `retire`. */
  hold(): void {
    this.#apply(() => this.#machine.hold());
  }

  /** What the lane waits on now (a log line's fields: partition waits longer than a second are logged, stall-report.ts). */
  waitingOn(): ReturnType<PartitionMachine<RecordOutcome>['waitingOn']> {
    return this.#machine.waitingOn();
  }

  /** Calls under way now (the sticky assignor moves idle partitions first). */
  get callsUnderWay(): number {
    return this.#machine.calling;
  }

  /** Rebalancing, waiting for the new assignment. */
  get holding(): boolean {
    return this.#machine.state === 'holding';
  }

  /** Taking records or holding for a rebalance: not retiring, closing or over yet. */
  get current(): boolean {
    return this.#machine.state === 'active' || this.#machine.state === 'holding';
  }

  /** The new generation keeps this claim: held records call, and fetching goes on. */
  keep(leaseHolds: boolean): void {
    this.#apply(() => this.#machine.keep(leaseHolds, performance.now()));
  }

  /**
   * The partition moved, or shutdown: take no more records; waits are cut; calls under way finish
   * and their results commit, or (`moved` to another member, ledger on) are handed over.
   */
  retire(_reason: unknown, moved = false): void {
    this.#apply(() => this.#machine.retire(moved, performance.now()));
  }

  /**
   * Runs one event and carries out every effect it (and the effects' own events) produced, in
   * order. A protocol invariant the machine finds broken (assertions.ts) fails the claim instead
   * (#violated); a second one stops the lane on the spot (#stopped): then nothing is returned.
   */
  #apply<T>(event: () => T): T | undefined {
    if (this.#stopped !== undefined) return undefined;
    try {
      const value = event();
      if (this.#applying) return value;
      this.#applying = true;
      try {
        for (let effects = this.#machine.drain(); effects.length > 0 && this.#stopped === undefined; effects = this.#machine.drain())
          for (const effect of effects) if (this.#stopped === undefined) this.#do(effect);
      } finally {
        this.#applying = false;
      }
      if (this.#retireCommitWaiters.length > 0 && this.#machine.retireCommitted) for (const wake of this.#retireCommitWaiters.splice(0)) wake();
      return this.#stopped === undefined ? value : undefined;
    } catch (error) {
      if (!(error instanceof ProtocolViolation)) throw error;
      if (this.#broken === undefined) this.#violated(error);
      else this.#stop(error);
      return undefined;
    }
  }

  /**
   * The machine found one of its invariants broken (a bug): reported (an error line naming it, the
   * metric), and from here no call starts: every record waiting to call is refused, and the claim
   * fails through the machine (its checks off: its state is known broken), so slots, permits and
   * bytes go back as its records end; calls under way finish and their outcomes are handed over.
   * The lane ends failed and the partition is claimed afresh from what the broker has.
   */
  #violated(violation: ProtocolViolation): void {
    this.#broken = violation;
    const { topic, partition, generation } = this.claim;
    this.#ctx.metrics.protocolViolations.inc({ invariant: violation.invariant });
    this.#ctx.log.error(
      { invariant: violation.invariant, topic, partition, generation },
      `${violation.message}: a bug; the claim fails and the partition is claimed afresh`,
    );
    this.#refuseWaitingCalls();
    this.#machine.stopChecking();
    this.#apply(() => this.#machine.fail(violation));
  }

  /** Every record waiting to hear whether it may call is told no. */
  #refuseWaitingCalls(): void {
    for (const answer of this.#callAnswers.values()) answer(false);
    this.#callAnswers.clear();
  }

  /**
   * A second violation, failing the claim: the machine is not driven any more. The lane ends at
   * once (what its records hold of the process's slots, permits and bytes may stay taken: a bug
   * twice over; the error line says so).
   */
  #stop(violation: ProtocolViolation): void {
    if (this.#stopped !== undefined) return;
    this.#stopped = violation;
    this.#ctx.log.error(
      { invariant: violation.invariant, topic: this.claim.topic, partition: this.claim.partition },
      `${violation.message}: a second protocol violation while the claim failed; the lane stops`,
    );
    this.#refuseWaitingCalls();
    this.#local.abort(violation);
    this.#stopSending.abort(violation);
    for (const wake of this.#retireCommitWaiters.splice(0)) wake();
    this.#end({ failure: violation });
  }

  #do(effect: Effect<RecordOutcome>): void {
    const ctx = this.#ctx;
    switch (effect.type) {
      case 'handle':
        return this.#handle(effect.offset);
      case 'acquire-permit':
        return this.#acquirePermit(effect.offset);
      case 'release-permit':
        return ctx.markPermits?.release();
      case 'acquire-slot':
        return this.#acquireSlot(effect.offset);
      case 'release-slot':
        return ctx.slots.release();
      case 'call':
      case 'refuse-call': {
        this.#markedAt.delete(effect.offset);
        const answer = this.#callAnswers.get(effect.offset);
        this.#callAnswers.delete(effect.offset);
        // A claim whose machine broke an invariant lets no call start.
        return answer?.(effect.type === 'call' && this.#broken === undefined);
      }
      case 'mark-opened':
        return ctx.metrics.ledgerMarks.inc();
      case 'arm-commit':
        this.#disarm();
        if (effect.delayMs <= 0) this.#immediate = setImmediate(() => this.#commitDue());
        else this.#timer = setTimeout(() => this.#commitDue(), effect.delayMs);
        return;
      case 'disarm-commit':
        return this.#disarm();
      case 'transaction': {
        // Nor does a transaction begin: the plan of a machine found broken is not written (the
        // claim is told it failed, and ends once its calls under way are done).
        const broken = this.#broken;
        if (broken !== undefined) return void this.#apply(() => this.#machine.transactionFailed(broken, performance.now()));
        return this.#commit(effect.plan);
      }
      case 'committed': {
        for (const outcome of effect.outcomes) reportOutcome(ctx.metrics, ctx.log, outcome, ctx.priority);
        const lag = this.#highWatermark > effect.next ? Number(this.#highWatermark - effect.next) : 0;
        return ctx.metrics.consumerLag.set({ topic: this.claim.topic, partition: String(this.claim.partition) }, lag);
      }
      case 'hold-fetching':
        return ctx.holdFetching(effect.held);
      case 'busy':
        return ctx.onBusy(effect.busy);
      case 'progress':
        return ctx.onProgress();
      case 'stop-waits':
        return this.#stopSending.abort();
      case 'abort-all':
        this.#local.abort(effect.error);
        return this.#stopSending.abort(effect.error);
      case 'cancel-bytes-wait':
        return ctx.bytesInHand.cancel(this.#bytesFreed);
      case 'handover':
        return this.#handOver(effect.offset, effect.mark, effect.outcome);
      case 'ended':
        return this.#end(effect.failure === undefined ? {} : { failure: effect.failure });
    }
  }

  #acquirePermit(offset: bigint): void {
    const m = this.#machine;
    this.#ctx.markPermits?.acquire(this.#waitSignal).then(
      () => {
        this.#markedAt.set(offset, performance.now());
        this.#apply(() => m.permitGranted(offset, Date.now(), performance.now()));
      },
      () => this.#apply(() => m.waitCut(offset)),
    );
  }

  #acquireSlot(offset: bigint): void {
    const ctx = this.#ctx;
    const m = this.#machine;
    // Its mark has committed (ledger on): how long that took since its permit paces the marks ahead.
    const markedAt = this.#markedAt.get(offset);
    if (markedAt !== undefined) {
      this.#markedAt.delete(offset);
      ctx.markPermits?.committed?.(performance.now() - markedAt);
    }
    ctx.slots.acquire(this.#waitSignal).then(
      () => this.#apply(() => m.slotGranted(offset, ctx.standing.maySend())),
      () => this.#apply(() => m.waitCut(offset)),
    );
  }

  /** The claim ended: the lane ends once its last handovers are written, or HANDOVER_WRITE_WAIT_MS has passed (a write tried again while a broker is away goes on). */
  #end(end: LaneEnd): void {
    this.#disarm();
    if (this.#handoverWrites.size === 0) return this.#ended.resolve(end);
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([Promise.allSettled([...this.#handoverWrites]), new Promise((r) => (timer = setTimeout(r, HANDOVER_WRITE_WAIT_MS)))]).then(() => {
      clearTimeout(timer);
      this.#ended.resolve(end);
    });
  }

  #handle(offset: bigint): void {
    const ctx = this.#ctx;
    const record = this.#records.get(offset);
    if (record === undefined) throw new Error(`no record in hand at offset ${offset}`);
    const settle = (): void => {
      this.#records.delete(offset);
      ctx.bytesInHand.free(record.bytes);
    };
    // Sending stopped (retired, failed, forced): waits in the handler (decoding, the gate, holds,
    // the spend cap, the rate limiter) give up too, so the command is given up unsent at once
    // rather than taking a token or holding the lane open. A call under way is not cut by it.
    handleRecord(record.message, record.source, ctx.deps, this.#waitSignal, this.#recordLane).then(
      (outcome) => {
        settle();
        // Not sent: a later checkpoint must not list it (the next owner sends it normally). A call
        // cut while under way keeps its mark: the next owner reports it UNKNOWN.
        this.#applyOrFail(() =>
          outcome.kind === 'abandoned'
            ? this.#machine.abandoned(offset, outcome.maybeSent === true, performance.now())
            : this.#machine.finished(offset, outcome, performance.now()),
        );
      },
      (error: unknown) => {
        // A bug, not a record problem (those become results or dead letters): the claim fails,
        // the offset stays uncommitted, and the record is consumed again by the next claim.
        ctx.log.error(
          { err: error, topic: this.claim.topic, partition: this.claim.partition, offset: record.source.offset },
          'record handling failed unexpectedly',
        );
        settle();
        this.#applyOrFail(() => this.#machine.crashed(offset, error));
      },
    );
  }

  /**
   * `#apply` for an event that arrives on its own (a handler's answer): if the partition protocol
   * breaks one of its rules meanwhile (a machine assertion throws, a bug), the break is reported and
   * the claim fails — the next claim recovers from what was committed — rather than an unhandled
   * rejection that would stop the process with every other partition's work.
   */
  #applyOrFail(event: () => void): void {
    try {
      this.#apply(event);
    } catch (error) {
      this.#ctx.log.error({ err: error, topic: this.claim.topic, partition: this.claim.partition }, 'the partition protocol broke a rule: the claim fails');
      this.#local.abort(error);
      this.#stopSending.abort(error);
      this.#end({ failure: error });
    }
  }

  /**
   * Tells the next owner what became of a marked record (the machine asks once the claim no longer
   * works the partition): written outside any transaction, so a fence that aborts this claim's
   * last transaction does not lose it. Only results travel (a dead letter of a called command is
   * left to the next owner's UNKNOWN). A write that fails is tried again within the grace
   * (handovers.ts); one that never lands in it costs that: the next owner reports UNKNOWN.
   */
  #handOver(offset: bigint, mark: OpenMark, outcome: RecordOutcome | undefined): void {
    const ctx = this.#ctx;
    const handovers = ctx.handovers;
    if (handovers === undefined) return;
    const settlement: HandoverSettlement | undefined =
      outcome === undefined ? { kind: 'withdrawn' } : outcome.kind === 'result' ? { kind: 'result', result: outcome.result } : undefined;
    if (settlement === undefined) return;
    const { topic, partition } = this.claim;
    const written = handovers.write(partition, offset, mark, settlement).then(
      () => ctx.log.debug({ topic, partition, offset: offset.toString(), settlement: settlement.kind }, 'handed over'),
      (error: unknown) =>
        ctx.log.warn(
          { err: error, topic, partition, offset: offset.toString() },
          'could not hand over a marked command: its next owner will report it UNKNOWN',
        ),
    );
    this.#handoverWrites.add(written);
    void written.finally(() => this.#handoverWrites.delete(written));
  }

  readonly #recordLane: RecordLane = {
    // Through #apply: a repeat identified may release a fetch hold (a carrier not taken yet).
    // A lane stopped by a broken invariant answers nothing: the record's handling ends there (its signal is aborted).
    identify: (offset, commandId) => {
      const identity = this.#apply(() => this.#machine.identify(offset, commandId));
      if (identity === undefined) throw this.#stopped ?? new Error(`partition lane ${this.claim.topic}[${this.claim.partition}] stopped`);
      return identity;
    },
    handoverOf: async (mark, signal) => {
      // Without a handover: UNKNOWN, or under IN_DOUBT_POLICY=resend sent again (record-handler.ts).
      const none = this.#ctx.deps.inDoubtPolicy === 'resend' ? 'resent' : 'reported';
      if (this.#lookout === undefined) {
        // Never called (withHangingMarks: answered without a call): handled as new.
        if (mark.uncalled === true) return { kind: 'withdrawn' };
        this.#ctx.metrics.inDoubt.inc({ action: none });
        return undefined;
      }
      const started = performance.now();
      const settlement = await this.#lookout.settlementOf(mark, signal);
      if (settlement === undefined && signal.aborted) return undefined;
      const action = settlement === undefined ? none : settlement.kind === 'result' ? 'handed-over' : settlement.kind;
      this.#ctx.metrics.inDoubt.inc({ action });
      const { topic, partition } = this.claim;
      this.#ctx.log.info(
        { topic, partition, offset: mark.offset.toString(), mark: mark.by, markedAt: mark.at, waitedMs: Math.round(performance.now() - started), action },
        settlement === undefined
          ? 'no handover of an earlier owner’s mark within its grace: reporting the command UNKNOWN'
          : mark.uncalled === true
            ? settlement.kind === 'published'
              ? 'a record a transaction of unknown fate answered without a call has its result in the result topic: not published again'
              : 'a record a transaction of unknown fate answered without a call has no result in the result topic: handled again'
            : settlement.kind === 'published'
              ? 'no handover of an earlier owner’s mark within its grace, and its result is in the result topic: not published again'
              : 'an earlier owner’s mark was handed over',
      );
      return settlement;
    },
    handedOver: (offset) => this.#apply(() => this.#machine.handedOver(offset)),
    sendHooks: (offset) => ({
      // May this record call now? The machine answers once its mark has committed and it holds a slot.
      beforeSend: (_signal: AbortSignal, account?: string) =>
        new Promise<boolean>((resolve) => {
          if (this.#broken !== undefined) return resolve(false);
          this.#callAnswers.set(offset, resolve);
          this.#apply(() => this.#machine.wantSend(offset, this.#ctx.standing.maySend(), Date.now(), performance.now(), account));
        }),
      kept: (reached) => this.#apply(() => this.#machine.kept(offset, reached, performance.now())),
    }),
  };

  #commit(plan: TransactionPlan<RecordOutcome>): void {
    const ctx = this.#ctx;
    const { claim } = this;
    const ledgerRecord = plan.checkpoint === undefined ? undefined : encodeCheckpoint(plan.checkpoint);
    const started = performance.now();
    const previous = this.#lastCommitted;
    const lastPublished = this.#lastPublished;
    const write = { outcomes: plan.outcomes, commitOffset: plan.commitOffset?.toString(), ledgerRecord, readBack: plan.readBack, previous, lastPublished };
    commitTransaction(ctx.producers, this.#target, write, ctx.log, () => ctx.fetchCommittedOffset(claim.topic, claim.partition)).then(
      ({ written, sent }) => {
        const committed = { outcomes: sent, floor: 'floor' in plan.readBack ? plan.readBack.floor : undefined, written };
        if (plan.checkpoint !== undefined) this.#lastCommitted = committed;
        if (sent.some(publishesRecord)) this.#lastPublished = committed;
        ctx.metrics.transactions.inc({ outcome: 'committed' });
        ctx.metrics.commitLatency.observe((performance.now() - started) / 1000);
        this.#apply(() => this.#machine.transactionCommitted(performance.now()));
      },
      (error: unknown) => {
        ctx.metrics.transactions.inc({ outcome: 'failed' });
        ctx.metrics.commitLatency.observe((performance.now() - started) / 1000);
        this.#apply(() => this.#machine.transactionFailed(error, performance.now()));
      },
    );
  }

  #commitDue(): void {
    this.#timer = undefined;
    this.#immediate = undefined;
    this.#apply(() => this.#machine.commitDue(performance.now()));
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
  }
}
