import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../../src/worker/ledger-checkpoint.ts';
import { checkpointRegressed } from '../../../src/worker/protocol/transaction-plan.ts';

describe('checkpointRegressed: whether the ledger lost what a claim committed', () => {
  const committed: Checkpoint = { next: 10n, open: [{ offset: 11n, commandId: 'c11', at: 1 }], done: [{ offset: 12n, commandId: 'c12' }] };

  it('no checkpoint, or one with a lower next offset, lost it', () => {
    expect(checkpointRegressed(committed, undefined)).toBe(true);
    expect(checkpointRegressed(committed, { next: 9n, open: [], done: [{ offset: 12n, commandId: 'c12' }] })).toBe(true);
  });

  it('the same next offset without a record it answered ahead lost it', () => {
    expect(
      checkpointRegressed(committed, {
        next: 10n,
        open: [
          { offset: 11n, commandId: 'c11', at: 1 },
          { offset: 12n, commandId: 'c12', at: 1 },
        ],
      }),
    ).toBe(true);
  });

  it('the same checkpoint, or a later one, did not', () => {
    expect(checkpointRegressed(committed, committed)).toBe(false);
    expect(
      checkpointRegressed(committed, {
        next: 10n,
        open: [],
        done: [
          { offset: 12n, commandId: 'c12' },
          { offset: 13n, commandId: 'c13' },
        ],
      }),
    ).toBe(false);
    expect(checkpointRegressed(committed, { next: 14n, open: [] })).toBe(false);
  });

  it('a mark it listed that is gone (withdrawn by a later commit) is not a loss', () => {
    expect(checkpointRegressed(committed, { next: 10n, open: [], done: [{ offset: 12n, commandId: 'c12' }] })).toBe(false);
  });
});
