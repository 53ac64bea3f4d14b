import type { Checkpoint, OpenMark } from '../lane/ledger-checkpoint.ts';

/** One transaction of a partition: the marks it commits, the done prefix, the checkpoint and the offset. */
export interface TransactionPlan<O> {
  /** Marks opened since the last transaction: their sends wait for this one. */
  readonly marks: readonly bigint[];
  /** Outcomes to publish, in offset order: the contiguous prefix's not yet published, then those ahead of it. */
  readonly outcomes: readonly O[];
  /** The contiguous prefix this transaction commits the offset past. */
  readonly offsets: readonly bigint[];
  /** Records past an unfinished one whose outcomes this transaction publishes (ledger on): answered from then on. */
  readonly ahead: readonly bigint[];
  /** The next offset to consume (undefined: a transaction of marks alone). */
  readonly commitOffset: bigint | undefined;
  /** The ledger checkpoint (ledger on): the offset, the marks still open at or past it, and the records past it already answered. */
  readonly checkpoint: Checkpoint | undefined;
  /** What tells, should this transaction fail on the client, whether it committed on the broker after all (transaction-plan.ts, readBackFor). */
  readonly readBack: ReadBack;
  /** The claim's last transaction: the lane ends with it. */
  readonly closing: boolean;
}

/**
 * What tells, after a transaction failed on the client, whether it committed on the broker after
 * all (a lost EndTxn answer), once the partition's producer is initialised again (which ends it
 * either way). Ledger on: the ledger's newest checkpoint, written in the same transaction and read
 * to its end after that fence (exact), for a transaction that moved the offset or published
 * results or dead letters ahead of it. Ledger off: the group's committed offset (which may be read
 * stale without KIP-447: docs/guarantees.md). Anything else it wrote (marks, a checkpoint, repeats)
 * is written again harmlessly: `nothing`. `floor` (ledger on): the newest checkpoint the claim
 * committed (or read when it claimed). Initialising the producer again
 * aborts the failed transaction, and with it whatever of an earlier one Kafka left open in the same
 * partitions (its markers lost in a broker's restart: docs/operations.md); a ledger read back below
 * the floor says that happened, whatever the failed transaction wrote (readBackVerdict).
 */
export type ReadBack =
  | { readonly by: 'offset'; readonly offset: bigint }
  | { readonly by: 'checkpoint'; readonly written: Checkpoint; readonly floor?: Checkpoint }
  | { readonly by: 'nothing'; readonly floor?: Checkpoint };

/** What the machine asks its driver (the lane, or the simulation) to do. */
export type Effect<O> =
  /** Decode, check and (maybe) send the record: the handler reports back with `wantSend`, `finished` or `abandoned`. */
  | { readonly type: 'handle'; readonly offset: bigint }
  | { readonly type: 'acquire-permit'; readonly offset: bigint }
  | { readonly type: 'release-permit' }
  | { readonly type: 'acquire-slot'; readonly offset: bigint }
  | { readonly type: 'release-slot' }
  /** The record may call the service now. */
  | { readonly type: 'call'; readonly offset: bigint }
  /** The record must not call: it gives up unsent (or waits at the gate again if the handler keeps it). */
  | { readonly type: 'refuse-call'; readonly offset: bigint }
  | { readonly type: 'mark-opened' }
  /** Arm the commit timer (replacing an armed one); 0 = as soon as possible. */
  | { readonly type: 'arm-commit'; readonly delayMs: number }
  | { readonly type: 'disarm-commit' }
  | { readonly type: 'transaction'; readonly plan: TransactionPlan<O> }
  /** A transaction committed these outcomes (and the offset `next`). */
  | { readonly type: 'committed'; readonly next: bigint; readonly outcomes: readonly O[] }
  | { readonly type: 'hold-fetching'; readonly held: boolean }
  | { readonly type: 'busy'; readonly busy: boolean }
  | { readonly type: 'progress' }
  /** Cut pending permit and slot acquisitions (their grants, if they still come, are given back). */
  | { readonly type: 'stop-waits' }
  /** The claim failed: cut every wait of every record (decoding, the gate, calls under way finish). */
  | { readonly type: 'abort-all'; readonly error: unknown }
  | { readonly type: 'cancel-bytes-wait' }
  /**
   * The claim no longer works the partition (retiring, failed): tell the next owner what became of
   * a marked record, outside any transaction (a new owner's fence may abort this claim's last
   * ones): its outcome, or `withdrawn` (undefined: the call never started and never will here).
   */
  | { readonly type: 'handover'; readonly offset: bigint; readonly mark: OpenMark; readonly outcome: O | undefined }
  | { readonly type: 'ended'; readonly failure?: unknown };
