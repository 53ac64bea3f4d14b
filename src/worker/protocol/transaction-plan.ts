import type { PartitionClaim } from './claim.ts';
import type { TransactionPlan } from './effects.ts';
import type { RecordEntry } from './record-book.ts';

/**
 * The next transaction of a claim: the marks opened since the last one, the contiguous done
 * prefix with the offset past it, and (ledger on) the checkpoint: that offset and every mark still
 * open at or after it. Undefined when there is nothing to write.
 */
export function planTransaction<O>(
  claim: PartitionClaim,
  prefix: readonly RecordEntry<O>[],
  marks: { readonly marks: readonly bigint[]; readonly withdrawn: boolean },
  ledger: boolean,
  closing: boolean,
): TransactionPlan<O> | undefined {
  if (prefix.length === 0 && marks.marks.length === 0 && !marks.withdrawn) return undefined;
  const last = prefix.at(-1);
  const commitOffset = last === undefined ? undefined : last.offset + 1n;
  const next = commitOffset ?? claim.position.committed;
  const checkpoint = ledger ? { next, open: [...claim.open.values()].filter((m) => m.offset >= next) } : undefined;
  const outcomes = prefix.map((entry) => entry.outcome as O);
  return { marks: marks.marks, outcomes, offsets: prefix.map((entry) => entry.offset), commitOffset, checkpoint, closing };
}

/** A transaction committed the offset `next`: the claim's position moves, and marks and in-doubt entries below it are settled. */
export function settleCommitted(claim: PartitionClaim, next: bigint): void {
  claim.position.committed = next;
  for (const offset of [...claim.open.keys()]) if (offset < next) claim.open.delete(offset);
  for (const offset of [...claim.inDoubt.keys()]) if (offset < next) claim.inDoubt.delete(offset);
}
