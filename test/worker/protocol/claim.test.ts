import { describe, expect, it } from 'vitest';
import { buildClaim, identifyCommand } from '../../../src/worker/protocol/claim.ts';
import type { OpenMark } from '../../../src/worker/lane/ledger-checkpoint.ts';

const id = { topic: 't', partition: 0, generation: 2, markOwner: 'test' };

describe('identifyCommand', () => {
  it('an inherited mark is in doubt; a later record of its commandId is a repeat of it', () => {
    const claim = buildClaim(id, 0n, { next: 0n, open: [{ offset: 2n, commandId: 'X', at: 1, by: 'a.1' }] }, [], 16);
    expect(identifyCommand(claim, 2n, 'X').kind).toBe('in-doubt');
    expect(identifyCommand(claim, 5n, 'X')).toEqual({ kind: 'duplicate', firstOffset: 2n });
  });

  it('a record a lost transaction answered without a call (`uncalled`) that repeats an earlier record is a repeat, not in doubt: never handled as new beside its carrier', () => {
    const uncalled: OpenMark = { offset: 3n, commandId: 'X', at: 1, by: 'answered.3', answered: true, uncalled: true };
    const claim = buildClaim(id, 0n, { next: 0n, open: [{ offset: 0n, commandId: 'X', at: 1, by: 'a.1' }, uncalled] }, [], 16);
    expect(identifyCommand(claim, 0n, 'X').kind).toBe('in-doubt');
    expect(identifyCommand(claim, 3n, 'X')).toEqual({ kind: 'duplicate', firstOffset: 0n });
    // Not a repeat: in doubt, its result looked for (handover-lookout.ts).
    const alone = buildClaim(id, 0n, { next: 0n, open: [{ ...uncalled, commandId: 'Y' }] }, [], 16);
    expect(identifyCommand(alone, 3n, 'Y')).toEqual({ kind: 'in-doubt', mark: { ...uncalled, commandId: 'Y' } });
  });
});
