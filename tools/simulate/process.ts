import { recoveryPlan, withHangingMarks, type Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
import { afterFailure, buildClaim } from '../../src/worker/protocol/claim.ts';
import { OwnershipMachine, type HeldClaim, type Lease } from '../../src/worker/protocol/ownership.ts';
import type { ClaimStep } from '../../src/worker/protocol/table.ts';
import { Lane, TxnError, type LaneHost } from './lane.ts';
import { TIMING } from './model.ts';
import { SendPools } from './resources.ts';
import type { Owner, SimEvent } from './scheduler.ts';
import type { OwnerDeath, World } from './world.ts';
import { claimStepsIn, isCurrentIn, keptIn, mayFenceIn } from './variants.ts';

/** A claim of one partition under way: its steps (claimSteps order) and what it read. */
interface Attempt {
  readonly partition: number;
  readonly generation: number;
  /** When the claim began (PartitionOwnership's claimedAt: a claim made before the lease's last lapse is never kept). */
  readonly startedAt: number;
  readonly steps: readonly ClaimStep[];
  next: number;
  /** Waits for this process's earlier lane of the partition to end (handover). */
  waiting: boolean;
  epoch: number;
  groupOffset: number;
  checkpoint: Checkpoint | undefined;
}

/**
 * The world's side of a process's lease: its heartbeats flow (`live`, the lease holds), or stopped
 * at `confirmedAt` (the lease runs from then: TIMING.leaseMs). The group reads `confirmedAt` for
 * the member's session. Given to the shipped OwnershipMachine as its Lease.
 */
class SimLease implements Lease {
  readonly #world: World;
  readonly #proc: { readonly alive: boolean };
  live = true;
  confirmedAt = 0;
  constructor(world: World, proc: { readonly alive: boolean }) {
    this.#world = world;
    this.#proc = proc;
  }
  holds(): boolean {
    return this.#proc.alive && (this.live || this.#world.now - this.confirmedAt < TIMING.leaseMs);
  }
  confirmed(): void {
    this.live = true;
    this.confirmedAt = this.#world.now;
  }
  /** Heartbeats stop; the last confirmed one was at `at`. */
  stop(at: number): void {
    this.live = false;
    this.confirmedAt = at;
  }
}

/**
 * A worker process: the shipped OwnershipMachine (membership, generation, lease lapses, keeping,
 * lost partitions) driven as PartitionOwnership drives it, the group's generation it was assigned
 * in, its lease, its process-wide pools, its lanes (current and retiring) and the claims under
 * way. It can crash (everything in memory gone), freeze (its events wait) and restart.
 */
export class Proc implements Owner, LaneHost {
  readonly id: number;
  readonly #world: World;
  alive = true;
  incarnation = 0;
  frozen = false;
  /** Counts freezes, so a resume or an expiry belongs to one of them. */
  freezes = 0;
  readonly deferred: SimEvent[] = [];
  /** The group's generation this process was last assigned in (the group's heartbeat check; `next` at a join). */
  groupGeneration = 0;
  assigned = new Set<number>();
  readonly #lease: SimLease;
  /** The shipped ownership decisions; a new one at each restart (nothing in memory survives). */
  machine: OwnershipMachine;
  pools: SendPools;
  lanes = new Set<Lane>();
  /** Its consumer is down (crashed, not yet started again): it heartbeats no more and is given no assignment. */
  consumerDown = false;
  onStopped: (() => void) | undefined;
  /** Set by the faults: stalls this process past its session right after it sent a fence, which lands (`land`) when it resumes. */
  lateFence: ((land: () => void) => void) | undefined;
  /** Set by the runner: whether a heartbeat of this process succeeds now (the group is stable in its generation). */
  groupConfirms: (() => boolean) | undefined;
  /** A heartbeat loop runs while a partition lost to fencing waits for confirmations (of this incarnation and generation). */
  #watchingLost: string | undefined;
  #attempts = new Map<number, Attempt>();
  #awaitingLease = new Set<Lane>();
  #claimsAwaitingLease = new Set<number>();

  constructor(world: World, id: number) {
    this.#world = world;
    this.id = id;
    this.pools = sendPools(world);
    this.#lease = new SimLease(world, this);
    this.machine = new OwnershipMachine(this.#lease, () => world.now);
  }

  /** The ownership machine's generation (claims and lanes carry it). */
  get generation(): number {
    return this.machine.generation;
  }
  get confirmedAt(): number {
    return this.#lease.confirmedAt;
  }
  /** Shutting down: takes no partitions; once its lanes have ended it leaves the group (`onStopped`). */
  get leaving(): boolean {
    return this.machine.isStopping;
  }
  /** Left its group while its lanes finish (a graceful stop with the ledger on). */
  get hasLeft(): boolean {
    return this.machine.state === 'left';
  }
  /** Its consumer crashed (restarting in place): no claim of it is current or fences until its next assignment. */
  get outOfGroup(): boolean {
    return this.machine.state === 'out-of-group';
  }

  get owner(): Owner {
    return this;
  }

  /** What this process holds marked and not calling now, and what it may, for unknown-is-bounded if it dies now. */
  death(): OwnerDeath {
    let calling = 0;
    let markedWaiting = 0;
    for (const lane of this.lanes) {
      calling += lane.machine.calling;
      markedWaiting += lane.machine.markedWaiting;
    }
    return { markedWaiting, mayWait: this.pools.allowance(calling), allowance: this.pools.pacing.ahead + this.pools.slots.capacity };
  }

  /** Between REBALANCING and the new assignment (PartitionOwnership.isRebalancing). */
  get isRebalancing(): boolean {
    return this.machine.isRebalancing;
  }

  leaseHolds(): boolean {
    return this.machine.leaseHolds();
  }

  isLost(partition: number): boolean {
    return this.machine.isLost(partition);
  }

  /** PartitionOwnership.isCurrent: a claim of `generation` may send and start a producer. */
  isCurrent(generation: number, partition: number): boolean {
    return isCurrentIn(this.#world.variant, this.machine, generation, partition);
  }

  /** A heartbeat (or a join) succeeded: the lease holds again; what waited for it goes on. */
  confirm(): void {
    this.machine.confirm();
    this.#leaseConfirmed();
  }

  #leaseConfirmed(): void {
    const lanes = [...this.#awaitingLease];
    this.#awaitingLease.clear();
    for (const lane of lanes) lane.fetchSoon();
    const claims = [...this.#claimsAwaitingLease];
    this.#claimsAwaitingLease.clear();
    for (const partition of claims) if (this.assigned.has(partition) && !this.#attempts.has(partition)) this.startClaim(partition);
  }

  awaitLease(lane: Lane): void {
    this.#awaitingLease.add(lane);
  }

  /** The group started rebalancing (kafkajs's REBALANCING): every active lane holds (no call starts) until the new assignment. */
  rebalancing(): void {
    if (!this.alive) return;
    // No claim fences until the new assignment: it may give the partition to another member, which
    // a late fence from here would take back (and lose it for the whole generation).
    this.machine.rebalance();
    this.#attempts = new Map();
    this.#claimsAwaitingLease = new Set();
    for (const lane of this.lanes) if (!lane.ended) lane.act('hold', -1, (m) => m.hold());
  }

  /**
   * A new generation. A partition assigned again keeps its lane when nothing can have taken it in
   * between: this is the very next generation (none was missed), the lane is holding in the one
   * before, and the lease has not lapsed since the claim (partition-ownership.ts's `keepable`).
   * Every other lane retires; the other assigned partitions are claimed afresh.
   */
  rebalanced(generation: number, partitions: readonly number[]): void {
    const world = this.#world;
    if (this.leaving) partitions = [];
    // The very next generation of the group for this member (group-membership.ts); a consumer that
    // restarted in place joined as a new member, which the machine knows (out of the group).
    const next = generation === this.groupGeneration + 1;
    this.groupGeneration = generation;
    const holding = [...this.lanes].filter((lane) => !lane.ended && lane.machine.state === 'holding');
    const { keepable } = this.machine.join(
      partitions,
      next,
      holding.map((lane): HeldClaim => ({ partition: lane.partition, generation: lane.generation, claimedAt: lane.claimStartedAt })),
    );
    const kept = keptIn(world.variant, holding, keepable, partitions);
    this.assigned = new Set(partitions);
    this.#attempts = new Map();
    this.#claimsAwaitingLease = new Set();
    this.#leaseConfirmed();
    for (const lane of [...this.lanes]) {
      // Moved (another member has it now, and fences it at once), or not kept but assigned here again.
      if (!lane.ended && !kept.includes(lane)) lane.act('retire', -1, (m) => m.retire(!partitions.includes(lane.partition), world.now));
    }
    if (world.tracing)
      world.trace(
        `P${this.id} joins generation ${generation} (its ${this.generation}) with [${partitions.join(',')}]${kept.length > 0 ? `, keeps [${kept.map((l) => l.partition).join(',')}]` : ''}`,
      );
    for (const lane of kept) lane.kept(this.generation);
    for (const partition of partitions) if (!kept.some((l) => l.partition === partition)) this.startClaim(partition);
  }

  startClaim(partition: number): void {
    const world = this.#world;
    if (!mayFenceIn(world.variant, this.machine, this.generation)) return;
    const attempt: Attempt = {
      partition,
      generation: this.generation,
      startedAt: world.now,
      steps: claimStepsIn(world.variant),
      next: 0,
      waiting: false,
      epoch: -1,
      groupOffset: 0,
      checkpoint: undefined,
    };
    this.#attempts.set(partition, attempt);
    // Fencing takes the partition from whoever holds it: only with the lease (else: when it holds again).
    if (!this.leaseHolds()) {
      this.#attempts.delete(partition);
      this.#claimsAwaitingLease.add(partition);
      return;
    }
    this.#later(attempt);
  }

  #later(attempt: Attempt): void {
    const world = this.#world;
    world.clock.at(world.prng.int(1, 20), this, () => this.#step(attempt));
  }

  #step(attempt: Attempt): void {
    const world = this.#world;
    const { partition } = attempt;
    if (this.#attempts.get(partition) !== attempt || attempt.generation !== this.generation || !this.assigned.has(partition) || this.isLost(partition)) return;
    const step = attempt.steps[attempt.next];
    if (step === undefined) return this.#open(attempt);
    if (step === 'handover') {
      for (const lane of this.lanes)
        if (lane.partition === partition) {
          attempt.waiting = true;
          return;
        }
    } else if (step === 'fence') {
      if (!mayFenceIn(world.variant, this.machine, attempt.generation)) return void this.#attempts.delete(partition);
      if (!this.leaseHolds()) {
        this.#attempts.delete(partition);
        this.#claimsAwaitingLease.add(partition);
        return;
      }
      if (world.settings.lateFences && world.faulty && this.lateFence !== undefined && world.prng.chance(TIMING.lateFenceChance)) {
        if (world.tracing) world.trace(`P${this.id} sends the fence of p${partition}, and stalls before it lands`);
        const { incarnation } = this;
        this.lateFence(() => {
          // The request was out: it lands whatever became of this claim meanwhile.
          attempt.epoch = world.kafka.fence(partition);
          if (world.tracing) world.trace(`P${this.id}'s late fence of p${partition} lands: epoch ${attempt.epoch}`);
          if (this.alive && this.incarnation === incarnation) {
            attempt.next += 1;
            this.#later(attempt);
          }
        });
        return;
      }
      attempt.epoch = world.kafka.fence(partition);
      if (world.tracing) world.trace(`P${this.id} fences p${partition}: epoch ${attempt.epoch}`);
    } else {
      attempt.groupOffset = world.kafka.readGroupOffset(partition);
      const hanging = world.settings.ledger ? world.kafka.hangingCheckpoints(partition) : [];
      // After the fence, a transaction open in the ledger partition is a hanging one (its markers
      // lost): the claim reads its checkpoints, ends it, and goes on as the shipped read does
      // (ledger-store.ts readToEnd, HangingTransaction).
      attempt.checkpoint = world.settings.ledger ? world.kafka.checkpoint(partition) : undefined;
      const unsure = world.settings.ledger ? [...world.kafka.abortedUnsure(partition), ...hanging] : [];
      if (unsure.length > 0) {
        attempt.checkpoint = (world.options.keepHanging ?? withHangingMarks)(attempt.checkpoint, unsure);
        world.kafka.settleLedger(partition, attempt.checkpoint);
        if (world.tracing)
          world.trace(
            `P${this.id} keeps the marks of ${unsure.length} checkpoint(s) of p${partition}'s ledger of unknown fate${hanging.length > 0 ? ', ending the hanging transaction' : ''}`,
          );
      }
      if (world.tracing)
        world.trace(
          `P${this.id} reads p${partition}: group offset ${attempt.groupOffset} (committed ${world.kafka.committed(partition)}), checkpoint ${
            attempt.checkpoint === undefined
              ? 'none'
              : `next ${attempt.checkpoint.next} open [${attempt.checkpoint.open.map((m) => m.offset).join(',')}] done [${(attempt.checkpoint.done ?? []).map((d) => d.offset).join(',')}]`
          }`,
        );
    }
    attempt.next += 1;
    this.#later(attempt);
  }

  /** The claim's last step: recoveryPlan, the dedup window rebuilt from the records before the start, a new machine. */
  #open(attempt: Attempt): void {
    const world = this.#world;
    const { partition, generation } = attempt;
    this.#attempts.delete(partition);
    // The real claim build (partition-ownership.ts uses it too); `recent` as recentCommandIds reads it.
    const { start } = recoveryPlan(BigInt(attempt.groupOffset), attempt.checkpoint);
    const records = world.kafka.records(partition);
    const recent: { offset: bigint; commandId: string }[] = [];
    for (let o = Math.max(0, Number(start) - world.settings.dedupWindow); o < Number(start) && o < records.length; o++) {
      const record = records[o];
      if (record !== undefined) recent.push({ offset: BigInt(o), commandId: record.commandId });
    }
    const claim = buildClaim(
      { topic: 'commands', partition, generation, markOwner: `P${this.id}.${world.nextClaimId()}` },
      BigInt(attempt.groupOffset),
      attempt.checkpoint,
      recent,
      world.settings.dedupWindow,
    );
    const { inDoubt } = claim;
    const answered = claim.answered ?? new Map<bigint, string>();
    if (world.tracing)
      world.trace(
        `P${this.id} claims p${partition} gen ${generation}: start ${start}, in doubt [${[...inDoubt.keys()].join(',')}], answered [${[...answered.keys()].join(',')}]`,
      );
    const lane = new Lane(world, this, claim, attempt.epoch, attempt.groupOffset, attempt.startedAt);
    this.lanes.add(lane);
    lane.fetchSoon();
  }

  /** Shutdown: no new call starts when `forced` (sends held), every lane retires; the process stops once they ended. */
  shutdown(forced: boolean): void {
    this.machine.stop();
    this.#attempts = new Map();
    for (const lane of [...this.lanes]) {
      if (forced && !lane.ended) lane.act('stopSending', -1, (m) => m.stopSending());
      if (!lane.ended) lane.act('retire', -1, (m) => m.retire(false, this.#world.now));
    }
    this.#maybeStopped();
  }

  #maybeStopped(): void {
    if (!this.leaving || this.lanes.size > 0 || !this.alive) return;
    if (this.#world.tracing) this.#world.trace(`P${this.id} stopped`);
    this.crash();
    this.onStopped?.();
  }

  laneEnded(lane: Lane, failure: unknown): void {
    const { partition } = lane;
    this.lanes.delete(lane);
    if (failure !== undefined) this.#world.ownerDied(`P${this.id} p${partition} gen ${lane.generation} failed at t=${this.#world.now}`, this.death());
    if (this.leaving) return this.#maybeStopped();
    this.#awaitingLease.delete(lane);
    const waiting = this.#attempts.get(partition);
    if (waiting?.waiting === true) {
      waiting.waiting = false;
      this.#later(waiting);
    }
    if (failure === undefined || lane.generation !== this.generation || !this.assigned.has(partition) || this.#attempts.has(partition)) return;
    const fenced = failure instanceof TxnError && failure.fenced;
    if (afterFailure(fenced, this.leaseHolds()) === 'lose') {
      this.machine.lose(partition, 0n);
      if (this.#world.tracing) this.#world.trace(`P${this.id} lost p${partition}`);
      this.#watchLost();
    } else this.startClaim(partition);
  }

  /**
   * The heartbeats while a partition lost to fencing waits (PartitionOwnership.heartbeat): each
   * one the group confirms goes to the machine, which says which lost partitions may be claimed
   * again (mayReclaimLost); they are claimed afresh. A new generation (or a death) ends the loop.
   * Fixed intervals, no draws: schedules without a loss keep their random stream. The known-bad
   * `lost-until-next-generation` never heartbeats for them: they stay lost for the generation.
   */
  #watchLost(): void {
    const world = this.#world;
    if (world.variant === 'lost-until-next-generation') return;
    const { generation, incarnation } = this;
    const key = `${incarnation}/${generation}`;
    if (this.#watchingLost === key) return;
    this.#watchingLost = key;
    const beat = (): void => {
      if (!this.alive || this.incarnation !== incarnation || this.generation !== generation) return;
      if (this.leaseHolds() && this.groupConfirms?.() === true)
        for (const lost of this.machine.heartbeat()) {
          if (world.tracing)
            world.trace(`P${this.id} claims lost p${lost.partition} again: the group confirmed generation ${generation} ${lost.confirmations} times`);
          this.startClaim(lost.partition);
        }
      // Refused with enough confirmations (the per-generation bound): it stays lost until the next generation.
      if (this.machine.lost.some((lost) => this.machine.awaitsConfirmation(lost.partition))) world.clock.at(TIMING.heartbeatMs, this, beat);
      else if (this.#watchingLost === key) this.#watchingLost = undefined;
    };
    world.clock.at(TIMING.heartbeatMs, this, beat);
  }

  /** Left the group (shutting down): no more heartbeats, so the lease runs out from now; no claim of it is current (PartitionOwnership.leaving). */
  leftGroup(): void {
    this.machine.leave();
    this.#lease.stop(this.#world.now);
  }

  /**
   * kafkajs's consumer crashed and restarts in place (the process goes on): its heartbeats stopped
   * a moment ago, and until its next assignment no claim of it is current (no send starts, no
   * producer starts again) and no claim fences (PartitionOwnership.outOfGroup).
   */
  consumerCrashed(): void {
    this.machine.consumerCrashed();
    this.consumerDown = true;
    this.#heartbeatsStop();
    this.#attempts = new Map();
    this.#claimsAwaitingLease = new Set();
    // Nothing is kept at the rejoin (a new member): every lane retires now rather than then, so a lane
    // holding for a rebalance hands its marked, unsent commands over at once (LaneRouter.retireUnkeepable).
    this.#retireUnkeepable();
  }

  /** Heartbeats stop (if they were flowing, the last was a moment ago): the lease runs from then. */
  #heartbeatsStop(): void {
    if (this.#lease.live) this.#lease.stop(this.#world.now - this.#world.prng.int(0, 100));
  }

  /** LaneRouter.retireUnkeepable: every lane not retiring yet retires, as moved (it hands over what is done). */
  #retireUnkeepable(): void {
    for (const lane of [...this.lanes]) if (!lane.ended) lane.act('retire', -1, (m) => m.retire(true, this.#world.now));
  }

  /**
   * Its consumer's rejoin fails and is tried again in place (faults.ts, rejoinStall): it heard of
   * the rebalance (its lanes hold, no claim fences), it heartbeats no more, and it hears no
   * assignment until its join goes through. Nothing else changes: no LeaveGroup went out, so its
   * claims are its own until the group gives them away, and the next assignment decides what is kept.
   */
  joinStalled(): void {
    this.rebalancing();
    this.consumerDown = true;
    this.#heartbeatsStop();
    // SourcePipeline's watch: a lease that lapses while the lanes hold retires them (a frozen
    // process's timer fires when it resumes, as this event waits for it).
    const { incarnation } = this;
    const world = this.#world;
    world.clock.at(Math.max(0, this.confirmedAt + TIMING.leaseMs - world.now + 1), this, () => {
      if (this.incarnation !== incarnation || !this.alive || this.leaving || !this.isRebalancing || this.leaseHolds()) return;
      if (world.tracing) world.trace(`P${this.id}'s lease lapsed while its lanes held: they retire`);
      this.#retireUnkeepable();
    });
  }

  /** SIGSTOP: nothing runs until `resume`; the last heartbeat (if they were flowing) was a moment ago. */
  freeze(): void {
    this.frozen = true;
    this.freezes += 1;
    this.#heartbeatsStop();
  }

  resume(): void {
    const world = this.#world;
    this.frozen = false;
    world.clock.release(this, () => world.prng.int(0, 20));
  }

  /** SIGKILL: every lane, pool and claim under way is gone (requests and transactions already out still land). */
  crash(): void {
    this.alive = false;
    this.frozen = false;
    this.incarnation += 1;
    this.deferred.length = 0;
    this.#lease.stop(this.#world.now);
    this.lanes = new Set();
    this.#attempts = new Map();
    this.#awaitingLease = new Set();
    this.#claimsAwaitingLease = new Set();
  }

  restart(): void {
    this.alive = true;
    this.consumerDown = false;
    this.incarnation += 1;
    this.groupGeneration = 0;
    this.assigned = new Set();
    this.#watchingLost = undefined;
    this.pools = sendPools(this.#world);
    // No lease until the group confirms it (its join); a new machine: nothing in memory survived.
    this.#lease.stop(Number.NEGATIVE_INFINITY);
    this.machine = new OwnershipMachine(this.#lease, () => this.#world.now);
  }
}

/** A process's slots and mark permits as the schedule drew them (`permits`: the marks ahead at the start). */
function sendPools(world: World): SendPools {
  const { slots, permits } = world.settings;
  return new SendPools(slots, permits, world.variant === 'marks-ahead-fixed', () => world.now);
}
