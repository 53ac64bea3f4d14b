import type { OpenMark } from '../lane/ledger-checkpoint.ts';
import type { PartitionClaim } from './claim.ts';
import type { Effect } from './effects.ts';
import { RecordBook, type RecordEntry } from './record-book.ts';
import { ProtocolViolation } from './assertions.ts';
import type { RecordEvent, RecordState } from './table.ts';

export interface SendPathContext<O> {
  readonly book: RecordBook<O>;
  readonly claim: PartitionClaim;
  readonly ledger: boolean;
  readonly markPermits: boolean;
  readonly emit: (effect: Effect<O>) => void;
  /** Whether the claim still lets records call (active, or holding); the lease and a forced stop are this path's. */
  readonly claimActive: () => boolean;
  /** The group is rebalancing: a record about to call waits (`held`) until the claim is kept or retired. */
  readonly claimHeld: () => boolean;
  /** Marks wait: commit as soon as possible. */
  readonly commitSoon: (clock: number) => void;
  /**
   * A record was refused because the lease no longer holds while the claim is active: the claim
   * must fail, or a later record of the same key could call once the lease holds again, and
   * nothing could ever commit past the refused one.
   */
  readonly leaseLost: () => void;
}

/**
 * One record's way to the service, in order: want → (permit) → mark → mark committed → slot →
 * call, each step refused when the claim stops, sending stops or the lease no longer holds. With
 * the ledger off the mark steps are skipped. A record kept after a call (not sent, or an answer
 * that may be retried) gives its slot back and asks again from the top.
 */
export class SendPath<O> {
  readonly #c: SendPathContext<O>;
  /** Marks opened and not yet in a transaction. */
  readonly #marksWaiting = new Set<bigint>();
  /** A mark was withdrawn: the next checkpoint must drop it, even with nothing else to commit. */
  #marksWithdrawn = false;
  /** No new call may start (retired, failed, or a forced stop). */
  #stopped = false;
  /**
   * Marks withdrawn while the claim works, until a committed checkpoint drops them (`inTxn`: the
   * transaction under way carries their drop): if the claim stops working first, they are handed
   * over, since a new owner's fence may abort that transaction.
   */
  readonly #withdrawals = { waiting: new Map<bigint, OpenMark>(), inTxn: new Map<bigint, OpenMark>() };

  constructor(context: SendPathContext<O>) {
    this.#c = context;
  }

  want(offset: bigint, leaseHolds: boolean, at: number, clock: number, account?: string): void {
    const entry = this.#c.book.get(offset);
    if (account !== undefined) entry.account = account;
    // A record asks from `handling` only, holding no slot: a call kept for later gave its slot back (`kept`).
    if (entry.slotHeld) throw new ProtocolViolation('slots-only-past-marks', `record ${offset} asks to send while it holds a slot`);
    if (!this.#maySend(leaseHolds)) return this.#refuseFor(entry, 'stop', leaseHolds);
    if (!this.#c.ledger) {
      this.#move(entry, 'want-send', 'awaiting-slot');
      return this.#c.emit({ type: 'acquire-slot', offset });
    }
    if (this.#c.markPermits) {
      this.#move(entry, 'want-send', 'awaiting-permit');
      return this.#c.emit({ type: 'acquire-permit', offset });
    }
    this.#openMark(entry, 'want-send', at, clock);
  }

  permitGranted(offset: bigint, at: number, clock: number): void {
    const entry = this.#entry(offset);
    if (entry?.state !== 'awaiting-permit') return this.#c.emit({ type: 'release-permit' });
    entry.permitHeld = true;
    this.#openMark(entry, 'permit-granted', at, clock);
  }

  slotGranted(offset: bigint, leaseHolds: boolean): void {
    const entry = this.#entry(offset);
    if (entry === undefined || !RecordBook.inHand(entry.state)) return this.#c.emit({ type: 'release-slot' });
    entry.slotHeld = true;
    if (entry.state !== 'awaiting-slot') return;
    this.#givePermitBack(entry);
    if (this.#maySend(leaseHolds)) return this.#call(entry, 'slot-granted');
    this.#refuseFor(entry, 'slot-granted', leaseHolds);
  }

  /** The transaction carrying these marks committed: their records go on to a slot. */
  marksCommitted(offsets: readonly bigint[]): void {
    for (const offset of offsets) {
      const entry = this.#entry(offset);
      if (entry?.state !== 'marking') continue;
      if (entry.slotHeld) throw new ProtocolViolation('slots-only-past-marks', `record ${offset} holds a slot while its mark commits`);
      this.#move(entry, 'mark-committed', 'awaiting-slot');
      this.#c.emit({ type: 'acquire-slot', offset });
    }
  }

  waitCut(offset: bigint): void {
    const entry = this.#entry(offset);
    if (entry?.state === 'awaiting-permit' || entry?.state === 'awaiting-slot') this.#refuse(entry, 'stop', 'handling');
  }

  /**
   * The call is over and the command goes back to waiting (not sent, refused, or an ambiguous
   * answer the operator lets it retry): it gives its slot back, so a command held by a pause holds
   * none. Its mark is withdrawn unless this call (`reached`) or an earlier one may have reached
   * the service; then it stays, and a new owner reports the command UNKNOWN.
   */
  kept(offset: bigint, reached: boolean): void {
    const entry = this.#c.book.get(offset);
    this.#move(entry, 'kept', 'handling');
    if (reached) entry.mayHaveReached = true;
    if (entry.slotHeld) {
      entry.slotHeld = false;
      this.#c.emit({ type: 'release-slot' });
    }
    if (!entry.mayHaveReached) this.withdraw(offset);
  }

  /** The claim was kept by the new generation: held records call (the lease is checked again). */
  claimKept(leaseHolds: boolean): void {
    for (const entry of this.#c.book.inState('held')) {
      if (this.#maySend(leaseHolds)) this.#call(entry, 'claim-kept');
      else this.#refuseFor(entry, 'stop', leaseHolds);
    }
  }

  /** No call starts any more; every wait for a permit, a mark, a slot or the new assignment is cut. */
  stop(): void {
    this.#stopped = true;
    for (const entry of this.#c.book.inState('awaiting-permit', 'marking', 'awaiting-slot', 'held')) this.#refuse(entry, 'stop', 'handling');
    this.#c.emit({ type: 'stop-waits' });
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** The record surely did not reach the service: its mark leaves the next checkpoint. */
  withdraw(offset: bigint): void {
    // An earlier owner's mark (in doubt) stays whatever becomes of this owner's handling: its call
    // may have reached the service, and only a result of this record may settle it.
    const { claim } = this.#c;
    if (claim.inDoubt.has(offset)) return;
    // Its record is checked again at the next drain (a mark gone from under a record about to call breaks calls-under-committed-marks).
    this.#c.book.touch(offset);
    const mark = claim.open.get(offset);
    if (claim.open.delete(offset)) this.#marksWithdrawn = true;
    // Only a mark some transaction may have committed needs telling the next owner about.
    if (mark !== undefined && !this.#marksWaiting.has(offset)) {
      if (this.#c.claimActive()) this.#withdrawals.waiting.set(offset, mark);
      else this.#c.emit({ type: 'handover', offset, mark, outcome: undefined });
    }
    this.#marksWaiting.delete(offset);
  }

  /** The marks for the next transaction, and whether it must be written even with nothing else (a mark withdrawn). */
  takeMarks(): { marks: bigint[]; withdrawn: boolean } {
    const taken = { marks: [...this.#marksWaiting], withdrawn: this.#marksWithdrawn && this.#c.ledger };
    this.#marksWaiting.clear();
    this.#marksWithdrawn = false;
    for (const [offset, mark] of this.#withdrawals.waiting) this.#withdrawals.inTxn.set(offset, mark);
    this.#withdrawals.waiting.clear();
    return taken;
  }

  /** A mark left `open` otherwise than by withdrawal (handed over as withdrawn): the next checkpoint drops it. */
  markDropped(): void {
    this.#marksWithdrawn = true;
  }

  /** The transaction under way committed: the withdrawals it carried are settled in the ledger. */
  withdrawalsCommitted(): void {
    this.#withdrawals.inTxn.clear();
  }

  /**
   * The claim stopped working the partition (retiring, failed): hand over every withdrawal no
   * committed checkpoint carries yet. (A call under way is not withdrawn: it may reach the service.)
   */
  handOverWithdrawals(): void {
    for (const withdrawals of [this.#withdrawals.inTxn, this.#withdrawals.waiting]) {
      for (const [offset, mark] of withdrawals) this.#c.emit({ type: 'handover', offset, mark, outcome: undefined });
      withdrawals.clear();
    }
  }

  /** Whether the record's mark is opened and not yet in a transaction. */
  markWaiting(offset: bigint): boolean {
    return this.#marksWaiting.has(offset);
  }

  get marksWaiting(): number {
    return this.#marksWaiting.size;
  }

  /** A mark was withdrawn and no transaction has dropped it yet. */
  get withdrawalWaiting(): boolean {
    return this.#marksWithdrawn && this.#c.ledger;
  }

  givePermitBack(entry: RecordEntry<O>): void {
    this.#givePermitBack(entry);
  }

  #openMark(entry: RecordEntry<O>, event: RecordEvent, at: number, clock: number): void {
    const { claim } = this.#c;
    if (!claim.open.has(entry.offset)) {
      claim.marks.made += 1;
      claim.open.set(entry.offset, {
        offset: entry.offset,
        commandId: entry.commandId ?? '',
        at,
        by: `${claim.marks.owner}.${claim.marks.made}`,
        ...(entry.account !== undefined && { account: entry.account }),
      });
      this.#c.emit({ type: 'mark-opened' });
    }
    this.#marksWaiting.add(entry.offset);
    this.#c.commitSoon(clock);
    this.#move(entry, event, 'marking');
  }

  #call(entry: RecordEntry<O>, event: RecordEvent): void {
    // Rebalancing: the partition may move; no call starts until the new generation says it stays.
    if (this.#c.claimHeld()) return this.#move(entry, event, 'held');
    this.#move(entry, event, 'calling');
    this.#c.emit({ type: 'call', offset: entry.offset });
  }

  /** Refuses the call; when only the lease is why, the claim fails (see `leaseLost`). */
  #refuseFor(entry: RecordEntry<O>, event: RecordEvent, leaseHolds: boolean): void {
    this.#refuse(entry, event, 'handling');
    if (!leaseHolds && this.#c.claimActive() && !this.#stopped) this.#c.leaseLost();
  }

  #refuse(entry: RecordEntry<O>, event: RecordEvent, to: RecordState): void {
    this.#move(entry, event, to);
    this.#givePermitBack(entry);
    this.#marksWaiting.delete(entry.offset);
    this.#c.emit({ type: 'refuse-call', offset: entry.offset });
  }

  #givePermitBack(entry: RecordEntry<O>): void {
    if (!entry.permitHeld) return;
    entry.permitHeld = false;
    this.#c.emit({ type: 'release-permit' });
  }

  #maySend(leaseHolds: boolean): boolean {
    return this.#c.claimActive() && !this.#stopped && leaseHolds;
  }

  #entry(offset: bigint): RecordEntry<O> | undefined {
    return this.#c.book.has(offset) ? this.#c.book.get(offset) : undefined;
  }

  #move(entry: RecordEntry<O>, event: RecordEvent, to: RecordState): void {
    this.#c.book.move(entry, event, to);
  }
}
