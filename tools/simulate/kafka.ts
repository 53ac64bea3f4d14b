import type { Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';
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
  /** The transaction that wrote it. */
  checkpointTxn?: number;
  /** Offsets whose mark some committed checkpoint listed. */
  readonly marked: Set<number>;
  /** Handover records, in the order written (outside transactions: visible at once, never aborted). */
  readonly handovers: Handover[];
  /**
   * Parts of transactions its coordinator committed whose markers were lost (`lostMarkers`), oldest
   * first: open in their partition until the partition's producer (any epoch: the same producer
   * id) writes its next marker there, which commits or aborts them with its own transaction.
   */
  readonly hanging: HangingPart[];
  /** Aborted transactions whose ABORT marker also ended lost ones: their checkpoints in the order written (the last is the abort's own). */
  readonly aborted: { readonly txn: number; readonly checkpoints: readonly Checkpoint[] }[];
}

/** Where a transaction's records are: its results, the ledger (its checkpoint), the group's offsets. */
type TxnPart = 'results' | 'checkpoint' | 'offset';

/** A part of a committed transaction still waiting for its marker. */
interface HangingPart {
  readonly part: TxnPart;
  readonly txn: Txn;
}

/** What an owner that stopped working a partition said of one of its marks: the record's outcome, or withdrawn (never called). */
export interface Handover {
  readonly offset: number;
  readonly by: string;
  readonly outcome: SimOutcome | 'withdrawn';
}

/** The chance that a committed transaction, under faults, loses its ledger marker (and each other part's, half the time). */
const LOST_MARKERS_CHANCE = 0.05;

/** The checkpoints among hanging parts, in the order written. */
function checkpointsIn(parts: readonly HangingPart[]): Checkpoint[] {
  return parts.flatMap((h) => (h.part === 'checkpoint' && h.txn.plan.checkpoint !== undefined ? [h.txn.plan.checkpoint] : []));
}

/** The parts a transaction writes. */
function partsOf(txn: Txn): TxnPart[] {
  const { plan } = txn;
  return [
    ...(plan.outcomes.length > 0 ? (['results'] as const) : []),
    ...(plan.checkpoint !== undefined ? (['checkpoint'] as const) : []),
    ...(plan.commitOffset !== undefined ? (['offset'] as const) : []),
  ];
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
  /** Draws the lost markers (RunOptions.lostMarkers), from a stream of their own: every other draw of a seed stays as it was. */
  readonly #lostMarkers: Prng | undefined;
  #txns = 0;

  constructor(logs: readonly (readonly CommandRecord[])[], checks: Checks, prng: Prng, staleOffsets: boolean, lostMarkers?: Prng) {
    this.#parts = logs.map((records) => ({
      records,
      epoch: 0,
      offsets: [0],
      checkpoint: undefined,
      marked: new Set<number>(),
      handovers: [],
      hanging: [],
      aborted: [],
    }));
    this.#checks = checks;
    this.#prng = prng;
    this.#staleOffsets = staleOffsets;
    this.#lostMarkers = lostMarkers;
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
    const touched = partsOf(txn);
    // Its markers end whatever of the producer's was left open in the same parts, with its own fate.
    const ended = this.#mark(part, touched, outcome !== 'failed');
    if (outcome === 'failed') {
      // One ABORT marker ended the lost ones' checkpoints with this one's: what the ledger shows.
      const lost = checkpointsIn(ended);
      if (lost.length > 0 && txn.plan.checkpoint !== undefined) part.aborted.push({ txn: txn.id, checkpoints: [...lost, txn.plan.checkpoint] });
      return outcome;
    }
    this.#checks.applied(txn.partition, txn.epoch, part.epoch);
    // A coordinator that restarts while it writes the markers may complete the transaction with
    // some of them never written (Kafka 4.3.1, docs/operations.md): those parts stay open. Only
    // with the ledger's checkpoint among them, the loss a claim can see (its ledger partition's
    // end held back).
    const lost = this.#lostMarkers !== undefined && faulty && touched.includes('checkpoint') && this.#lostMarkers.chance(LOST_MARKERS_CHANCE);
    const kept = lost ? touched.filter((p) => p !== 'checkpoint' && this.#lostMarkers?.chance(0.5) !== true) : touched;
    for (const p of touched) if (!kept.includes(p)) part.hanging.push({ part: p, txn });
    this.#apply(part, txn, kept);
    if (lost) this.#markedIn(part, txn);
    return outcome;
  }

  /** The checkpoints of the ledger partition's transaction left open (parts whose markers were lost), oldest first. */
  hangingCheckpoints(partition: number): Checkpoint[] {
    return checkpointsIn(this.#part(partition).hanging);
  }

  /**
   * A claim ends the hanging transaction (TransactionalProducers.settle): with `kept`, a committed
   * transaction of that checkpoint in the ledger partition, whose marker commits what was open there
   * before it; without, one aborted record, whose marker aborts it.
   */
  settleLedger(partition: number, kept: Checkpoint | undefined): void {
    const part = this.#part(partition);
    this.#mark(part, ['checkpoint'], kept !== undefined);
    if (kept === undefined) return;
    part.checkpoint = kept;
    part.checkpointTxn = ++this.#txns;
    for (const mark of kept.open) part.marked.add(Number(mark.offset));
  }

  /** The producer's marker in `parts`: what it had open there commits (`commit`) or is aborted. Returns what it ended. */
  #mark(part: PartitionState, parts: readonly TxnPart[], commit: boolean): HangingPart[] {
    const ended = part.hanging.filter((h) => parts.includes(h.part));
    if (ended.length === 0) return ended;
    part.hanging.splice(0, part.hanging.length, ...part.hanging.filter((h) => !parts.includes(h.part)));
    if (commit) for (const h of ended) this.#apply(part, h.txn, [h.part]);
    else for (const h of ended) this.#abortedParts.add(`${h.txn.id}:${h.part}`);
    return ended;
  }

  /** Parts of committed transactions (`txn:part`) that a later ABORT marker ended (their markers lost). */
  readonly #abortedParts = new Set<string>();

  /**
   * Whether the results of committed transaction `txn` were aborted (its markers lost, then the
   * producer's next marker there an ABORT): what a claim reads back in the result partitions
   * (partition-transaction.ts, abortedOf).
   */
  resultsAborted(txn: number): boolean {
    return this.#abortedParts.has(`${txn}:results`);
  }

  /**
   * The checkpoints of aborted transactions written after the newest committed one that were not
   * their abort's own (every one but the last of each): a claim's read after its fence
   * (ledger-store.ts readAfterFence) cannot tell whether they committed.
   */
  abortedUnsure(partition: number): Checkpoint[] {
    const part = this.#part(partition);
    return part.aborted.filter((a) => a.txn > (part.checkpointTxn ?? 0)).flatMap((a) => a.checkpoints.slice(0, -1));
  }

  /** A transaction whose coordinator committed it: its checkpoint's marks count as committed for honesty, whatever became of its markers. */
  #markedIn(part: PartitionState, txn: Txn): void {
    for (const mark of txn.plan.checkpoint?.open ?? []) part.marked.add(Number(mark.offset));
  }

  #apply(part: PartitionState, txn: Txn, parts: readonly TxnPart[] = partsOf(txn)): void {
    const { plan } = txn;
    if (parts.includes('results')) {
      for (const outcome of plan.outcomes) this.#checks.result(txn.partition, outcome, part.marked.has(outcome.offset));
      for (const outcome of plan.outcomes) if (outcome.kind === 'duplicate') this.#checks.repeat(txn.partition, outcome);
    }
    // An older checkpoint committed late never replaces a newer one (compaction keeps the newest offset's record).
    if (plan.checkpoint !== undefined && parts.includes('checkpoint') && (part.checkpointTxn ?? 0) < txn.id) {
      part.checkpoint = plan.checkpoint;
      part.checkpointTxn = txn.id;
      for (const mark of plan.checkpoint.open) part.marked.add(Number(mark.offset));
    }
    if (plan.commitOffset !== undefined && parts.includes('offset')) {
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
