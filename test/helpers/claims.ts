import type { OpenMark } from '../../src/worker/lane/ledger-checkpoint.ts';
import { DedupWindow } from '../../src/worker/lane/dedup-window.ts';
import type { PartitionClaim } from '../../src/worker/protocol/claim.ts';

/**
 * A claim as a fresh owner holds it, built directly (no ledger read): of generation 1, starting at
 * `start`, with an earlier owner's marks in doubt (also open), its own marks named `test.<n>`.
 */
export function testClaim(
  options: { topic?: string; partition?: number; start?: bigint; inDoubt?: readonly OpenMark[]; dedupWindow?: number } = {},
): PartitionClaim {
  const start = options.start ?? 0n;
  const marks = new Map((options.inDoubt ?? []).map((mark) => [mark.offset, mark]));
  return {
    topic: options.topic ?? 't',
    partition: options.partition ?? 0,
    generation: 1,
    start,
    inDoubt: marks,
    open: new Map(marks),
    dedup: new DedupWindow(options.dedupWindow ?? 100),
    position: { committed: start },
    marks: { owner: 'test', made: 0 },
  };
}
