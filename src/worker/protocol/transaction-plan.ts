import type { AnsweredRecord, Checkpoint } from '../lane/ledger-checkpoint.ts';
import type { PartitionClaim } from './claim.ts';
import type { ReadBack, TransactionPlan } from './effects.ts';

export type { ReadBack } from './effects.ts';
import type { RecordEntry } from './record-book.ts';

/**
 * The next transaction of a claim: the marks opened since the last one, the contiguous finished
 * prefix with the offset past it, and, ledger on, the outcomes done behind an unfinished record
 * (published now rather than when the slow one ends) and the checkpoint: that offset, every mark
 * still open at or after it, and every record past it already answered. Undefined when there is
 * nothing to write.
 */
export function planTransaction<O>(
  claim: PartitionClaim,
  prefix: readonly RecordEntry<O>[],
  rest: { readonly ahead: readonly RecordEntry<O>[]; readonly published: readonly RecordEntry<O>[] },
  marks: { readonly marks: readonly bigint[]; readonly withdrawn: boolean },
  ledger: boolean,
  closing: boolean,
  /** Whether an outcome publishes a record (a result, a dead letter): what a failed transaction's read-back must tell. */
  publishes: (outcome: O) => boolean = () => true,
): TransactionPlan<O> | undefined {
  const ahead = ledger ? rest.ahead : [];
  const fresh = prefix.filter((entry) => entry.state === 'done');
  if (prefix.length === 0 && ahead.length === 0 && marks.marks.length === 0 && !marks.withdrawn) return undefined;
  const last = prefix.at(-1);
  const commitOffset = last === undefined ? undefined : last.offset + 1n;
  const next = commitOffset ?? claim.position.committed;
  let checkpoint: TransactionPlan<O>['checkpoint'];
  if (ledger) {
    const done = new Map<bigint, AnsweredRecord>();
    for (const [offset, commandId] of claim.answered ?? []) if (offset >= next) done.set(offset, { offset, commandId });
    // A repeat is answered (it needs nothing more) but is not the command's answer: no commandId.
    for (const entry of [...rest.published, ...ahead]) done.set(entry.offset, { offset: entry.offset, commandId: entry.repeat ? '' : (entry.commandId ?? '') });
    const open = [...claim.open.values()].filter((m) => m.offset >= next && !done.has(m.offset));
    checkpoint = done.size > 0 ? { next, open, done: [...done.values()].sort((a, b) => (a.offset < b.offset ? -1 : 1)) } : { next, open };
  }
  const outcomes = [...fresh, ...ahead].map((entry) => entry.outcome as O);
  return {
    marks: marks.marks,
    outcomes,
    offsets: prefix.map((entry) => entry.offset),
    ahead: ahead.map((entry) => entry.offset),
    commitOffset,
    checkpoint,
    readBack: readBackFor(commitOffset, outcomes.some(publishes), checkpoint),
    closing,
  };
}

/**
 * A transaction committed: the records it published ahead are answered from now on (`published`,
 * their marks settled), and with an offset the claim's position moves: marks, in-doubt and answered
 * entries below it are settled.
 */
export function settleCommitted<O>(claim: PartitionClaim, plan: TransactionPlan<O>, published: (offset: bigint) => void): void {
  for (const offset of plan.ahead) {
    published(offset);
    claim.open.delete(offset);
  }
  const next = plan.commitOffset;
  if (next === undefined) return;
  claim.position.committed = next;
  for (const offset of [...claim.open.keys()]) if (offset < next) claim.open.delete(offset);
  for (const offset of [...claim.inDoubt.keys()]) if (offset < next) claim.inDoubt.delete(offset);
  for (const offset of [...(claim.answered?.keys() ?? [])]) if (offset < next) claim.answered?.delete(offset);
}

export function readBackFor(commitOffset: bigint | undefined, publishes: boolean, checkpoint: Checkpoint | undefined): ReadBack {
  if (commitOffset === undefined && !publishes) return { by: 'nothing' };
  if (checkpoint !== undefined) return { by: 'checkpoint', written: checkpoint };
  if (commitOffset !== undefined) return { by: 'offset', offset: commitOffset };
  // Results ahead of the offset are only published with the ledger on, in a transaction with its checkpoint.
  throw new Error('results published ahead of the offset without a ledger checkpoint');
}

/**
 * Whether the transaction `readBack` describes committed: the committed offset reached its offset,
 * or the ledger's newest checkpoint is the one it wrote or a later one. Its own: the same next
 * offset and every record it lists as answered (an earlier checkpoint has a lower next offset, or
 * the same one without the records this transaction published ahead); later: a higher next offset
 * (only another owner, after fencing this one, can have written it: what it answered is not
 * this transaction's to send again).
 */
export function committedPerReadBack(
  readBack: Exclude<ReadBack, { by: 'nothing' }>,
  broker: { readonly committedOffset?: bigint; readonly checkpoint?: Checkpoint | undefined },
): boolean {
  if (readBack.by === 'offset') return broker.committedOffset !== undefined && broker.committedOffset >= readBack.offset;
  const latest = broker.checkpoint;
  if (latest === undefined || latest.next < readBack.written.next) return false;
  if (latest.next > readBack.written.next) return true;
  const answered = new Set((latest.done ?? []).map((d) => d.offset));
  return (readBack.written.done ?? []).every((d) => answered.has(d.offset));
}
