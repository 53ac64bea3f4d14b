import { LOST_RECLAIM_CONFIRMATIONS, mayReclaimLost, type PartitionClaim } from './claim.ts';
import { moveMembership } from './assertions.ts';
import type { MembershipEvent, MembershipState } from './table.ts';

/**
 * The lease that gates every send: whether the group may still count this member in. The clock
 * and the heartbeats are I/O, so the lease is given to the machine: `TimedLease` in the worker,
 * the world's heartbeat model in the simulation.
 */
export interface Lease {
  /** Holds now. */
  holds(): boolean;
  /** The group confirmed this member now (a heartbeat or a join succeeded). */
  confirmed(): void;
}

/**
 * The worker's lease: the last confirmation is younger than the session timeout less a margin
 * (min(2 s, a quarter of it)). A process frozen past its session finds it lapsed when it wakes.
 */
export class TimedLease implements Lease {
  readonly #leaseMs: number;
  readonly #now: () => number;
  #lastConfirmed = 0;
  constructor(sessionTimeoutMs: number, now: () => number) {
    this.#leaseMs = sessionTimeoutMs - Math.min(2_000, sessionTimeoutMs / 4);
    this.#now = now;
  }
  holds(): boolean {
    return this.leftMs() > 0;
  }
  /** Until the lease lapses unless the group confirms this member again, ms (≤ 0: lapsed). */
  leftMs(): number {
    return this.#leaseMs - (this.#now() - this.#lastConfirmed);
  }
  confirmed(): void {
    this.#lastConfirmed = this.#now();
  }
}

/** A claim whose lane holds at a join, as ownership weighs keeping it. */
export interface HeldClaim {
  readonly partition: number;
  /** The generation it was claimed (or last kept) in. */
  readonly generation: number;
  /** When its claim began (the lease's clock). */
  readonly claimedAt: number;
}

/**
 * One claim's standing, as its lane asks it at each send and commit: a view into the ownership
 * machine (a call down, where the lane once called closures of the router's). The generation is
 * read at each ask, since a kept claim moves to the next one.
 */
export interface ClaimStanding {
  /** It may start a send (and take a record): the lease holds and the claim is current. */
  maySend(): boolean;
  /** Its transaction failed: it may initialise its producer again (`OwnershipMachine.mayReinitialise`). */
  mayReinitialise(): boolean;
}

/** A partition lost to fencing in this generation: where its last claim had committed, and the heartbeats confirmed since. */
export interface LostPartition {
  readonly partition: number;
  readonly resumeAt: bigint;
  confirmations: number;
}

/**
 * Partition ownership's decisions, sans I/O (the second machine of the protocol; the first is
 * partition-machine.ts): the membership (table.ts's MEMBERSHIP_TRANSITIONS), the generation, the
 * lease's lapses, which claims a new generation keeps, which claims are current, and the
 * partitions lost to fencing and when one is claimed again. The worker's PartitionOwnership and
 * the simulation's process both drive this class.
 * Membership moves are checked against the table (a move it does not list throws).
 */
export class OwnershipMachine {
  readonly #lease: Lease;
  readonly #now: () => number;
  #state: MembershipState = 'unjoined';
  /** Shutting down: no claim fences any more (the process may still be a member while its lanes finish). */
  #stopping = false;
  #generation = 0;
  #assigned: readonly number[] = [];
  /** When the lease was last found lapsed (a claim made before it is never kept). */
  #lapsedAt = Number.NEGATIVE_INFINITY;
  #lost = new Map<number, LostPartition>();
  /** Partitions lost and claimed again in this generation, and how often. */
  #reclaims = new Map<number, number>();

  constructor(lease: Lease, now: () => number) {
    this.#lease = lease;
    this.#now = now;
  }

  get state(): MembershipState {
    return this.#state;
  }
  get generation(): number {
    return this.#generation;
  }
  get assigned(): readonly number[] {
    return this.#assigned;
  }
  /** Between the group's REBALANCING and this member's new assignment: no producer is initialised. */
  get isRebalancing(): boolean {
    return this.#state === 'rebalancing';
  }
  get isStopping(): boolean {
    return this.#stopping;
  }
  get lost(): readonly LostPartition[] {
    return [...this.#lost.values()];
  }

  rebalance(): void {
    this.#move('rebalance');
  }
  consumerCrashed(): void {
    this.#move('consumer-crashed');
  }
  /** Shutting down: no claim fences any more. */
  stop(): void {
    this.#stopping = true;
  }
  /** This process leaves its group now (its lanes may finish): no claim is current any more. */
  leave(): void {
    this.#stopping = true;
    this.#move('leave');
  }

  /** The group confirmed this member (a heartbeat or a join succeeded); a lapse since the last confirmation is remembered. */
  confirm(): void {
    if (!this.#lease.holds()) this.#lapsedAt = this.#now();
    this.#lease.confirmed();
  }

  leaseHolds(): boolean {
    return this.#lease.holds();
  }

  /**
   * A new generation with `partitions`. `next`: the very next generation for this member (the
   * caller knows; a member out of the group joins as a new one, never next). Of `holding` (claims
   * whose lanes hold and could go on), returns those it may keep — carried into the new generation
   * without fencing or reading again: the generation is the next one, the partition is assigned
   * again and not lost, and the lease has not lapsed since the claim. (The caller may still refuse
   * one: the worker keeps a claim only if its producer carries over.) Partitions lost in the
   * generation that ended are not lost any more (`lost`: fetch them again).
   */
  join(partitions: readonly number[], next: boolean, holding: readonly HeldClaim[]): { readonly keepable: HeldClaim[]; readonly lost: number[] } {
    const isNext = next && this.#state !== 'out-of-group';
    const previous = this.#generation;
    this.#generation += 1;
    this.#move('joined');
    this.confirm();
    const keepable = holding.filter(
      (claim) =>
        isNext &&
        partitions.includes(claim.partition) &&
        claim.generation === previous &&
        !this.#lost.has(claim.partition) &&
        claim.claimedAt >= this.#lapsedAt &&
        this.#lease.holds(),
    );
    const lost = [...this.#lost.keys()];
    this.#lost = new Map();
    this.#reclaims = new Map();
    this.#assigned = [...partitions];
    return { keepable, lost };
  }

  /**
   * A heartbeat succeeded: the group is stable in this member's generation. Confirms the lease,
   * and returns the partitions lost to fencing that may be claimed again now (mayReclaimLost: the
   * fencer was not a member of a later generation); they are not lost any more.
   */
  heartbeat(): LostPartition[] {
    this.confirm();
    if (this.#state !== 'member' || this.#stopping) return [];
    const reclaimed: LostPartition[] = [];
    for (const lost of [...this.#lost.values()]) {
      lost.confirmations += 1;
      const reclaims = this.#reclaims.get(lost.partition) ?? 0;
      if (!mayReclaimLost(lost.confirmations, reclaims)) continue;
      this.#lost.delete(lost.partition);
      this.#reclaims.set(lost.partition, reclaims + 1);
      reclaimed.push(lost);
    }
    return reclaimed;
  }

  /** Whether a lost partition still waits for heartbeats to confirm it (else it stays lost until the next generation). */
  awaitsConfirmation(partition: number): boolean {
    const lost = this.#lost.get(partition);
    return lost !== undefined && lost.confirmations <= LOST_RECLAIM_CONFIRMATIONS;
  }

  /** The producer of this partition was fenced: another process owns it now (or a zombie fenced it: see heartbeat). False when it was lost already. */
  lose(partition: number, resumeAt: bigint): boolean {
    if (this.#lost.has(partition)) return false;
    this.#lost.set(partition, { partition, resumeAt, confirmations: 0 });
    return true;
  }

  isLost(partition: number): boolean {
    return this.#lost.has(partition);
  }

  /**
   * Whether a claim of `generation` is current: it may send and start a producer. Never outside
   * the group (left, or out of it after a crash): a producer started again then would fence the
   * member the group gave the partition to.
   */
  isCurrent(generation: number, partition: number): boolean {
    return this.#state !== 'left' && this.#state !== 'out-of-group' && generation === this.#generation && !this.#lost.has(partition);
  }

  /**
   * Whether a claim whose transaction failed may initialise its producer again (which fences every
   * earlier producer of the partition): only while it may send (the lease holds, the claim is
   * current) and the group is not rebalancing, since until the new assignment is known the
   * partition may be another member's, and a re-initialisation would fence that member.
   */
  mayReinitialise(generation: number, partition: number): boolean {
    return this.leaseHolds() && this.isCurrent(generation, partition) && !this.isRebalancing;
  }

  /** Whether a claim begun in `generation` may fence now: still that generation, not rebalancing nor out of the group, not stopping. */
  mayFence(generation: number): boolean {
    return generation === this.#generation && (this.#state === 'member' || this.#state === 'unjoined') && !this.#stopping;
  }

  /** `claim`'s standing, for its lane to ask (ClaimStanding). */
  standing(claim: Pick<PartitionClaim, 'partition' | 'generation'>): ClaimStanding {
    return {
      maySend: () => this.leaseHolds() && this.isCurrent(claim.generation, claim.partition),
      mayReinitialise: () => this.mayReinitialise(claim.generation, claim.partition),
    };
  }

  #move(event: MembershipEvent): void {
    this.#state = moveMembership(this.#state, event);
  }
}
