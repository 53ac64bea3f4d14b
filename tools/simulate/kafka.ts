import type { Checkpoint } from '../../src/worker/ledger-checkpoint.ts';
import type { TransactionPlan } from '../../src/worker/protocol/effects.ts';
import type { Checks } from './invariants.ts';
import type { CommandRecord, SimOutcome } from './model.ts';
import type { Prng } from './prng.ts';

/** A partition's transaction, as its producer (of `epoch`) sent it. */
export interface Txn {
  readonly id: number;
  readonly partition: number;
  readonly epoch: number;
  readonly process: number;
  readonly plan: TransactionPlan<SimOutcome>;
}

/**
 * How a transaction ended at the broker: committed; failed and not applied; ambiguous (applied,
 * but its producer is told it failed: a lost EndTxn answer); fenced (an older epoch: never applied).
 */
export type TxnOutcome = 'committed' | 'failed' | 'ambiguous' | 'fenced';

interface PartitionState {
  readonly records: readonly CommandRecord[];
  /** The transactional producer's epoch: fencing bumps it, aborting older producers' transactions. */
  epoch: number;
  /** Every group offset committed, oldest first (a read without KIP-447 may return the one before the newest). */
  readonly offsets: number[];
  /** The ledger's newest checkpoint (compaction keeps only it). */
  checkpoint: Checkpoint | undefined;
  /** Offsets whose mark some committed checkpoint listed. */
  readonly marked: Set<number>;
  /** Handover records, in the order written (outside transactions: visible at once, never aborted). */
  readonly handovers: Handover[];
}

/** What an owner that stopped working a partition said of one of its marks: the record's outcome, or withdrawn (never called). */
export interface Handover {
  readonly offset: number;
  readonly by: string;
  readonly outcome: SimOutcome | 'withdrawn';
}

/**
 * The Kafka side of the world, per command partition: its log, its producer epoch, the group's
 * committed offsets, the ledger's newest checkpoint and the results. A committed transaction
 * applies atomically: results, checkpoint and offset.
 */
export class Kafka {
  readonly #parts: PartitionState[];
  readonly #checks: Checks;
  readonly #prng: Prng;
  readonly #staleOffsets: boolean;
  #txns = 0;

  constructor(logs: readonly (readonly CommandRecord[])[], checks: Checks, prng: Prng, staleOffsets: boolean) {
    this.#parts = logs.map((records) => ({ records, epoch: 0, offsets: [0], checkpoint: undefined, marked: new Set<number>(), handovers: [] }));
    this.#checks = checks;
    this.#prng = prng;
    this.#staleOffsets = staleOffsets;
  }

  records(partition: number): readonly CommandRecord[] {
    return this.#part(partition).records;
  }

  /** InitProducerId: the epoch goes up; every transaction of an older epoch fails as fenced from now on. */
  fence(partition: number): number {
    const part = this.#part(partition);
    part.epoch += 1;
    return part.epoch;
  }

  epoch(partition: number): number {
    return this.#part(partition).epoch;
  }

  /** The group's committed offset: without KIP-447 the newest commit may not be visible yet. */
  readGroupOffset(partition: number): number {
    const { offsets } = this.#part(partition);
    const stale = this.#staleOffsets && offsets.length > 1 && this.#prng.chance(0.3);
    return offsets[offsets.length - (stale ? 2 : 1)] ?? 0;
  }

  /** The newest committed offset, as it truly is. */
  committed(partition: number): number {
    const { offsets } = this.#part(partition);
    return offsets[offsets.length - 1] ?? 0;
  }

  /** The ledger's newest checkpoint, read to its end (`read_committed`). */
  checkpoint(partition: number): Checkpoint | undefined {
    return this.#part(partition).checkpoint;
  }

  /** A handover record is written to the ledger partition (a plain produce: no transaction, no epoch). */
  writeHandover(partition: number, handover: Handover): void {
    this.#part(partition).handovers.push(handover);
  }

  /**
   * The handover of one mark (offset and name), if written: what a new owner's scan of the ledger
   * partition finds. The known-bad `byOffset` matches the record's offset alone, taking whatever
   * handover of it was written last, by any claim.
   */
  findHandover(partition: number, offset: number, by: string | undefined, byOffset: boolean): Handover | undefined {
    const { handovers } = this.#part(partition);
    for (let i = handovers.length - 1; i >= 0; i--) {
      const handover = handovers[i];
      if (handover !== undefined && handover.offset === offset && (byOffset || (by !== undefined && handover.by === by))) return handover;
    }
    return undefined;
  }

  begin(partition: number, epoch: number, process: number, plan: TransactionPlan<SimOutcome>): Txn {
    return { id: ++this.#txns, partition, epoch, process, plan };
  }

  /** The broker ends the transaction (`faulty`: it may fail or be ambiguous); applies it if it commits. */
  settle(txn: Txn, faulty: boolean): TxnOutcome {
    const part = this.#part(txn.partition);
    if (txn.epoch !== part.epoch) return 'fenced';
    const outcome: TxnOutcome = faulty ? this.#prng.weighted({ committed: 0.86, failed: 0.07, ambiguous: 0.07 }) : 'committed';
    if (outcome !== 'failed') this.#apply(part, txn);
    return outcome;
  }

  #apply(part: PartitionState, txn: Txn): void {
    this.#checks.applied(txn.partition, txn.epoch, part.epoch);
    const { plan } = txn;
    for (const outcome of plan.outcomes) this.#checks.result(txn.partition, outcome, part.marked.has(outcome.offset));
    for (const outcome of plan.outcomes) if (outcome.kind === 'duplicate') this.#checks.repeat(txn.partition, outcome);
    if (plan.checkpoint !== undefined) {
      part.checkpoint = plan.checkpoint;
      for (const mark of plan.checkpoint.open) part.marked.add(Number(mark.offset));
    }
    if (plan.commitOffset !== undefined) {
      part.offsets.push(Number(plan.commitOffset));
      this.#checks.offsetCommitted(txn.partition, Number(plan.commitOffset));
    }
  }

  #part(partition: number): PartitionState {
    const part = this.#parts[partition];
    if (part === undefined) throw new Error(`no partition ${partition}`);
    return part;
  }
}
