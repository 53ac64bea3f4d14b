import type { HeldClaim, OwnershipMachine } from '../../src/worker/protocol/ownership.ts';
import { RecordBook, type RecordEntry } from '../../src/worker/protocol/record-book.ts';
import type { RecordMoves } from '../../src/worker/protocol/send-path.ts';
import { CLAIM_STEPS, type ClaimStep } from '../../src/worker/protocol/table.ts';
import { readBackFor, type ReadBack } from '../../src/worker/protocol/transaction-plan.ts';
import type { Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';

/**
 * Known-bad variants: each a mistake the simulation must catch (its own test, variants.test.ts).
 * None of them is a switch in src/: each is made here, outside the shipped code, by wrapping what
 * that code is given or what it asks for — a record book with an old rule (`bookFor`), a
 * transition table that lets any move pass (`recordMovesFor`), a lane that carries out an effect
 * wrongly (lane.ts), a rule function replaced (below), a process that decides a keep or a lease
 * the old way (process.ts).
 */
export const SIM_VARIANTS = [
  'correct',
  'send-before-mark-commits',
  'commit-past-unfinished',
  'read-ledger-before-fence',
  'refence-after-fenced',
  'mark-without-permit',
  'keep-without-checks',
  'resend-ahead-unread',
  'reinitialise-anytime',
  'read-back-by-offset',
  'resend-when-unread',
  'handover-withdraws-calls',
  'handover-by-offset',
  'lost-until-next-generation',
  'current-out-of-group',
  'repeat-before-untaken-carrier',
  'marks-ahead-fixed',
] as const;

export type SimVariant = (typeof SIM_VARIANTS)[number];

/** `read-ledger-before-fence`: reads the ledger, then fences (what an earlier owner commits between is missed). */
export function claimStepsIn(variant: SimVariant): readonly ClaimStep[] {
  return variant === 'read-ledger-before-fence' ? ['handover', 'read', 'fence'] : CLAIM_STEPS;
}

/**
 * `keep-without-checks`: a claim whose lane holds is kept whenever its partition is assigned again
 * (no missed generation, lapse, loss or producer checked); else the shipped machine's keepable.
 */
export function keptIn<L extends { readonly partition: number; readonly generation: number }>(
  variant: SimVariant,
  holding: readonly L[],
  keepable: readonly HeldClaim[],
  partitions: readonly number[],
): L[] {
  if (variant === 'keep-without-checks') return holding.filter((lane) => partitions.includes(lane.partition));
  return holding.filter((lane) => keepable.some((k) => k.partition === lane.partition && k.generation === lane.generation));
}

/** `current-out-of-group`: a process whose consumer crashed goes on as a member (its claims current, and fencing). */
export function isCurrentIn(variant: SimVariant, machine: OwnershipMachine, generation: number, partition: number): boolean {
  if (variant === 'current-out-of-group' && machine.state === 'out-of-group') return generation === machine.generation && !machine.isLost(partition);
  return machine.isCurrent(generation, partition);
}
export function mayFenceIn(variant: SimVariant, machine: OwnershipMachine, generation: number): boolean {
  if (variant === 'current-out-of-group' && machine.state === 'out-of-group') return generation === machine.generation && !machine.isStopping;
  return machine.mayFence(generation);
}

/** `refence-after-fenced`: a fenced transaction takes its producer back and is sent again. */
export function fencedIsFinalIn(variant: SimVariant): boolean {
  return variant !== 'refence-after-fenced';
}

/**
 * `resend-ahead-unread`: a failed transaction that published results ahead of the offset (and did
 * not move it) is taken as not committed without reading anything back; `read-back-by-offset`:
 * one that moved the offset is read back by the group's offset (stale without KIP-447), not the
 * ledger's checkpoint.
 */
export function readBackIn(
  variant: SimVariant,
  commitOffset: bigint | undefined,
  publishes: boolean,
  checkpoint: Checkpoint | undefined,
  floor?: Checkpoint,
): ReadBack {
  if (variant === 'resend-ahead-unread' && commitOffset === undefined) return { by: 'nothing' };
  if (variant === 'read-back-by-offset' && commitOffset !== undefined) return { by: 'offset', offset: commitOffset };
  return readBackFor(commitOffset, publishes, checkpoint, floor);
}

/** A transition table that lets every move pass: a variant's wrong rule may take a record where the table says it cannot go. */
const ANY_MOVE: RecordMoves = { has: () => true };

/** The record moves the machine checks its own against: the shipped table (undefined), or (a variant) one that lets any move pass. */
export function recordMovesFor(variant: SimVariant): RecordMoves | undefined {
  return variant === 'correct' || variant === 'marks-ahead-fixed' ? undefined : ANY_MOVE;
}

/**
 * `commit-past-unfinished`: the offset passes every finished record, past unfinished ones too.
 * `repeat-before-untaken-carrier`: a repeat's carrier the claim has not taken is taken for
 * answered, and the run-ahead bound is kept even while such a carrier waits to be taken.
 */
class CommitPastUnfinished<O> extends RecordBook<O> {
  protected override finishedPrefix(): RecordEntry<O>[] {
    return this.inState('done', 'published');
  }
}
class RepeatBeforeUntakenCarrier<O> extends RecordBook<O> {
  protected override carrierCommitted(carrierOffset: bigint): boolean {
    return !this.has(carrierOffset) || super.carrierCommitted(carrierOffset);
  }
  override untakenCarrier(): bigint {
    return -1n;
  }
}

/** The machine's record book: the shipped one (undefined), or one with a variant's old rule. */
export function bookFor<O>(variant: SimVariant): ((answeredEarlier: (offset: bigint) => boolean) => RecordBook<O>) | undefined {
  if (variant === 'commit-past-unfinished') return (answeredEarlier) => new CommitPastUnfinished<O>(answeredEarlier);
  if (variant === 'repeat-before-untaken-carrier') return (answeredEarlier) => new RepeatBeforeUntakenCarrier<O>(answeredEarlier);
  return undefined;
}
