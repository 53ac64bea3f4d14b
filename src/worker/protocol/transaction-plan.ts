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
    readBack: readBackFor(commitOffset, outcomes.some(publishes), checkpoint, claim.position.checkpointed),
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
  if (plan.checkpoint !== undefined) claim.position.checkpointed = plan.checkpoint;
  const next = plan.commitOffset;
  if (next === undefined) return;
  claim.position.committed = next;
  for (const offset of [...claim.open.keys()]) if (offset < next) claim.open.delete(offset);
  for (const offset of [...claim.inDoubt.keys()]) if (offset < next) claim.inDoubt.delete(offset);
  for (const offset of [...(claim.answered?.keys() ?? [])]) if (offset < next) claim.answered?.delete(offset);
}

export function readBackFor(
  commitOffset: bigint | undefined,
  publishes: boolean,
  checkpoint: Checkpoint | undefined,
  /** The newest checkpoint the claim committed, or read when it claimed (PartitionClaim.position.checkpointed). */
  floor?: Checkpoint,
): ReadBack {
  const below = checkpoint !== undefined && floor !== undefined ? { floor } : {};
  if (commitOffset === undefined && !publishes) return { by: 'nothing', ...below };
  if (checkpoint !== undefined) return { by: 'checkpoint', written: checkpoint, ...below };
  if (commitOffset !== undefined) return { by: 'offset', offset: commitOffset };
  // Results ahead of the offset are only published with the ledger on, in a transaction with its checkpoint.
  throw new Error('results published ahead of the offset without a ledger checkpoint');
}

/**
 * What a failed transaction's read-back says, once the partition's producer was initialised again:
 *   - `committed`: the committed offset reached its offset, or the ledger's newest checkpoint is the
 *     one it wrote or a later one. Its own: the same next offset and every record it lists as
 *     answered (an earlier checkpoint has a lower next offset, or the same one without the records
 *     this transaction published ahead); later: a higher next offset (only another owner, after
 *     fencing this one, can have written it: what it answered is not this transaction's to send again).
 *   - `lost`: the ledger's newest checkpoint is older than the newest one this claim committed (`floor`).
 *     Kafka completed that transaction with its markers lost, and the initialisation's ABORT ended
 *     what it had left open in the partitions the failed one wrote too: its results may be gone while
 *     the claim counts them published. Sending the failed transaction again would move the offset
 *     and the checkpoint past them (`npm run simulate -- --lost-markers on`: nothing-lost); the claim
 *     ends instead, and the next one reads what Kafka kept (their marks, in doubt).
 *   - `resend`: neither: it did not commit (or, `nothing`, writing it again is harmless).
 */
export function readBackVerdict(
  readBack: ReadBack,
  broker: { readonly committedOffset?: bigint; readonly checkpoint?: Checkpoint | undefined },
): 'committed' | 'lost' | 'resend' {
  if (readBack.by === 'offset') return broker.committedOffset !== undefined && broker.committedOffset >= readBack.offset ? 'committed' : 'resend';
  const latest = broker.checkpoint;
  if (readBack.floor !== undefined && olderThan(latest, readBack.floor)) return 'lost';
  if (readBack.by === 'nothing') return 'resend';
  // Its own checkpoint, or a later one: committed.
  return olderThan(latest, readBack.written) ? 'resend' : 'committed';
}

/** Whether a read-back asks anything of the broker: a `nothing` without a floor is written again unread. */
export function readsBack(readBack: ReadBack): boolean {
  return readBack.by !== 'nothing' || readBack.floor !== undefined;
}

/**
 * Whether checkpoint `a` is older than `b` in one claim's sequence: a lower next offset, or the same
 * one without every record `b` lists as answered ahead (at one next offset the answered records
 * only grow; they leave the list only when the offset passes them). None at all is older than any.
 */
export function olderThan(a: Checkpoint | undefined, b: Checkpoint): boolean {
  if (a === undefined || a.next < b.next) return true;
  if (a.next > b.next) return false;
  const answered = new Set((a.done ?? []).map((d) => d.offset));
  return !(b.done ?? []).every((d) => answered.has(d.offset));
}

/**
 * Whether, after a read-back found the claim's ledger older than its floor (`lost`), publishing the
 * last committed transaction again restores what was lost: the ledger's newest checkpoint is no
 * older than the one that transaction was written on, so nothing before it is missing.
 */
export function mayRepublishLost(previousFloor: Checkpoint | undefined, latest: Checkpoint | undefined): boolean {
  return previousFloor !== undefined && latest !== undefined && !olderThan(latest, previousFloor);
}
