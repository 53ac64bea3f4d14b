import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../../src/worker/lane/ledger-checkpoint.ts';
import { buildClaim } from '../../../src/worker/protocol/claim.ts';
import type { TransactionPlan } from '../../../src/worker/protocol/effects.ts';
import { mayRepublishLost, olderThan, readBackFor, readBackVerdict, readsBack, settleCommitted } from '../../../src/worker/protocol/transaction-plan.ts';

const checkpoint = (next: bigint, done: bigint[] = []): Checkpoint =>
  done.length === 0 ? { next, open: [] } : { next, open: [], done: done.map((offset) => ({ offset, commandId: `c${offset}` })) };

describe('readBackFor', () => {
  it('carries the claim’s floor with the ledger on, whatever the transaction wrote', () => {
    expect(readBackFor(12n, true, checkpoint(12n), checkpoint(9n))).toEqual({ by: 'checkpoint', written: checkpoint(12n), floor: checkpoint(9n) });
    // Marks alone: nothing to tell about themselves, but the floor is still read.
    expect(readBackFor(undefined, false, checkpoint(9n), checkpoint(9n))).toEqual({ by: 'nothing', floor: checkpoint(9n) });
  });

  it('has no floor without a checkpoint read or written, nor with the ledger off', () => {
    expect(readBackFor(undefined, false, checkpoint(9n), undefined)).toEqual({ by: 'nothing' });
    expect(readBackFor(12n, true, undefined, checkpoint(9n))).toEqual({ by: 'offset', offset: 12n });
    expect(readsBack({ by: 'nothing' })).toBe(false);
    expect(readsBack({ by: 'nothing', floor: checkpoint(9n) })).toBe(true);
  });
});

describe('readBackVerdict', () => {
  const written = checkpoint(12n, [14n]);

  it('committed: its own checkpoint or a later one', () => {
    expect(readBackVerdict({ by: 'checkpoint', written, floor: checkpoint(9n) }, { checkpoint: checkpoint(12n, [14n]) })).toBe('committed');
    expect(readBackVerdict({ by: 'checkpoint', written, floor: checkpoint(9n) }, { checkpoint: checkpoint(20n) })).toBe('committed');
    expect(readBackVerdict({ by: 'offset', offset: 12n }, { committedOffset: 12n })).toBe('committed');
  });

  it('resend: the checkpoint the claim committed before it, or the same offset without what it published ahead', () => {
    expect(readBackVerdict({ by: 'checkpoint', written, floor: checkpoint(9n) }, { checkpoint: checkpoint(9n) })).toBe('resend');
    expect(readBackVerdict({ by: 'checkpoint', written, floor: checkpoint(9n) }, { checkpoint: checkpoint(12n) })).toBe('resend');
    expect(readBackVerdict({ by: 'nothing', floor: checkpoint(9n) }, { checkpoint: checkpoint(9n) })).toBe('resend');
    expect(readBackVerdict({ by: 'offset', offset: 12n }, { committedOffset: 11n })).toBe('resend');
  });

  it('lost: the ledger below a checkpoint the claim committed (its markers lost, then aborted), whatever the failed one wrote', () => {
    expect(readBackVerdict({ by: 'checkpoint', written, floor: checkpoint(9n) }, { checkpoint: checkpoint(7n) })).toBe('lost');
    expect(readBackVerdict({ by: 'nothing', floor: checkpoint(9n) }, { checkpoint: checkpoint(7n) })).toBe('lost');
    expect(readBackVerdict({ by: 'nothing', floor: checkpoint(9n) }, { checkpoint: undefined })).toBe('lost');
    // A transaction that only published ahead (the same next offset) and was lost.
    expect(readBackVerdict({ by: 'nothing', floor: checkpoint(9n, [11n]) }, { checkpoint: checkpoint(9n) })).toBe('lost');
    // Without a floor (ledger just turned on), an older ledger is only "not committed".
    expect(readBackVerdict({ by: 'checkpoint', written }, { checkpoint: checkpoint(7n) })).toBe('resend');
  });
});

describe('olderThan (one claim’s checkpoints in the order it wrote them)', () => {
  it('a lower next offset, or the same one without every record answered ahead', () => {
    expect(olderThan(checkpoint(7n), checkpoint(9n))).toBe(true);
    expect(olderThan(checkpoint(9n, [12n]), checkpoint(9n, [12n, 14n]))).toBe(true);
    expect(olderThan(undefined, checkpoint(0n))).toBe(true);
    expect(olderThan(checkpoint(9n, [12n, 14n]), checkpoint(9n, [12n]))).toBe(false);
    expect(olderThan(checkpoint(9n), checkpoint(9n))).toBe(false);
    expect(olderThan(checkpoint(10n), checkpoint(9n, [12n]))).toBe(false);
  });
});

describe('mayRepublishLost', () => {
  it('only when the ledger still has the checkpoint the lost transaction was written on', () => {
    expect(mayRepublishLost(checkpoint(7n), checkpoint(7n))).toBe(true);
    expect(mayRepublishLost(checkpoint(7n), checkpoint(8n))).toBe(true);
    // Older than that: an earlier transaction was lost too, which this claim no longer holds.
    expect(mayRepublishLost(checkpoint(7n), checkpoint(6n))).toBe(false);
    expect(mayRepublishLost(checkpoint(7n, [9n]), checkpoint(7n))).toBe(false);
    expect(mayRepublishLost(undefined, checkpoint(7n))).toBe(false);
    expect(mayRepublishLost(checkpoint(7n), undefined)).toBe(false);
  });
});

describe('settleCommitted', () => {
  it('remembers the claim’s newest committed checkpoint (the floor of the next read-back), at first the one it read', () => {
    expect(buildClaim({ topic: 't', partition: 0, generation: 1, markOwner: 'o' }, 5n, undefined, [], 10).position.checkpointed).toBeUndefined();
    const claim = buildClaim({ topic: 't', partition: 0, generation: 1, markOwner: 'o' }, 5n, checkpoint(4n), [], 10);
    expect(claim.position.checkpointed).toEqual(checkpoint(4n));
    const plan = (commitOffset: bigint | undefined, next: bigint | undefined): TransactionPlan<string> => ({
      marks: [],
      outcomes: [],
      offsets: [],
      ahead: [],
      commitOffset,
      checkpoint: next === undefined ? undefined : checkpoint(next),
      readBack: { by: 'nothing' },
      closing: false,
    });
    settleCommitted(claim, plan(7n, 7n), () => undefined);
    expect(claim.position).toEqual({ committed: 7n, checkpointed: checkpoint(7n) });
    // No checkpoint written (the ledger turned off by a rolling update): the floor stays.
    settleCommitted(claim, plan(9n, undefined), () => undefined);
    expect(claim.position).toEqual({ committed: 9n, checkpointed: checkpoint(7n) });
  });
});
