import type { PartitionClaim } from '../../src/worker/protocol/claim.ts';
import type { Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
import { mayRepublishLost, readBackVerdict, readsBack } from '../../src/worker/protocol/transaction-plan.ts';
import { PartitionMachine, type Effect, type TransactionPlan } from '../../src/worker/protocol/partition-machine.ts';
import type { ClaimState } from '../../src/worker/protocol/table.ts';
import type { Coverage, Method, Observed } from './coverage.ts';
import { Handler, type HandlerLane } from './handler.ts';
import type { Txn, TxnOutcome } from './kafka.ts';
import { TIMING, Violation, type SimOutcome } from './model.ts';
import type { SendPools } from './resources.ts';
import type { Owner } from './scheduler.ts';
import type { World } from './world.ts';
import { bookFor, fencedIsFinalIn, readBackIn, recordMovesFor } from './variants.ts';

/** What a lane needs of its process. */
export interface LaneHost {
  readonly id: number;
  readonly owner: Owner;
  readonly pools: SendPools;
  /** The group generation the process is in. */
  readonly generation: number;
  /** PartitionOwnership.isCurrent: not left, not out of the group, this generation, not lost. */
  isCurrent(generation: number, partition: number): boolean;
  /** Between REBALANCING and the new assignment: no producer is initialised. */
  readonly isRebalancing: boolean;
  leaseHolds(): boolean;
  isLost(partition: number): boolean;
  laneEnded(lane: Lane, failure: unknown): void;
  /** The lane cannot take records until the lease holds again: fetch it then. */
  awaitLease(lane: Lane): void;
}

/** Why a transaction failed, as the machine is told (not an Error: a stack trace per failure is slow). */
export class TxnError {
  readonly fenced: boolean;
  readonly message: string;
  constructor(fenced: boolean, message: string) {
    this.fenced = fenced;
    this.message = message;
  }
  toString(): string {
    return this.message;
  }
}

const BIG: readonly bigint[] = Array.from({ length: 64 }, (_, i) => BigInt(i));

/**
 * The driver of one PartitionMachine (one claim of one partition by one process): it feeds the
 * machine its events — fetched records, the handler's reports, grants, commit timers, the broker's
 * answers — and carries out every effect it drains.
 */
export class Lane implements HandlerLane {
  readonly world: World;
  readonly partition: number;
  readonly process: number;
  readonly owner: Owner;
  /** The claim's generation: advanced when a new generation keeps the partition here. */
  generation: number;
  /** Virtual time of the claim (a lease lapse since then means it cannot be kept). */
  readonly claimedAt: number;
  /** When the claim began, before its steps (PartitionOwnership's claimedAt: the keep decision's). */
  readonly claimStartedAt: number;
  readonly machine: PartitionMachine<SimOutcome>;
  /** The producer epoch this claim fenced with. */
  epoch: number;
  ended = false;
  aborted = false;
  readonly #host: LaneHost;
  /** The process's incarnation this lane belongs to (a restarted process does not hear of its transactions). */
  readonly #incarnation: number;
  /** When each record marking now got its mark permit (virtual time), until its mark commits. */
  readonly #markedAt = new Map<number, number>();
  readonly #handler: Handler;
  #cursor: number;
  #held = false;
  #fetching = false;
  #commitArm = 0;
  #txn: Txn | undefined;
  #refences = 0;
  /** Retries of the transaction under way (partition-transaction.ts retries a failed one). */
  #retries = 0;
  /** Offsets taken and not yet out of the machine's book (for coverage). */
  #taken: number[] = [];
  /**
   * Outcomes of marked records (`outcome-kept`): each must be committed by a transaction applied
   * at the broker, or handed over, before the claim ends (its process alive); else the next owner
   * finds the mark open and reports a command this owner had answered UNKNOWN.
   */
  readonly #owed = new Set<number>();
  /** Handover writes sent and not landed (or lost) yet; the lane's end waits for them, as PartitionLane's does. */
  #handoversUnderWay = 0;
  #endWaiting: (() => void) | undefined;

  constructor(world: World, host: LaneHost, claim: PartitionClaim, epoch: number, fetchFrom: number, claimStartedAt: number) {
    this.world = world;
    this.#host = host;
    this.partition = claim.partition;
    this.process = host.id;
    this.owner = host.owner;
    this.#incarnation = host.owner.incarnation;
    this.generation = claim.generation;
    this.claimedAt = world.now;
    this.claimStartedAt = claimStartedAt;
    this.epoch = epoch;
    this.#cursor = fetchFrom;
    this.#handler = new Handler(this);
    const { settings } = world;
    this.machine = new PartitionMachine<SimOutcome>({
      claim,
      ledger: settings.ledger,
      markPermits: settings.markPermits,
      maxRunAhead: settings.lowRunAheadProcess === host.id ? 1 : settings.maxRunAhead,
      commitIntervalMs: settings.commitIntervalMs,
      markLingerMs: settings.markLingerMs,
      handovers: settings.ledger,
      // Known-bad variants wrap what the machine is given (variants.ts); the shipped defaults otherwise.
      recordMoves: recordMovesFor(world.variant),
      book: bookFor<SimOutcome>(world.variant),
    });
  }

  #handoverLanded(): void {
    this.#handoversUnderWay -= 1;
    if (this.#handoversUnderWay > 0 || this.#endWaiting === undefined) return;
    const end = this.#endWaiting;
    this.#endWaiting = undefined;
    end();
  }

  big(offset: number): bigint {
    return BIG[offset] ?? BigInt(offset);
  }

  /**
   * Sends (and starts a producer) only while the process's lease holds, in its current generation,
   * for a partition it has not lost, and not once it has left its group or while its consumer
   * restarts (PartitionOwnership.isCurrent).
   */
  leaseHolds(): boolean {
    const host = this.#host;
    return host.leaseHolds() && host.isCurrent(this.generation, this.partition);
  }

  /** One call into the machine, then its effects. A refused move is a violation. */
  act<T>(method: Method, offset: number, call: (machine: PartitionMachine<SimOutcome>) => T): T {
    const coverage = this.world.coverage;
    if (coverage !== undefined && method === 'take') this.#taken.push(offset);
    const before = coverage === undefined ? undefined : this.#snapshot(method, offset);
    const claimBefore = this.machine.state;
    let value: T;
    try {
      value = call(this.machine);
    } catch (error) {
      if (error instanceof Violation) throw error;
      const message = error instanceof Error ? error.message : String(error);
      throw new Violation('machine-threw', `P${this.process} p${this.partition} gen ${this.generation}: ${method}(${offset}): ${message}`);
    }
    // A marked record's outcome: owed until committed or handed over.
    const marked = method === 'finished' && this.machine.claim.open.has(this.big(offset));
    const effects = this.machine.drain();
    if (marked) this.#owed.add(offset);
    if (coverage !== undefined && before !== undefined) this.#observe(coverage, method, offset, before, claimBefore, effects);
    for (const effect of effects) this.#do(effect);
    this.#misdrive(method, offset, claimBefore);
    return value;
  }

  /**
   * Known-bad variants of the driver (variants.ts), made here around the shipped machine:
   * `send-before-mark-commits` requests a record's call as soon as its mark opens;
   * `handover-withdraws-calls` hands over, when the claim stops working the partition, the marks
   * of the calls under way as withdrawn.
   */
  #misdrive(method: Method, offset: number, claimBefore: ClaimState): void {
    const { variant } = this.world;
    if (
      variant === 'send-before-mark-commits' &&
      (method === 'wantSend' || method === 'permitGranted') &&
      this.machine.recordState(this.big(offset)) === 'marking'
    )
      this.#handler.callEarly(offset);
    const stopsWorking = (claimBefore === 'active' || claimBefore === 'holding') && (this.machine.state === 'retiring' || this.machine.state === 'failed');
    if (variant === 'handover-withdraws-calls' && stopsWorking)
      for (const calling of this.#handler.offsets()) {
        const mark = this.machine.claim.open.get(this.big(calling));
        if (mark !== undefined && this.machine.recordState(this.big(calling)) === 'calling')
          this.#do({ type: 'handover', offset: this.big(calling), mark, outcome: undefined });
      }
  }

  /**
   * The new generation keeps the partition here: the claim goes on in it (no fence, no read), held
   * records call, and fetching starts again where kafkajs would, at the group's committed offset
   * (read as it may be, stale), skipping what the claim took already.
   */
  kept(generation: number): void {
    const { world } = this;
    this.generation = generation;
    this.#cursor = Math.min(this.#cursor, world.kafka.readGroupOffset(this.partition));
    if (world.tracing) world.trace(`P${this.process} p${this.partition} kept in generation ${generation} (fetch from ${this.#cursor})`);
    this.act('keep', -1, (m) => m.keep(this.leaseHolds(), world.now));
    this.fetchSoon();
  }

  fetchSoon(): void {
    if (this.#fetching) return;
    this.#fetching = true;
    this.world.clock.at(this.world.prng.int(0, 5), this.owner, () => this.#fetch());
  }

  #fetch(): void {
    this.#fetching = false;
    if (this.ended || !this.machine.accepting || this.#held) return;
    const { world } = this;
    const records = world.kafka.records(this.partition);
    let budget = world.prng.int(1, 4);
    while (this.#cursor < records.length && budget > 0) {
      const record = records[this.#cursor];
      if (record === undefined) break;
      const offset = record.offset;
      const verdict = this.act('offer', offset, (m) => m.offer(this.big(offset), this.leaseHolds(), world.now));
      if (verdict === 'full') return;
      if (verdict === 'closed') {
        if (this.machine.accepting) this.#host.awaitLease(this);
        return;
      }
      this.#cursor += 1;
      if (verdict === 'skip') continue;
      budget -= 1;
      if (world.tracing) world.trace(`P${this.process} p${this.partition}@${offset} taken (${record.commandId}, ${record.key})`);
      this.act('take', offset, (m) => m.take(this.big(offset), record.key));
    }
    if (this.#cursor < records.length) this.fetchSoon();
  }

  #do(effect: Effect<SimOutcome>): void {
    const host = this.#host;
    const { world } = this;
    switch (effect.type) {
      case 'handle':
        return this.#handler.handle(Number(effect.offset));
      case 'acquire-permit':
        // The known-bad mark-without-permit (variants.ts): every permit granted at once, outside the process's pool.
        if (world.variant === 'mark-without-permit') return this.#grantUnpooled(Number(effect.offset));
        return this.#acquire('permitGranted', Number(effect.offset));
      case 'acquire-slot': {
        // Its mark has committed (ledger on): as partition-lane.ts, the time since its permit paces the marks ahead.
        const markedAt = this.#markedAt.get(Number(effect.offset));
        if (markedAt !== undefined) {
          this.#markedAt.delete(Number(effect.offset));
          host.pools.markCommitted(world.now - markedAt);
        }
        return this.#acquire('slotGranted', Number(effect.offset));
      }
      case 'release-permit':
      case 'release-slot':
        if (effect.type === 'release-permit' && world.variant === 'mark-without-permit') return;
        if (world.tracing) world.trace(`P${this.process} p${this.partition} ${effect.type}`);
        return effect.type === 'release-slot' ? host.pools.releaseSlot() : host.pools.releasePermit();
      case 'call':
        return this.#handler.call(Number(effect.offset));
      case 'refuse-call':
        return this.#handler.refused(Number(effect.offset));
      case 'arm-commit': {
        const arm = ++this.#commitArm;
        world.clock.at(effect.delayMs, this.owner, () => {
          if (arm === this.#commitArm && !this.ended) this.act('commitDue', -1, (m) => m.commitDue(world.now));
        });
        return;
      }
      case 'disarm-commit':
        this.#commitArm += 1;
        return;
      case 'transaction':
        return this.#begin(effect.plan);
      case 'hold-fetching':
        this.#held = effect.held;
        if (!effect.held) this.fetchSoon();
        return;
      case 'stop-waits':
        this.#handler.stopWaits();
        // The driver cuts its pending acquisitions; the machine hears of each (a no-op for those it refused already).
        for (const offset of [...host.pools.permits.cancel(this), ...host.pools.slots.cancel(this)])
          world.clock.at(world.prng.int(0, 2), this.owner, () => this.act('waitCut', offset, (m) => m.waitCut(this.big(offset))));
        return;
      case 'abort-all':
        this.aborted = true;
        return this.#handler.abortAll();
      case 'handover': {
        // A plain produce to the ledger partition: it lands a moment later, or (while faults last)
        // not at all; a crashed process's writes under way are lost with it.
        const by = effect.mark.by;
        if (effect.outcome !== undefined) this.#owed.delete(Number(effect.offset));
        // A mark without a name (one kept in doubt from a transaction of unknown fate: withHangingMarks)
        // is never handed over (handovers.ts writes nothing): the next owner finds it in doubt again.
        if (by === undefined) return;
        const handover = { offset: Number(effect.offset), by, outcome: effect.outcome ?? ('withdrawn' as const) };
        this.#handoversUnderWay += 1;
        world.clock.at(
          world.prng.int(1, 15),
          this.owner,
          () => {
            this.#handoverLanded();
            if (world.faulty && world.prng.chance(0.1)) {
              if (world.tracing) world.trace(`P${this.process} p${this.partition}@${handover.offset} handover lost`);
              // A handover that never arrives leaves a mark the next owner reports UNKNOWN, of a
              // command perhaps never requested (withdrawn, or its call surely did not arrive): as
              // after a death, unknown-is-bounded allows one for it.
              world.checks.died(1, `P${this.process} p${this.partition}@${handover.offset} handover lost`);
              return;
            }
            if (world.tracing)
              world.trace(
                `P${this.process} p${this.partition}@${handover.offset} hands over ${by}: ${handover.outcome === 'withdrawn' ? 'withdrawn' : handover.outcome.kind}`,
              );
            world.kafka.writeHandover(this.partition, handover);
          },
          this.#incarnation,
        );
        return;
      }
      case 'ended':
        this.ended = true;
        this.#commitArm += 1;
        if (this.#owed.size > 0)
          throw new Violation(
            'outcome-kept',
            `P${this.process} p${this.partition} gen ${this.generation}: the claim ended without committing or handing over the outcomes of marked records ${[...this.#owed].join(', ')}`,
          );
        if (world.tracing)
          world.trace(
            `P${this.process} p${this.partition} gen ${this.generation} lane ended${effect.failure === undefined ? '' : ` (${String(effect.failure)})`}`,
          );
        // PartitionLane: the lane's end waits for its handover writes under way (a process shutting
        // down would otherwise stop before they land, and its marks come back UNKNOWN: seed 8002706).
        if (this.#handoversUnderWay > 0) {
          this.#endWaiting = () => host.laneEnded(this, effect.failure);
          return;
        }
        return host.laneEnded(this, effect.failure);
      default:
        return;
    }
  }

  #grantUnpooled(offset: number): void {
    const { world } = this;
    world.clock.at(world.prng.int(0, 2), this.owner, () =>
      this.act('permitGranted', offset, (m) => m.permitGranted(this.big(offset), world.now + TIMING.epochMs, world.now)),
    );
  }

  /** A grant comes soon, now and then late (the wait may have been cut meanwhile: the machine gives it back). */
  #acquire(method: 'permitGranted' | 'slotGranted', offset: number): void {
    const { world } = this;
    const pools = this.#host.pools;
    const acquire = method === 'permitGranted' ? pools.acquirePermit.bind(pools) : pools.acquireSlot.bind(pools);
    acquire(this, offset, () => {
      const delay = world.prng.chance(0.1) ? world.prng.int(10, 60) : world.prng.int(0, 2);
      world.clock.at(delay, this.owner, () => {
        if (world.tracing) world.trace(`P${this.process} p${this.partition}@${offset} ${method}`);
        if (method === 'permitGranted') {
          this.#markedAt.set(offset, world.now);
          this.act(method, offset, (m) => m.permitGranted(this.big(offset), world.now + TIMING.epochMs, world.now));
        } else this.act(method, offset, (m) => m.slotGranted(this.big(offset), this.leaseHolds()));
      });
    });
  }

  #begin(plan: TransactionPlan<SimOutcome>, retry = false): void {
    const { world } = this;
    if (!retry) this.#retries = 0;
    const txn = world.kafka.begin(this.partition, this.epoch, this.process, plan);
    this.#txn = txn;
    if (world.tracing) world.trace(`P${this.process} p${this.partition} txn#${txn.id} epoch ${txn.epoch}: ${describe(plan)}`);
    // The broker's side happens whatever becomes of the process (frozen or dead, its commit request is out).
    world.clock.at(world.prng.int(1, 15), undefined, () => {
      const outcome = world.kafka.settle(txn, world.faulty);
      if (world.tracing) world.trace(`broker: p${txn.partition} txn#${txn.id} ${outcome}`);
      world.clock.at(world.prng.int(0, 3), this.owner, () => this.#settled(txn, outcome), this.#incarnation);
    });
  }

  #settled(txn: Txn, outcome: TxnOutcome): void {
    const { world } = this;
    if (this.#txn !== txn) return;
    this.#txn = undefined;
    // Applied at the broker (an ambiguous one too): its outcomes are committed, whatever the claim hears.
    if (outcome === 'committed' || outcome === 'ambiguous') this.#paid(txn.plan);
    if (outcome === 'committed') {
      this.#committed(txn);
      return this.act('transactionCommitted', -1, (m) => m.transactionCommitted(world.now));
    }
    if (outcome === 'fenced' && !fencedIsFinalIn(world.variant) && this.#refences < 3) {
      // The known-bad variant: take the producer back and send the same transaction again.
      this.#refences += 1;
      this.epoch = world.kafka.fence(this.partition);
      if (world.tracing) world.trace(`P${this.process} p${this.partition} fenced: fences back (epoch ${this.epoch}) and retries`);
      return this.#begin(txn.plan);
    }
    if (outcome !== 'fenced' && this.#retries < COMMIT_ATTEMPTS - 1 && this.#mayReinitialise()) return this.#retry(txn);
    this.act('transactionFailed', -1, (m) => m.transactionFailed(new TxnError(outcome === 'fenced', `transaction ${outcome}`), world.now));
  }

  /**
   * What partition-transaction.ts does with a failed (not fenced) transaction while the lease
   * holds: after a pause, initialise the producer again (a fence of its own epoch, which ends the
   * failed transaction either way), read back whether it committed (transaction-plan.ts:
   * readBackFor) and, if not, send it again; at most COMMIT_ATTEMPTS in all, none while the group
   * rebalances (an attempt then only waits). The broker's reads after the fence are exact: the
   * transaction is decided by then.
   */
  /** The lease check before a producer is initialised again; the known-bad variant keeps one only by its lease and generation (leaving or not). */
  #mayReinitialise(): boolean {
    if (this.world.variant !== 'reinitialise-anytime') return this.leaseHolds();
    const host = this.#host;
    return host.leaseHolds() && host.generation === this.generation && !host.isLost(this.partition);
  }

  #retry(txn: Txn): void {
    const { world } = this;
    this.#retries += 1;
    this.#txn = txn;
    world.clock.at(world.prng.int(20, 200), this.owner, () => {
      if (this.#txn !== txn) return;
      if (!this.#mayReinitialise()) {
        this.#txn = undefined;
        return this.act('transactionFailed', -1, (m) => m.transactionFailed(new TxnError(false, 'lease lost before the retry'), world.now));
      }
      this.#txn = undefined;
      if (this.#host.isRebalancing && this.world.variant !== 'reinitialise-anytime')
        return this.act('transactionFailed', -1, (m) =>
          m.transactionFailed(new TxnError(false, 'not initialising the producer again while the group rebalances'), world.now),
        );
      this.epoch = world.kafka.fence(this.partition);
      const { plan } = txn;
      const floor = 'floor' in plan.readBack ? plan.readBack.floor : undefined;
      const readBack = readBackIn(world.variant, plan.commitOffset, plan.outcomes.some(publishesRecord), plan.checkpoint, floor);
      // The read itself can fail (a leader moving, the coordinator loading): unknown is not "not
      // committed". The attempt fails and the next one asks again; the known-bad variant sends again.
      if (readsBack(readBack) && world.faulty && world.prng.chance(0.2) && world.variant !== 'resend-when-unread') {
        if (world.tracing) world.trace(`P${this.process} p${this.partition} txn#${txn.id} retried (epoch ${this.epoch}): the read-back failed`);
        if (this.#retries < COMMIT_ATTEMPTS - 1) return this.#retry(txn);
        return this.act('transactionFailed', -1, (m) => m.transactionFailed(new TxnError(false, 'the read-back failed at every attempt'), world.now));
      }
      if (readBack.by !== 'nothing' && world.faulty && world.variant === 'resend-when-unread' && world.prng.chance(0.2)) {
        if (world.tracing) world.trace(`P${this.process} p${this.partition} txn#${txn.id} retried (epoch ${this.epoch}): the read-back failed; sent again`);
        return this.#begin(plan, true);
      }
      const verdict = readsBack(readBack)
        ? readBackVerdict(readBack, {
            // As the admin client reads it (stale now and then without KIP-447); the ledger's checkpoint is read to its end, exact.
            committedOffset: BigInt(world.kafka.readGroupOffset(this.partition)),
            checkpoint: world.kafka.checkpoint(this.partition),
          })
        : 'resend';
      if (world.tracing)
        world.trace(
          `P${this.process} p${this.partition} txn#${txn.id} retried (epoch ${this.epoch}): read back by ${readBack.by}: ${verdict === 'resend' ? 'send again' : verdict}`,
        );
      if (verdict === 'committed') {
        this.#committed(txn);
        return this.act('transactionCommitted', -1, (m) => m.transactionCommitted(world.now));
      }
      // As partition-transaction.ts (withLostRepublished): the last committed transaction's outcomes
      // again with this one, when nothing older was lost; else TransactionLostError ends the claim.
      if (verdict === 'lost') {
        const last = this.#lastCommitted;
        if (last === undefined || !mayRepublishLost(last.floor, world.kafka.checkpoint(this.partition)))
          return this.act('transactionFailed', -1, (m) => m.transactionFailed(new TxnError(false, 'transactions this claim committed were lost'), world.now));
        // What of it Kafka aborted (its results' markers lost too), read back as partition-transaction.ts's abortedOf does.
        const again = world.kafka.resultsAborted(last.txn) ? last.outcomes : [];
        if (world.tracing) world.trace(`P${this.process} p${this.partition} publishes again ${again.length} outcomes of its lost txn#${last.txn}`);
        return this.#begin({ ...plan, outcomes: [...again, ...plan.outcomes] }, true);
      }
      this.#begin(plan, true);
    });
  }

  /** As partition-lane.ts keeps it: the last transaction committed with a checkpoint (its outcomes and its read-back's floor). */
  #lastCommitted: { readonly txn: number; readonly outcomes: readonly SimOutcome[]; readonly floor: Checkpoint | undefined } | undefined;

  #committed({ id, plan }: Txn): void {
    if (plan.checkpoint !== undefined)
      this.#lastCommitted = { txn: id, outcomes: plan.outcomes, floor: 'floor' in plan.readBack ? plan.readBack.floor : undefined };
  }

  /** A transaction applied at the broker: the outcomes it carried are committed. */
  #paid(plan: TransactionPlan<SimOutcome>): void {
    for (const outcome of plan.outcomes) this.#owed.delete(outcome.offset);
  }

  #snapshot(method: Method, offset: number): Observed[] {
    return this.#taken.map((o) => (method === 'take' && o === offset ? 'queued' : this.machine.recordState(this.big(o))));
  }

  #observe(
    coverage: Coverage,
    method: Method,
    offset: number,
    before: readonly Observed[],
    claimBefore: ClaimState,
    effects: readonly Effect<SimOutcome>[],
  ): void {
    const kept: number[] = [];
    for (const [i, o] of this.#taken.entries()) {
      const after: Observed = this.machine.recordState(this.big(o)) ?? 'removed';
      const big = this.big(o);
      const called = effects.some((e) => e.type === 'call' && e.offset === big);
      const refused = effects.some((e) => e.type === 'refuse-call' && e.offset === big);
      coverage.record(method, o === offset, before[i], after, { called, refused });
      if (after !== 'removed') kept.push(o);
    }
    this.#taken = kept;
    coverage.claim(method, claimBefore, this.machine.state);
  }
}

function describe(plan: TransactionPlan<SimOutcome>): string {
  const parts = [`marks [${plan.marks.join(',')}]`, `outcomes [${plan.outcomes.map((o) => `${o.offset}:${o.kind}`).join(',')}]`];
  if (plan.commitOffset !== undefined) parts.push(`offset ${plan.commitOffset}`);
  if (plan.checkpoint !== undefined) {
    const done = plan.checkpoint.done ?? [];
    parts.push(
      `checkpoint next ${plan.checkpoint.next} open [${plan.checkpoint.open.map((m) => m.offset).join(',')}]${done.length > 0 ? ` done [${done.map((d) => d.offset).join(',')}]` : ''}`,
    );
  }
  if (plan.closing) parts.push('closing');
  return parts.join(' ');
}

/** partition-transaction.ts's attempts at one transaction. */
const COMMIT_ATTEMPTS = 6;

/** Whether an outcome writes a record (a result or a dead letter): a repeat writes none. */
function publishesRecord(outcome: SimOutcome): boolean {
  return outcome.kind !== 'duplicate';
}
