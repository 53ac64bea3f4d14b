import { DedupWindow } from '../lane/dedup-window.ts';
import { recoveryPlan, type Checkpoint, type OpenMark } from '../lane/ledger-checkpoint.ts';
import { CLAIM_STEPS, type ClaimStep } from './table.ts';

/**
 * What this process holds of one command partition in one group generation, from the moment its
 * transactional producer fenced the previous owner. The partition's machine works with it (the
 * marks, the position and the dedup window), so it outlives any one fetched batch.
 */
export interface PartitionClaim {
  readonly topic: string;
  readonly partition: number;
  /** The group generation it belongs to: advanced when the next generation keeps the claim here (partition-ownership.ts). */
  generation: number;
  /** Records below this offset were answered by an earlier owner: skip them. */
  readonly start: bigint;
  /** Marks inherited from an earlier owner (no result was committed): never sent again under `report`. */
  readonly inDoubt: Map<bigint, OpenMark>;
  /** Marks written to the ledger (and inherited ones) whose results are not committed yet: every checkpoint lists exactly these. */
  readonly open: Map<bigint, OpenMark>;
  readonly dedup: DedupWindow;
  /**
   * Records past the committed offset whose results are committed (an earlier owner published them
   * ahead of slower records, or this one did), with their commandIds: never taken again.
   */
  readonly answered?: Map<bigint, string>;
  /**
   * The committed offset as this owner last committed it (starts at `start`), and the newest ledger
   * checkpoint this claim committed (`checkpointed`; at first the one it read when it claimed): a
   * failed transaction's read-back that finds the ledger's newest checkpoint older than it learns
   * that Kafka lost a transaction this claim had committed (transaction-plan.ts, readBackVerdict).
   */
  readonly position: { committed: bigint; checkpointed?: Checkpoint };
  /**
   * Names this claim's marks (`OpenMark.by`): `owner` is unique to the claim (the driver makes it:
   * random in the worker), `made` counts the marks opened. A handover names the mark it settles, so
   * it can never settle another owner's mark of the same record, nor a later mark of this claim.
   */
  readonly marks: { readonly owner: string; made: number };
}

/** The steps of a claim, in order: fence before reading, so no earlier owner can still write what is read. */
export function claimSteps(): readonly ClaimStep[] {
  return CLAIM_STEPS;
}

/**
 * What a lane that failed leaves: `lose` (its producer was fenced while the lease held: another
 * process owns the partition; never fence it back in this generation) or `reclaim` (claim afresh
 * from the committed offset: fence, recover).
 */
export function afterFailure(fenced: boolean, leaseHolds: boolean): 'lose' | 'reclaim' {
  return fenced && leaseHolds ? 'lose' : 'reclaim';
}

/**
 * Heartbeats the group must confirm, after a partition was lost to fencing and in the same
 * generation, before this process claims it again. A confirmed heartbeat means the group is
 * stable in this member's generation, whose assignment gives it the partition: no member of a
 * later generation can have fenced it, so the fence came from a process that is not a member any
 * more (a zombie whose fence, begun in an older generation, landed late). Two, because the first
 * one may have been under way before that later generation began; kafkajs sends one at a time, so
 * the second left after the first came back.
 */
export const LOST_RECLAIM_CONFIRMATIONS = 2;

/** A partition lost to fencing is claimed again at most this often per generation (a fencer that keeps coming back is left to the next rebalance). */
export const LOST_RECLAIMS_PER_GENERATION = 3;

/**
 * Whether a partition lost to fencing may be claimed again now: `confirmations` heartbeats of this
 * generation confirmed since the loss, `reclaims` made of it in this generation so far.
 */
export function mayReclaimLost(confirmations: number, reclaims: number): boolean {
  return reclaims < LOST_RECLAIMS_PER_GENERATION && confirmations >= LOST_RECLAIM_CONFIRMATIONS;
}

/** What the protocol says about a record's commandId. */
export type Identity =
  { readonly kind: 'in-doubt'; readonly mark: OpenMark } | { readonly kind: 'duplicate'; readonly firstOffset: bigint } | { readonly kind: 'new' };

/**
 * In doubt (an earlier owner's mark: the handler waits for its handover, then reports UNKNOWN, or
 * under IN_DOUBT_POLICY=resend sends it again), a repeat of an earlier record with a result (no
 * result of its own), or new (remembered in the window).
 */
export function identifyCommand(claim: PartitionClaim, offset: bigint, commandId: string): Identity {
  const inherited = claim.inDoubt.get(offset);
  // A repeat of an earlier record, unless an earlier owner's mark of a call holds this one. A record
  // answered without a call (`uncalled`, withHangingMarks) that repeats an earlier one is a repeat,
  // as it was when it was answered: handled as new once its result is not found, it was called
  // beside its carrier (the shipped-lane simulation with lost markers).
  if (inherited === undefined || inherited.uncalled === true) {
    const first = claim.dedup.firstOffset(commandId);
    if (first !== undefined && first !== offset) return { kind: 'duplicate', firstOffset: first };
  }
  claim.dedup.remember(commandId, offset);
  return inherited === undefined ? { kind: 'new' } : { kind: 'in-doubt', mark: inherited };
}

/** The lease stopped holding while the claim was active: the claim fails and is claimed afresh (see SendPathContext.leaseLost). */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(claim: Pick<PartitionClaim, 'topic' | 'partition' | 'generation'>) {
    super(`the group lease stopped holding while ${claim.topic}[${claim.partition}] (generation ${claim.generation}) was being worked on: claiming it afresh`);
  }
}

/**
 * A new claim from what the claim steps read (after fencing): start at the later of the group's
 * offset and the checkpoint's, inherit its open marks (in doubt) and its answered records, and
 * rebuild the repeat window from the committed records before the start (`recent`, oldest first)
 * and then the in-doubt and answered ones: a later record with one of their commandIds is a repeat.
 */
export function buildClaim(
  id: { readonly topic: string; readonly partition: number; readonly generation: number; readonly markOwner: string },
  groupOffset: bigint,
  checkpoint: Checkpoint | undefined,
  recent: readonly { readonly offset: bigint; readonly commandId: string }[],
  dedupWindow: number,
): PartitionClaim {
  const { start, inDoubt, answered } = recoveryPlan(groupOffset, checkpoint);
  const dedup = new DedupWindow(dedupWindow);
  for (const { offset, commandId } of recent) dedup.remember(commandId, offset);
  const carried = [...answered, ...[...inDoubt].map(([offset, mark]): [bigint, string] => [offset, mark.commandId])];
  for (const [offset, commandId] of carried.sort((a, b) => (a[0] < b[0] ? -1 : 1))) if (commandId !== '') dedup.remember(commandId, offset);
  const { markOwner, ...where } = id;
  return {
    ...where,
    start,
    inDoubt,
    open: new Map(inDoubt),
    dedup,
    answered,
    position: { committed: start, ...(checkpoint !== undefined && { checkpointed: checkpoint }) },
    marks: { owner: markOwner, made: 0 },
  };
}
