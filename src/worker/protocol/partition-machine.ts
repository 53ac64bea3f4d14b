import type { OpenMark } from '../ledger-checkpoint.ts';
import type { PartitionClaim } from './claim.ts';
import { RecordBook, type RecordEntry } from './record-book.ts';
import { CLAIM_TRANSITIONS, RECORD_TRANSITIONS, transitionKeys, type ClaimEvent, type ClaimState, type RecordEvent, type RecordState } from './table.ts';
import type { Effect, TransactionPlan, Variant } from './effects.ts';

export type { Effect, TransactionPlan, Variant } from './effects.ts';

export interface MachineOptions {
  readonly claim: PartitionClaim;
  /** The intent ledger is on: a send waits for its mark to commit. */
  readonly ledger: boolean;
  /** Marks ahead of the calls are bounded by process-wide permits. */
  readonly markPermits: boolean;
  readonly maxRunAhead: number;
  readonly commitIntervalMs: number;
  readonly inDoubtPolicy: 'report' | 'resend';
  /** A known-bad variant, for the simulation's own test only. */
  readonly variant?: Variant;
}

/** What the machine says about a commandId it is shown. */
export type Identity =
  | { readonly kind: 'in-doubt'; readonly mark: OpenMark }
  | { readonly kind: 'duplicate'; readonly firstOffset: bigint }
  | { readonly kind: 'new'; readonly resent: boolean };

const RECORD_MOVES = transitionKeys(RECORD_TRANSITIONS);
const CLAIM_MOVES = transitionKeys(CLAIM_TRANSITIONS);

/**
 * The partition protocol for one claim, sans I/O: events in (methods), effects out (`take()`).
 * It decides when a record may call the service (its mark committed, a slot held, the lease
 * holding, the claim active), what each transaction carries (marks, the contiguous done prefix,
 * the checkpoint, the offset) and when the claim ends. States and moves: table.ts.
 * `clock` arguments are monotonic milliseconds; `at` is epoch milliseconds (for marks).
 */
export class PartitionMachine<O> {
  readonly claim: PartitionClaim;
  readonly #o: MachineOptions;
  readonly #variant: Variant;
  readonly #book = new RecordBook<O>();
  #effects: Effect<O>[] = [];
  #state: ClaimState = 'active';
  #failure: unknown;
  #closing = false;
  /** The transaction under way, if any. */
  #committing: TransactionPlan<O> | undefined;
  #lastCommitEnded = Number.NEGATIVE_INFINITY;
  /** When the armed commit is due (monotonic ms), if one is armed. */
  #commitDueAt: number | undefined;
  /** Marks opened and not yet in a transaction. */
  readonly #marksWaiting = new Set<bigint>();
  /** A mark was withdrawn: the next checkpoint must drop it, even with nothing else to commit. */
  #marksWithdrawn = false;
  #lastTaken = -1n;
  /** No new call may start (retired, failed, or a forced stop): waits are cut and sends refused. */
  #sendingStopped = false;
  #runAheadFull = false;
  #heldForBytes = false;
  #fetchHeld = false;
  #busy = false;

  constructor(options: MachineOptions) {
    this.#o = options;
    this.claim = options.claim;
    this.#variant = options.variant ?? 'correct';
  }

  /** The effects produced since the last call, in order. */
  drain(): Effect<O>[] {
    const out = this.#effects;
    this.#effects = [];
    return out;
  }

  get state(): ClaimState {
    return this.#state;
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
  recordState(offset: bigint): RecordState | undefined {
    return this.#book.has(offset) ? this.#book.get(offset).state : undefined;
  }

  /** Whether a fetched record may be taken: `skip` (answered or taken already), `closed`, `full` (run-ahead bound), `take`. */
  offer(offset: bigint, leaseHolds: boolean, clock: number): 'skip' | 'closed' | 'full' | 'take' {
    const { claim } = this;
    if (offset < claim.start || offset < claim.position.committed || offset <= this.#lastTaken) return 'skip';
    if (!this.accepting || !leaseHolds) return 'closed';
    if (this.#book.pending >= this.#o.maxRunAhead) {
      this.#runAheadFull = true;
      this.#syncHold();
      this.#scheduleCommit(false, clock);
      return 'full';
    }
    return 'take';
  }

  /** The process holds as many record bytes as it may: stop fetching until `bytesFreed`. */
  heldForBytes(): void {
    this.#heldForBytes = true;
    this.#syncHold();
  }
  bytesFreed(): void {
    this.#heldForBytes = false;
    this.#syncHold();
  }

  /** The fetch loop took the record (after `offer` said `take` and its bytes were had). */
  take(offset: bigint, key: string): void {
    const entry = this.#book.add(offset, key);
    this.#lastTaken = offset;
    this.#setBusy(true);
    this.#emit({ type: 'progress' });
    if (this.#book.isFirstOfKey(entry)) this.#handle(entry);
  }

  /** The record's commandId: reported in doubt (an earlier owner's mark), a repeat, or new (remembered). */
  identify(offset: bigint, commandId: string): Identity {
    const { claim } = this;
    this.#book.get(offset).commandId = commandId;
    const inherited = claim.inDoubt.get(offset);
    if (inherited !== undefined && this.#o.inDoubtPolicy === 'report') {
      claim.dedup.remember(commandId, offset);
      return { kind: 'in-doubt', mark: inherited };
    }
    const first = claim.dedup.firstOffset(commandId);
    if (first !== undefined && first !== offset) return { kind: 'duplicate', firstOffset: first };
    claim.dedup.remember(commandId, offset);
    return { kind: 'new', resent: inherited !== undefined };
  }

  /** The record passed the gate, holds and rate limit and asks to call the service. */
  wantSend(offset: bigint, leaseHolds: boolean, at: number, clock: number): void {
    const entry = this.#book.get(offset);
    if (!this.#maySend(leaseHolds)) return this.#refuse(entry, 'stop', 'handling');
    if (!this.#o.ledger) {
      if (entry.slotHeld) return this.#call(entry, 'want-send');
      this.#move(entry, 'want-send', 'awaiting-slot');
      return this.#emit({ type: 'acquire-slot', offset });
    }
    if (!entry.slotHeld && this.#o.markPermits) {
      this.#move(entry, 'want-send', 'awaiting-permit');
      return this.#emit({ type: 'acquire-permit', offset });
    }
    this.#openMark(entry, 'want-send', at, clock);
  }

  permitGranted(offset: bigint, at: number, clock: number): void {
    const entry = this.#book.has(offset) ? this.#book.get(offset) : undefined;
    if (entry?.state !== 'awaiting-permit') return this.#emit({ type: 'release-permit' });
    entry.permitHeld = true;
    this.#openMark(entry, 'permit-granted', at, clock);
  }

  slotGranted(offset: bigint, leaseHolds: boolean): void {
    const entry = this.#book.has(offset) ? this.#book.get(offset) : undefined;
    if (entry === undefined || !RecordBook.inHand(entry.state)) return this.#emit({ type: 'release-slot' });
    entry.slotHeld = true;
    if (entry.state !== 'awaiting-slot') return;
    this.#givePermitBack(entry);
    if (this.#maySend(leaseHolds)) return this.#call(entry, 'slot-granted');
    this.#refuse(entry, 'slot-granted', 'handling');
  }

  /** A permit or slot wait was cut by its driver: the record, if still waiting for it, is refused. */
  waitCut(offset: bigint): void {
    const entry = this.#book.has(offset) ? this.#book.get(offset) : undefined;
    if (entry?.state === 'awaiting-permit' || entry?.state === 'awaiting-slot') this.#refuse(entry, 'stop', 'handling');
  }

  /** A forced stop: no new call starts; waits for a permit, a mark or a slot are cut (the claim goes on committing). */
  stopSending(): void {
    if (this.#sendingStopped) return;
    this.#stopWaits();
  }

  /** The call surely did not reach the service (or was refused) and the command is kept: withdraw its mark. */
  notSent(offset: bigint): void {
    const entry = this.#book.get(offset);
    this.#move(entry, 'not-sent', 'handling');
    this.#withdraw(offset);
  }

  finished(offset: bigint, outcome: O, clock: number): void {
    const entry = this.#book.get(offset);
    this.#move(entry, 'finished', 'done');
    entry.outcome = outcome;
    this.#ended(entry);
    this.#scheduleCommit(false, clock);
    this.#maybeEnd();
  }

  /** No outcome. `maybeSent`: a call was cut under way (shutdown): its mark stays, the next owner reports UNKNOWN. */
  abandoned(offset: bigint, maybeSent: boolean): void {
    const entry = this.#book.get(offset);
    this.#move(entry, 'abandoned', 'given-up');
    if (entry.commandId !== undefined) this.claim.dedup.forget(entry.commandId, offset);
    if (!maybeSent) this.#withdraw(offset);
    this.#ended(entry);
    this.#maybeEnd();
  }

  /** A bug in handling (not a record problem): the record is given up and the claim fails. */
  crashed(offset: bigint, error: unknown): void {
    const entry = this.#book.get(offset);
    entry.state = 'given-up';
    this.#ended(entry);
    this.fail(error);
  }

  /** The armed commit is due. */
  commitDue(clock: number): void {
    this.#commitDueAt = undefined;
    if (this.#state === 'failed' || this.#committing !== undefined || this.#closing) return;
    const plan = this.#plan(false);
    if (plan === undefined) {
      this.#lastCommitEnded = clock;
      this.#maybeEnd();
      return;
    }
    this.#begin(plan);
  }

  transactionCommitted(clock: number, leaseHolds: boolean): void {
    const plan = this.#committing;
    if (plan === undefined) return;
    this.#committing = undefined;
    this.#lastCommitEnded = clock;
    const { claim } = this;
    for (const offset of plan.marks) {
      const entry = this.#book.has(offset) ? this.#book.get(offset) : undefined;
      if (entry?.state !== 'marking') continue;
      if (entry.slotHeld) {
        this.#givePermitBack(entry);
        if (this.#maySend(leaseHolds)) this.#call(entry, 'mark-committed');
        else this.#refuse(entry, 'mark-committed', 'handling');
      } else {
        this.#move(entry, 'mark-committed', 'awaiting-slot');
        this.#emit({ type: 'acquire-slot', offset });
      }
    }
    if (plan.commitOffset !== undefined) {
      const next = plan.commitOffset;
      claim.position.committed = next;
      for (const offset of [...claim.open.keys()]) if (offset < next) claim.open.delete(offset);
      for (const offset of [...claim.inDoubt.keys()]) if (offset < next) claim.inDoubt.delete(offset);
      this.#emit({ type: 'committed', next, outcomes: plan.outcomes });
    }
    if (this.#runAheadFull && this.#book.pending <= Math.floor(this.#o.maxRunAhead / 2)) {
      this.#runAheadFull = false;
      this.#syncHold();
    }
    if (this.#book.pending === 0) this.#setBusy(false);
    this.#emit({ type: 'progress' });
    if (plan.closing) return this.#end('closing-committed');
    if (this.#marksWaiting.size > 0) this.#scheduleCommit(true, clock);
    else if (this.#book.pending > 0) this.#scheduleCommit(false, clock);
    this.#maybeEnd();
  }

  transactionFailed(error: unknown, clock: number): void {
    const plan = this.#committing;
    if (plan === undefined) return;
    this.#committing = undefined;
    this.#lastCommitEnded = clock;
    if (plan.closing) {
      this.#failure = error;
      return this.#end('closing-failed');
    }
    if (this.#state === 'failed') this.#maybeEnd();
    else this.fail(error);
  }

  /** A rebalance or shutdown: take no more records; waits for a permit, a mark or a slot are cut; calls under way finish. */
  retire(): void {
    if (this.#state !== 'active') return;
    this.#claimMove('retire', 'retiring');
    this.#stopWaits();
    this.#releaseHolds();
    this.#maybeEnd();
  }

  fail(error: unknown): void {
    if (this.#state === 'failed' || this.#state === 'ended' || this.#closing) return;
    this.#claimMove('fail', 'failed');
    this.#failure = error;
    this.#emit({ type: 'abort-all', error });
    this.#stopWaits();
    this.#releaseHolds();
    this.#maybeEnd();
  }

  #handle(entry: RecordEntry<O>): void {
    this.#move(entry, 'predecessor-ended', 'handling');
    this.#emit({ type: 'handle', offset: entry.offset });
  }

  #openMark(entry: RecordEntry<O>, event: RecordEvent, at: number, clock: number): void {
    const { claim } = this;
    if (!claim.open.has(entry.offset)) {
      claim.open.set(entry.offset, { offset: entry.offset, commandId: entry.commandId ?? '', at });
      this.#emit({ type: 'mark-opened' });
    }
    if (this.#variant === 'send-before-mark-commits') {
      // Known bad: the call does not wait for the mark's transaction.
      this.#marksWaiting.add(entry.offset);
      this.#scheduleCommit(true, clock);
      if (entry.slotHeld) return this.#call(entry, event);
      entry.state = 'awaiting-slot';
      return this.#emit({ type: 'acquire-slot', offset: entry.offset });
    }
    this.#move(entry, event, 'marking');
    this.#marksWaiting.add(entry.offset);
    this.#scheduleCommit(true, clock);
  }

  #call(entry: RecordEntry<O>, event: RecordEvent): void {
    this.#move(entry, event, 'calling');
    entry.called = true;
    this.#emit({ type: 'call', offset: entry.offset });
  }

  #refuse(entry: RecordEntry<O>, event: RecordEvent, to: RecordState): void {
    this.#move(entry, event, to);
    this.#givePermitBack(entry);
    this.#marksWaiting.delete(entry.offset);
    this.#emit({ type: 'refuse-call', offset: entry.offset });
  }

  #givePermitBack(entry: RecordEntry<O>): void {
    if (!entry.permitHeld) return;
    entry.permitHeld = false;
    this.#emit({ type: 'release-permit' });
  }

  #withdraw(offset: bigint): void {
    if (this.claim.open.delete(offset)) this.#marksWithdrawn = true;
    this.#marksWaiting.delete(offset);
  }

  #ended(entry: RecordEntry<O>): void {
    this.#givePermitBack(entry);
    if (entry.slotHeld) {
      entry.slotHeld = false;
      this.#emit({ type: 'release-slot' });
    }
    const next = this.#book.ended(entry);
    if (next !== undefined && next.state === 'queued') this.#handle(next);
  }

  #maySend(leaseHolds: boolean): boolean {
    return this.accepting && !this.#sendingStopped && leaseHolds;
  }

  /** Retiring, failing or a forced stop: every wait for a permit, a mark or a slot is cut, and no call starts any more. */
  #stopWaits(): void {
    this.#sendingStopped = true;
    for (const entry of this.#book.inState('awaiting-permit', 'marking', 'awaiting-slot')) this.#refuse(entry, 'stop', 'handling');
    this.#emit({ type: 'stop-waits' });
  }

  /** The claim takes no more records: neither bound holds the partition's fetching any more. */
  #releaseHolds(): void {
    this.#runAheadFull = false;
    this.#heldForBytes = false;
    this.#emit({ type: 'cancel-bytes-wait' });
    this.#syncHold();
  }

  #plan(closing: boolean): TransactionPlan<O> | undefined {
    const { claim } = this;
    const prefix = this.#book.takePrefix(this.#variant === 'commit-past-unfinished');
    const marks = [...this.#marksWaiting];
    this.#marksWaiting.clear();
    if (prefix.length === 0 && marks.length === 0 && !(this.#marksWithdrawn && this.#o.ledger)) return undefined;
    this.#marksWithdrawn = false;
    const last = prefix.at(-1);
    const commitOffset = last === undefined ? undefined : last.offset + 1n;
    const next = commitOffset ?? claim.position.committed;
    const checkpoint = this.#o.ledger ? { next, open: [...claim.open.values()].filter((m) => m.offset >= next) } : undefined;
    return { marks, outcomes: prefix.map((entry) => entry.outcome as O), offsets: prefix.map((e) => e.offset), commitOffset, checkpoint, closing };
  }

  #begin(plan: TransactionPlan<O>): void {
    this.#committing = plan;
    this.#emit({ type: 'transaction', plan });
  }

  /**
   * `urgent`: marks wait (a send waits for them): commit as soon as the current transaction ends.
   * Results alone commit at most once per commitIntervalMs: at once when the last transaction ended
   * longer ago than that, else when the interval since it is up.
   */
  #scheduleCommit(urgent: boolean, clock: number): void {
    if (this.#state === 'failed' || this.#committing !== undefined || this.#closing) return;
    const wait = this.#o.commitIntervalMs - (clock - this.#lastCommitEnded);
    const delayMs = urgent || wait <= 0 ? 0 : wait;
    const dueAt = clock + delayMs;
    if (this.#commitDueAt !== undefined && this.#commitDueAt <= dueAt) return;
    this.#commitDueAt = dueAt;
    this.#emit({ type: 'arm-commit', delayMs });
  }

  #maybeEnd(): void {
    if (this.accepting || this.#closing || this.#state === 'ended' || this.#book.inHand > 0 || this.#committing !== undefined) return;
    this.#closing = true;
    this.#commitDueAt = undefined;
    this.#emit({ type: 'disarm-commit' });
    if (this.#state === 'failed') return this.#end('drained');
    this.#claimMove('drained', 'closing');
    const plan = this.#plan(true);
    if (plan === undefined) return this.#end('closing-committed');
    this.#begin(plan);
  }

  #end(event: ClaimEvent): void {
    this.#claimMove(event, 'ended');
    this.#setBusy(false);
    this.#emit({ type: 'ended', ...(this.#failure === undefined ? {} : { failure: this.#failure }) });
  }

  #syncHold(): void {
    const held = this.accepting && (this.#runAheadFull || this.#heldForBytes);
    if (this.#fetchHeld === held) return;
    this.#fetchHeld = held;
    this.#emit({ type: 'hold-fetching', held });
  }

  #setBusy(busy: boolean): void {
    if (this.#busy === busy) return;
    this.#busy = busy;
    this.#emit({ type: 'busy', busy });
  }

  #move(entry: RecordEntry<O>, event: RecordEvent, to: RecordState): void {
    if (this.#variant === 'correct' && !RECORD_MOVES.has(`${entry.state}|${event}|${to}`))
      throw new Error(`partition protocol: record ${entry.offset} cannot go from ${entry.state} to ${to} on ${event}`);
    entry.state = to;
  }

  #claimMove(event: ClaimEvent, to: ClaimState): void {
    if (!CLAIM_MOVES.has(`${this.#state}|${event}|${to}`)) throw new Error(`partition protocol: the claim cannot go from ${this.#state} to ${to} on ${event}`);
    this.#state = to;
  }

  #emit(effect: Effect<O>): void {
    this.#effects.push(effect);
  }
}
