/**
 * The handover record (pure: encoding and decoding, no I/O).
 *
 * A claim that stops working its partition (the partition moved, shutdown, or the claim failed)
 * tells the next owner what became of each record it had marked and not yet committed: the
 * record's result, or that its mark is withdrawn (the call never started and never will from that
 * claim). It writes one record per mark to ledger partition n, outside any transaction (the new
 * owner's fence may abort the claim's own last transactions, and a plain record is readable at
 * once), keyed `handover/<group>/<topic>` so compaction keeps one per partition. A new owner that
 * inherits the mark in doubt publishes the result as its own, or handles the record as new,
 * instead of waiting for the earlier owner's calls before fencing.
 *
 * A handover names the mark it settles (`OpenMark.by`, unique to the claim that made it and to
 * that mark within it): a stale handover (of another owner's mark of the same record, or of an
 * earlier mark of the same claim) never settles a later one.
 */
import type { CommandResult } from '../../contracts/result.ts';
import { ledgerRecordFields, MAX_MARK_NAME_LENGTH, OFFSET, type OpenMark } from '../lane/ledger-checkpoint.ts';

const VERSION = 1;

/** What the earlier owner says of a mark: the record's result, or withdrawn. */
export type HandoverSettlement = { readonly kind: 'result'; readonly result: CommandResult } | { readonly kind: 'withdrawn' };

export interface Handover {
  readonly offset: bigint;
  /** The mark's name (`OpenMark.by`). */
  readonly by: string;
  readonly settlement: HandoverSettlement;
}

/** The key of a partition's handovers: per consumer group and command topic, as the checkpoints'. */
export function handoverKey(consumerGroup: string, commandTopic: string): string {
  return `handover/${consumerGroup}/${commandTopic}`;
}

/** The record's value; undefined for a mark without a name (made by a version before handovers). */
export function encodeHandover(offset: bigint, mark: OpenMark, settlement: HandoverSettlement): Buffer | undefined {
  if (mark.by === undefined) return undefined;
  return Buffer.from(
    JSON.stringify({
      v: VERSION,
      o: offset.toString(),
      by: mark.by,
      ...(settlement.kind === 'result' ? { result: settlement.result } : { withdrawn: true }),
    }),
  );
}

/**
 * Undefined for anything that is not a handover this version can read under `expectedKey`. The
 * result is taken as the earlier owner wrote it (same worker, same contract): only its shape's
 * outline (a commandId, an outcome) is checked here, and the caller re-encodes it with the codec,
 * which refuses anything that does not fit the result schema.
 */
export function decodeHandover(key: Buffer | null, value: Buffer | null, expectedKey: string): Handover | undefined {
  const fields = ledgerRecordFields(key, value, expectedKey);
  if (fields === undefined) return undefined;
  const { v, o, by, result, withdrawn } = fields;
  if (v !== VERSION || typeof o !== 'string' || !OFFSET.test(o) || typeof by !== 'string' || by.length === 0 || by.length > MAX_MARK_NAME_LENGTH)
    return undefined;
  if (withdrawn === true && result === undefined) return { offset: BigInt(o), by, settlement: { kind: 'withdrawn' } };
  if (withdrawn !== undefined || typeof result !== 'object' || result === null) return undefined;
  const { commandId, outcome } = result as { commandId?: unknown; outcome?: unknown };
  if (typeof commandId !== 'string' || typeof outcome !== 'string') return undefined;
  return { offset: BigInt(o), by, settlement: { kind: 'result', result: result as CommandResult } };
}
