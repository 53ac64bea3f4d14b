/**
 * A broker-free stand-in for the worker's transactional producers (src/kafka/ports.ts): it
 * records every transaction (records per topic, the offsets it commits, its fate) and keeps the
 * group's committed offset per partition as a broker would, so tests can assert on what a reader
 * of the result, dead-letter and ledger topics would see.
 */
import {
  BatchTooLargeError,
  FencedError,
  type OutgoingRecord,
  type PartitionProducers,
  type TransactionOffsets,
  type TransactionalSession,
  type WrittenBatch,
} from '../../src/kafka/ports.ts';
import { decodeCheckpoint, type Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';

export interface RecordedTransaction {
  readonly id: number;
  readonly sends: { topic: string; messages: OutgoingRecord[] }[];
  offsets: TransactionOffsets | undefined;
  state: 'open' | 'committed' | 'aborted';
  /** performance.now() when the commit was asked for. */
  committedAt: number | undefined;
}

/**
 * How the commit of a transaction ends: `ok`; `fenced` (another producer took over the id);
 * `fail` (the broker aborts it: nothing committed); `lost-answer` (the broker committed it but
 * the client never learnt: EndTxn's answer was lost).
 */
export type CommitFate = 'ok' | 'fenced' | 'fail' | 'lost-answer';

export class FakeProducers implements PartitionProducers {
  readonly transactions: RecordedTransaction[] = [];
  /** The group's committed offset per `topic:partition`, as committed transactions left it. */
  readonly groupOffsets = new Map<string, bigint>();
  discards = 0;
  sessions = 0;
  /** Decides each commit's fate; `ok` by default. */
  fate: (transaction: RecordedTransaction) => CommitFate = () => 'ok';
  /** Whether an abort's EndTxn fails (the coordinator moved meanwhile): the transaction stays open. */
  abortFails: (transaction: RecordedTransaction) => boolean = () => false;
  /** Sends larger than this (key + value bytes) are refused as the broker refuses them. */
  maxSendBytes = Number.POSITIVE_INFINITY;
  /** Called as each transaction commits (after its effects are visible). */
  onCommit: (transaction: RecordedTransaction) => void = () => undefined;

  /** Whether a producer is there for the claim's generation (a retiring lane may commit with it). */
  present = true;

  has(): boolean {
    return this.present;
  }

  /** Generations carried (a kept claim), as `topic:partition from→to`. */
  readonly carried: string[] = [];

  carry(topic: string, partition: number, from: number, to: number): boolean {
    if (!this.present) return false;
    this.carried.push(`${topic}:${partition} ${from}→${to}`);
    return true;
  }

  /** Each topic-partition's log end, as a broker counts it: every record sent, whatever became of its transaction. */
  readonly #ends = new Map<string, bigint>();

  /** Where a send's records land: one batch per partition, from that partition's end. */
  #write(topic: string, messages: readonly OutgoingRecord[]): WrittenBatch[] {
    const counts = new Map<number, number>();
    for (const m of messages) counts.set(m.partition ?? 0, (counts.get(m.partition ?? 0) ?? 0) + 1);
    return [...counts].map(([partition, count]) => {
      const key = `${topic}:${partition}`;
      const baseOffset = this.#ends.get(key) ?? 0n;
      this.#ends.set(key, baseOffset + BigInt(count));
      return { topic, partition, baseOffset };
    });
  }

  async forPartition(): Promise<TransactionalSession> {
    this.sessions += 1;
    return {
      transaction: async () => {
        const tx: RecordedTransaction = { id: this.transactions.length, sends: [], offsets: undefined, state: 'open', committedAt: undefined };
        this.transactions.push(tx);
        return {
          send: async (batches) => {
            if (tx.state !== 'open') throw new Error('transaction is not open');
            for (const batch of batches) {
              const bytes = batch.messages.reduce((sum, m) => sum + (m.key === null ? 0 : Buffer.byteLength(m.key)) + m.value.length, 0);
              if (bytes > this.maxSendBytes) throw new BatchTooLargeError(`a send of ${bytes} bytes is over the limit`);
            }
            for (const batch of batches) tx.sends.push({ topic: batch.topic, messages: [...batch.messages] });
            return batches.flatMap((batch) => this.#write(batch.topic, batch.messages));
          },
          sendOffsets: async (offsets) => {
            tx.offsets = offsets;
          },
          commit: async () => {
            const fate = this.fate(tx);
            if (fate === 'fenced') {
              tx.state = 'aborted';
              throw new FencedError('fenced by a newer producer');
            }
            if (fate === 'fail') throw new Error('The coordinator is not available');
            this.#apply(tx);
            if (fate === 'lost-answer') throw new Error('Request EndTxn timed out');
          },
          abort: async () => {
            if (this.abortFails(tx)) throw new Error('This is not the correct coordinator for this group');
            if (tx.state === 'open') tx.state = 'aborted';
          },
        };
      },
    };
  }

  async discard(): Promise<void> {
    this.discards += 1;
  }

  #apply(tx: RecordedTransaction): void {
    tx.state = 'committed';
    tx.committedAt = performance.now();
    for (const group of tx.offsets?.topics ?? []) {
      for (const p of group.partitions) this.groupOffsets.set(`${group.topic}:${p.partition}`, BigInt(p.offset));
    }
    this.onCommit(tx);
  }

  get committed(): RecordedTransaction[] {
    return this.transactions.filter((t) => t.state === 'committed');
  }

  /** Every record committed to `topic`, in commit order. */
  committedRecords(topic: string): OutgoingRecord[] {
    return this.committed.flatMap((t) => t.sends.filter((s) => s.topic === topic).flatMap((s) => s.messages));
  }

  /** The keys (as strings) of the records committed to `topic`. */
  committedKeys(topic: string): string[] {
    return this.committedRecords(topic).map((r) => (r.key === null ? '<null>' : r.key.toString()));
  }

  /** The checkpoints committed to the ledger topic, in order. */
  checkpoints(ledgerTopic: string): Checkpoint[] {
    return this.committedRecords(ledgerTopic).map((r) => {
      const checkpoint = decodeCheckpoint(r.key === null ? null : Buffer.from(r.key), r.value, String(r.key));
      if (checkpoint === undefined) throw new Error('the ledger holds a record that is not a checkpoint');
      return checkpoint;
    });
  }

  groupOffset(topic: string, partition: number): bigint {
    return this.groupOffsets.get(`${topic}:${partition}`) ?? 0n;
  }
}
