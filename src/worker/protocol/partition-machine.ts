import { identifyCommand, LeaseLostError, type Identity, type PartitionClaim } from './claim.ts';
import { CommitClock } from './commit-clock.ts';
import { FetchHolds } from './fetch-holds.ts';
import { RecordBook, type RecordEntry } from './record-book.ts';
import { brokenClaimInvariant, moveClaim } from './assertions.ts';
import { SendPath } from './send-path.ts';
import { planTransaction, settleCommitted } from './transaction-plan.ts';
import { RECORD_STATES, type ClaimEvent, type ClaimState, type RecordState } from './table.ts';
import type { Effect, TransactionPlan } from './effects.ts';

export type { Effect, TransactionPlan } from './effects.ts';

const RECORD_STATE_NAMES = Object.keys(RECORD_STATES) as RecordState[];
export interface MachineOptions<O> {
  readonly claim: PartitionClaim;
  /** The intent ledger is on (a send waits for its mark to commit); marks ahead of the calls take process-wide permits. */
  readonly ledger: boolean;
  readonly markPermits: boolean;
  readonly maxRunAhead: number;
  readonly commitIntervalMs: number;
  /** A busy partition's marks wait up to this long after its last transaction, to share the next one (commit-clock.ts). */
  readonly markLingerMs?: number;
  /**
   * A claim that stops working its partition hands its marked records over (handover-record.ts):
   * the ledger is on. Then no transaction begins while the group rebalances, nor once the
   * partition moved to another member, whose fence would abort it (and wait for it).
   */
  readonly handovers?: boolean;
  /** Whether an outcome publishes a record, for each transaction's read-back (default: every outcome, which reads back more than it must, never less). */
  readonly publishes?: (outcome: O) => boolean;
}

export type { Identity } from './claim.ts';

/**
 * The partition protocol for one claim, sans I/O: events in (methods), effects out (`take()`).
 * It decides when a record may call the service (its mark committed, a slot held, the lease
 * holding, the claim active), what each transaction carries (marks, the contiguous done prefix,
 * the checkpoint, the offset) and when the claim ends. States and moves: table.ts.
 * `clock` arguments are monotonic milliseconds; `at` is epoch milliseconds (for marks).
 */
export class PartitionMachine<O> {
  readonly claim: PartitionClaim;
  readonly #o: MachineOptions<O>;
  readonly #book: RecordBook<O>;
  #effects: Effect<O>[] = [];
  #state: ClaimState = 'active';
  #failure: unknown;
  #closing = false;
  #committing: TransactionPlan<O> | undefined;
  /**
   * The records whose outcomes the transaction under way publishes, out of the book since it was
   * planned: if the claim stops working the partition meanwhile, the next owner's fence may abort
   * that transaction, so they are handed over with the others (found by the scale bench: such an
   * outcome was neither committed nor handed over, and the next owner reported it UNKNOWN).
   */
  #committingDone: readonly RecordEntry<O>[] = [];
  readonly #commitClock: CommitClock;
  readonly #send: SendPath<O>;
  #lastTaken = -1n;
  /** Retired because the partition moved to another member (handovers on): no transaction begins any more. */
  #moved = false;
  /** A commit was wanted while none could begin (holding): it is armed when the claim is kept. */
  #commitDeferred = false;
  /** The commit of what was done when the claim retired: due, under way, or none pending. */
  #retireCommit: 'due' | 'under-way' | 'none' = 'none';
  readonly #holds = new FetchHolds((effect) => this.#emit(effect));
  #busy = false;
  /** Checks its invariants at each drain (until stopChecking). */
  #checking = true;
  /** The committed position at the last check (offset-only-forward). */
  #committedSeen: bigint;
  constructor(options: MachineOptions<O>) {
    this.#o = options;
    this.claim = options.claim;
    this.#committedSeen = options.claim.position.committed;
    const answeredEarlier = (offset: bigint): boolean => options.claim.answered?.has(offset) === true;
    this.#book = new RecordBook<O>(answeredEarlier);
    this.#commitClock = new CommitClock(options.commitIntervalMs, options.markLingerMs);
    this.#send = new SendPath<O>({
      book: this.#book,
      claim: options.claim,
      ledger: options.ledger,
      markPermits: options.markPermits,
      emit: (effect) => this.#emit(effect),
      claimActive: () => this.#state === 'active' || this.#state === 'holding',
      claimHeld: () => this.#state === 'holding',
      commitSoon: (clock) => this.#scheduleCommit(true, clock),
      leaseLost: () => this.fail(new LeaseLostError(this.claim)),
    });
  }

  /**
   * The effects produced since the last call, in order, once the claim's invariants are checked
   * (CLAIM_INVARIANTS): a broken one throws (ProtocolViolation), and its driver stops trusting the
   * machine (the lane: PartitionLane's #violated).
   */
  drain(): Effect<O>[] {
    if (!this.#checking) return this.#effects.splice(0);
    const broken = brokenClaimInvariant({
      state: this.#state,
      ledger: this.#o.ledger,
      claim: this.claim,
      touched: this.#book.takeTouched(),
      oldestOfKey: (record) => this.#book.isFirstOfKey(record),
      inHand: this.#book.inHand,
      markUncommitted: (offset) => this.#send.markWaiting(offset) || this.#committing?.marks.includes(offset) === true,
      transactionUnderWay: this.#committing !== undefined,
      committedBefore: this.#committedSeen,
    });
    this.#committedSeen = this.claim.position.committed;
    if (broken !== undefined) throw broken;
    return this.#effects.splice(0);
  }

  /** Its state is known broken (a violation was thrown): no more checks, so that it can fail and give back what its records hold. */
  stopChecking(): void {
    this.#checking = false;
  }

  get state(): ClaimState {
    return this.#state;
  }
  /** What was done when the claim retired has been committed (or that transaction failed, or there was none): later calls may go on. */
  get retireCommitted(): boolean {
    return this.#retireCommit === 'none' || this.#state === 'ended' || this.#state === 'failed';
  }
  /** Takes new records: not retired, not failed. */
  get accepting(): boolean {
    return this.#state === 'active';
  }
  get pending(): number {
    return this.#book.pending;
  }
  get working(): number {
    return this.#book.inHand;
  }
  get calling(): number {
    return this.#book.inState('calling').length;
  }
  /**
   * Records marked (ledger on) and not calling: their mark committing or committed, waiting for a
   * slot or held for a rebalance. If the process died now, these would come back UNKNOWN although
   * never sent (docs/guarantees.md, the intent ledger, step 5).
   */
  get markedWaiting(): number {
    if (!this.#o.ledger) return 0;
    return this.#book.inState('marking', 'awaiting-slot', 'held').filter((entry) => !entry.mayHaveReached).length;
  }
  readonly recordState = (offset: bigint): RecordState | undefined => this.#book.stateOf(offset);

  /** What the claim waits on now, for a log line: its state, whether a transaction is under way, and its records by state. */
  waitingOn(): { readonly claim: ClaimState; readonly transaction: boolean; readonly records: Readonly<Partial<Record<RecordState, number>>> } {
    const records: Partial<Record<RecordState, number>> = {};
    for (const entry of this.#book.inState(...RECORD_STATE_NAMES)) records[entry.state] = (records[entry.state] ?? 0) + 1;
    return { claim: this.#state, transaction: this.#committing !== undefined, records };
  }

  /** Whether a fetched record may be taken: `skip` (answered or taken already), `closed`, `full` (run-ahead bound), `take`. */
  offer(offset: bigint, leaseHolds: boolean, clock: number): 'skip' | 'closed' | 'full' | 'take' {
    const { claim } = this;
    if (offset < claim.start || offset < claim.position.committed || offset <= this.#lastTaken || claim.answered?.has(offset) === true) return 'skip';
    if (!this.accepting || !leaseHolds) return 'closed';
    if (this.#book.pending >= this.#o.maxRunAhead && !this.#takesForCarrier(offset)) {
      this.#holds.set('run-ahead', true, this.accepting);
      this.#scheduleCommit(false, clock);
      return 'full';
    }
    return 'take';
  }

  /** The process holds as many record bytes as it may (`true`): stop fetching until they are freed (`false`). */
  bytesHeld(held: boolean): void {
    this.#holds.set('bytes', held, this.accepting);
  }

  /**
   * Past the run-ahead bound, a record is still taken while a repeat waits for a carrier at or after
   * it not taken yet (record-book.ts, untakenCarrier): bounded by that carrier's offset.
   */
  #takesForCarrier(offset: bigint): boolean {
    return offset <= this.#book.untakenCarrier();
  }

  /** The fetch loop took the record (after `offer` said `take` and its bytes were had). */
  take(offset: bigint, key: string): void {
    const entry = this.#book.add(offset, key);
    this.#lastTaken = offset;
    this.#setBusy(true);
    this.#emit({ type: 'progress' });
    if (this.#book.isFirstOfKey(entry)) this.#handle(entry);
  }

  /** The record's commandId: in doubt, a repeat, or new (claim.ts). */
  identify(offset: bigint, commandId: string): Identity {
    const entry = this.#book.get(offset);
    entry.commandId = commandId;
    const identity = identifyCommand(this.claim, offset, commandId);
    entry.repeat = identity.kind === 'duplicate';
    if (identity.kind === 'duplicate' && identity.firstOffset > offset) {
      entry.repeatOf = identity.firstOffset;
      // Fetching stopped at the run-ahead bound before this repeat was known: its carrier is not
      // taken yet, and no commit can bring the count down until it is.
      if (this.#holds.has('run-ahead') && this.#takesForCarrier(this.#lastTaken + 1n)) this.#holds.set('run-ahead', false, this.accepting);
    }
    return identity;
  }

  /** The record passed the gate, holds and rate limit and asks to call the service (send-path.ts). */
  wantSend(offset: bigint, leaseHolds: boolean, at: number, clock: number, account?: string): void {
    this.#send.want(offset, leaseHolds, at, clock, account);
  }
  permitGranted(offset: bigint, at: number, clock: number): void {
    this.#send.permitGranted(offset, at, clock);
  }
  slotGranted(offset: bigint, leaseHolds: boolean): void {
    this.#send.slotGranted(offset, leaseHolds);
  }
  /** A permit or slot wait was cut by its driver: the record, if still waiting for it, is refused. */
  waitCut(offset: bigint): void {
    this.#send.waitCut(offset);
  }
  /** A forced stop: no new call starts; waits for a permit, a mark or a slot are cut (the claim goes on committing). */
  stopSending(): void {
    if (!this.#send.stopped) this.#send.stop();
  }
  /**
   * The call is over and the command is kept for later (send-path.ts `kept`): its slot goes back;
   * its mark is withdrawn unless `reached` (this call may have reached the service) or an earlier
   * call may have.
   */
  kept(offset: bigint, reached: boolean, clock?: number): void {
    this.#send.kept(offset, reached);
    // Committed at once (`clock` given): a command refused and held (a funds or route pause) may
    // wait long, and its stale mark would make a new owner wait for it, then report it UNKNOWN.
    if (this.#send.withdrawalWaiting && clock !== undefined) this.#scheduleCommit(true, clock);
  }

  finished(offset: bigint, outcome: O, clock: number): void {
    const entry = this.#book.get(offset);
    this.#book.move(entry, 'finished', 'done');
    entry.outcome = outcome;
    if (!this.#working) this.#handOver(entry);
    this.#ended(entry);
    this.#scheduleCommit(false, clock);
    this.#maybeEnd();
  }

  /**
   * No outcome. `maybeSent` (a call cut under way), or an earlier call that may have reached the
   * service: its mark stays (UNKNOWN next). Otherwise its mark is withdrawn in a transaction at
   * once (`clock` given): a retiring lane may wait long for a slow call, and a withdrawal held
   * until then would come back UNKNOWN after a crash, never sent (unknown-is-bounded).
   */
  abandoned(offset: bigint, maybeSent: boolean, clock?: number): void {
    const entry = this.#book.get(offset);
    this.#book.move(entry, 'abandoned', 'given-up');
    const withdraw = !maybeSent && !entry.mayHaveReached && this.claim.open.has(offset);
    if (!maybeSent && !entry.mayHaveReached) this.#send.withdraw(offset);
    // Its commandId leaves the repeat window only with its last mark: while a mark stays open (an
    // earlier owner's, in doubt, or a call that may have reached the service) the command may have
    // been sent, and another record of it is a repeat, never new (a second result, or a second send).
    if (entry.commandId !== undefined && !this.claim.open.has(offset)) this.claim.dedup.forget(entry.commandId, offset);
    this.#ended(entry);
    if (withdraw && this.#o.ledger && clock !== undefined) this.#scheduleCommit(true, clock);
    this.#maybeEnd();
  }

  /**
   * An earlier owner handed over the record's mark as withdrawn (it never called, and never will),
   * or no handover came and IN_DOUBT_POLICY=resend says send it anyway: the mark is dropped and
   * the record is handled as new (`identify` said in doubt before).
   */
  handedOver(offset: bigint): void {
    const entry = this.#book.get(offset);
    this.#book.move(entry, 'handed-over', 'handling');
    this.claim.inDoubt.delete(offset);
    if (this.claim.open.delete(offset)) this.#send.markDropped();
  }

  /** A bug in handling (not a record problem): the record is given up and the claim fails. */
  crashed(offset: bigint, error: unknown): void {
    const entry = this.#book.get(offset);
    this.#book.move(entry, 'crashed', 'given-up');
    this.#ended(entry);
    this.fail(error);
  }

  /** The armed commit is due. */
  commitDue(clock: number): void {
    this.#commitClock.disarm();
    if (this.#state === 'failed' || this.#committing !== undefined || this.#closing) return;
    if (!this.#mayBegin) {
      this.#commitDeferred = true;
      return;
    }
    const plan = this.#plan(false);
    if (plan === undefined) {
      if (this.#retireCommit === 'due') this.#retireCommit = 'none';
      this.#commitClock.ended(clock);
      this.#maybeEnd();
      return;
    }
    this.#begin(plan);
  }

  transactionCommitted(clock: number): void {
    const plan = this.#committing;
    if (plan === undefined) return;
    this.#committing = undefined;
    this.#committingDone = [];
    if (this.#retireCommit === 'under-way') this.#retireCommit = 'none';
    this.#commitClock.ended(clock);
    this.#send.marksCommitted(plan.marks);
    this.#send.withdrawalsCommitted();
    settleCommitted(this.claim, plan, (offset) => this.#book.move(this.#book.get(offset), 'committed-ahead', 'published'));
    if (plan.commitOffset !== undefined || plan.outcomes.length > 0)
      this.#emit({ type: 'committed', next: this.claim.position.committed, outcomes: plan.outcomes });
    if (this.#holds.has('run-ahead') && this.#book.pending <= Math.floor(this.#o.maxRunAhead / 2)) this.#holds.set('run-ahead', false, this.accepting);
    if (this.#book.pending === 0) this.#setBusy(false);
    this.#emit({ type: 'progress' });
    if (plan.closing) return this.#end('closing-committed');
    if (this.#send.marksWaiting > 0 || this.#send.withdrawalWaiting) this.#scheduleCommit(true, clock);
    else if (this.#book.pending > 0) this.#scheduleCommit(false, clock);
    this.#maybeEnd();
  }

  transactionFailed(error: unknown, clock: number): void {
    const plan = this.#committing;
    if (plan === undefined) return;
    this.#committing = undefined;
    if (this.#retireCommit === 'under-way') this.#retireCommit = 'none';
    this.#commitClock.ended(clock);
    if (plan.closing) {
      // Begun after the claim stopped working: its outcomes were handed over when they were done.
      this.#committingDone = [];
      this.#failure = error;
      return this.#end('closing-failed');
    }
    // Failing a working claim hands over what this transaction carried (see #committingDone).
    this.fail(error);
    this.#committingDone = [];
  }

  /**
   * The group started rebalancing: the partition may stay (`keep`) or move (`retire`). Until then no
   * record is taken and no call starts; marks and calls under way go on and commit.
   */
  hold(): void {
    if (this.#state !== 'active') return;
    this.#claimMove('hold', 'holding');
    this.#holds.clear(false);
  }

  /** The new generation left the partition here (the lease held throughout): held records call, fetching goes on. */
  keep(leaseHolds: boolean, clock = 0): void {
    if (this.#state !== 'holding') return;
    this.#claimMove('keep', 'active');
    this.#send.claimKept(leaseHolds);
    if (this.#commitDeferred) {
      this.#commitDeferred = false;
      this.#scheduleCommit(this.#send.marksWaiting > 0 || this.#send.withdrawalWaiting, clock);
    }
  }

  /**
   * The partition moved, the claim is not kept, or shutdown: take no more records; waits are cut;
   * calls under way finish. `moved`: another member has the partition now and fences it at once;
   * with handovers on, this claim then begins no transaction (every outcome is handed over).
   */
  retire(moved = false, clock = 0): void {
    if (this.#state !== 'active' && this.#state !== 'holding') return;
    this.#moved = moved && this.#o.handovers === true;
    this.#claimMove('retire', 'retiring');
    this.#handOverAll();
    this.#send.stop();
    this.#holds.clear(this.accepting);
    // Not moved (shutdown, or a claim not kept but still assigned here): what is done commits at
    // once, so a process shutting down has it committed before it leaves its group (the next
    // owner's fence would otherwise abort that transaction, and wait for it).
    if (!this.#moved && (this.#commitDeferred || this.#book.inState('done').length > 0 || this.#send.withdrawalWaiting)) {
      this.#commitDeferred = false;
      this.#retireCommit = 'due';
      this.#scheduleCommit(true, clock);
    }
    this.#maybeEnd();
  }

  /** A transaction failed, the lease was lost, or a handler threw. Again when already failed: the claim may end now. */
  fail(error: unknown): void {
    if (this.#state === 'failed') return this.#maybeEnd();
    if (this.#state === 'ended' || this.#closing) return;
    const wasWorking = this.#working;
    this.#claimMove('fail', 'failed');
    if (wasWorking) this.#handOverAll();
    this.#failure = error;
    this.#emit({ type: 'abort-all', error });
    this.#send.stop();
    this.#holds.clear(this.accepting);
    this.#maybeEnd();
  }

  /**
   * Whether a transaction may begin: not while the group rebalances nor once the partition moved
   * (handovers on): the next owner's fence would abort it, and its InitProducerId would wait for it.
   */
  get #mayBegin(): boolean {
    if (this.#o.handovers !== true) return true;
    return this.#state !== 'holding' && !this.#moved;
  }

  /** Whether the claim still works the partition (its own transactions commit outcomes): else outcomes are handed over. */
  get #working(): boolean {
    return this.#state === 'active' || this.#state === 'holding';
  }

  /** Tells the next owner what became of a marked record: its outcome (a new owner's fence may abort the transaction that would commit it). */
  #handOver(entry: RecordEntry<O>): void {
    const mark = this.claim.open.get(entry.offset);
    if (mark !== undefined && entry.outcome !== undefined) this.#emit({ type: 'handover', offset: entry.offset, mark, outcome: entry.outcome });
  }

  /** The claim stopped working the partition: hand over the outcomes not yet committed, and the withdrawals. */
  #handOverAll(): void {
    for (const entry of this.#committingDone) this.#handOver(entry);
    for (const entry of this.#book.inState('done')) this.#handOver(entry);
    this.#send.handOverWithdrawals();
  }

  #handle(entry: RecordEntry<O>): void {
    this.#book.move(entry, 'predecessor-ended', 'handling');
    this.#emit({ type: 'handle', offset: entry.offset });
  }

  #ended(entry: RecordEntry<O>): void {
    this.#send.givePermitBack(entry);
    if (entry.slotHeld) {
      entry.slotHeld = false;
      this.#emit({ type: 'release-slot' });
    }
    const next = this.#book.ended(entry);
    if (next !== undefined && next.state === 'queued') this.#handle(next);
  }

  #plan(closing: boolean): TransactionPlan<O> | undefined {
    const prefix = this.#book.takePrefix(this.#o.ledger);
    const rest = { ahead: this.#book.doneAhead(), published: this.#book.inState('published') };
    const plan = planTransaction(this.claim, prefix, rest, this.#send.takeMarks(), this.#o.ledger, closing, this.#o.publishes);
    // (Ahead records stay in the book, `done`, until their transaction commits.)
    if (plan !== undefined) this.#committingDone = prefix.filter((entry) => entry.state === 'done');
    return plan;
  }

  #begin(plan: TransactionPlan<O>): void {
    this.#committing = plan;
    if (this.#retireCommit === 'due') this.#retireCommit = 'under-way';
    this.#emit({ type: 'transaction', plan });
  }

  /** Arms the next commit (commit-clock.ts): at once for marks, within the interval for results. */
  #scheduleCommit(urgent: boolean, clock: number): void {
    if (this.#state === 'failed' || this.#committing !== undefined || this.#closing) return;
    if (!this.#mayBegin) {
      this.#commitDeferred = true;
      return;
    }
    const delayMs = this.#commitClock.arm(urgent, clock);
    if (delayMs !== undefined) this.#emit({ type: 'arm-commit', delayMs });
  }

  #maybeEnd(): void {
    if (
      this.#state === 'active' ||
      this.#state === 'holding' ||
      this.#closing ||
      this.#state === 'ended' ||
      this.#book.inHand > 0 ||
      this.#committing !== undefined
    )
      return;
    this.#closing = true;
    this.#commitClock.disarm();
    this.#emit({ type: 'disarm-commit' });
    if (this.#state === 'failed') return this.#end('drained');
    this.#claimMove('drained', 'closing');
    const plan = this.#moved ? undefined : this.#plan(true);
    if (plan === undefined) return this.#end('closing-committed');
    this.#begin(plan);
  }

  #end(event: ClaimEvent): void {
    this.#claimMove(event, 'ended');
    this.#setBusy(false);
    this.#emit({ type: 'ended', ...(this.#failure === undefined ? {} : { failure: this.#failure }) });
  }

  #setBusy(busy: boolean): void {
    if (this.#busy === busy) return;
    this.#busy = busy;
    this.#emit({ type: 'busy', busy });
  }

  #claimMove(event: ClaimEvent, to: ClaimState): void {
    this.#state = moveClaim(this.#state, event, to);
  }

  #emit(effect: Effect<O>): void {
    this.#effects.push(effect);
  }
}
