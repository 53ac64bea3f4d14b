/**
 * The invariants each machine asserts of itself (table.ts: CLAIM_INVARIANTS, MEMBERSHIP_INVARIANTS):
 * the checks alone, on views made to break each one, then the machines running them.
 */
import { describe, expect, it } from 'vitest';
import { brokenClaimInvariant, moveClaim, moveMembership, moveRecord, ProtocolViolation, type ClaimView } from '../../../src/worker/protocol/assertions.ts';
import { PartitionMachine } from '../../../src/worker/protocol/partition-machine.ts';
import type { RecordEntry } from '../../../src/worker/protocol/record-book.ts';
import { CLAIM_INVARIANTS, MEMBERSHIP_INVARIANTS, type ClaimInvariant, type RecordState } from '../../../src/worker/protocol/table.ts';
import { testClaim } from '../../helpers/claims.ts';

function entry(offset: bigint, state: RecordState, fields: Partial<RecordEntry<string>> = {}): RecordEntry<string> {
  return { offset, key: `k${offset}`, state, permitHeld: false, slotHeld: false, mayHaveReached: false, repeat: false, ...fields };
}

/**
 * A claim at offset 10: record 10 calling under its committed mark, record 11 marking with a
 * permit, record 12 of 10's key queued behind it; all three touched since the last check.
 */
function sound(): ClaimView {
  const claim = testClaim({ start: 10n });
  claim.open.set(10n, { offset: 10n, commandId: 'c10', at: 1, by: 'test.1' });
  claim.open.set(11n, { offset: 11n, commandId: 'c11', at: 1, by: 'test.2' });
  return {
    state: 'active',
    ledger: true,
    claim,
    touched: [entry(10n, 'calling', { slotHeld: true }), entry(11n, 'marking', { permitHeld: true }), entry(12n, 'queued', { key: 'k10' })],
    oldestOfKey: (record) => record.offset !== 12n,
    inHand: 3,
    markUncommitted: (offset) => offset === 11n,
    transactionUnderWay: true,
    committedBefore: 10n,
  };
}

const brokenClaims: Record<Exclude<ClaimInvariant, 'listed-moves-only'>, (view: ClaimView) => ClaimView> = {
  'calls-under-committed-marks': (view) => ({ ...view, markUncommitted: () => true }),
  'calls-hold-slots': (view) => ({ ...view, touched: [entry(10n, 'calling')] }),
  'slots-only-past-marks': (view) => ({ ...view, touched: [entry(11n, 'marking', { slotHeld: true })] }),
  'permits-while-marking': (view) => ({ ...view, touched: [entry(11n, 'handling', { permitHeld: true })] }),
  'one-at-a-time-per-key': (view) => ({ ...view, touched: [entry(12n, 'handling', { key: 'k10' })] }),
  'offset-only-forward': (view) => ({ ...view, committedBefore: 11n }),
  'ended-holds-nothing': (view) => ({ ...view, state: 'ended', touched: [], inHand: 1, transactionUnderWay: false }),
};

describe('the claim invariants, checked alone', () => {
  it('finds nothing broken in a claim that keeps them all', () => {
    expect(brokenClaimInvariant(sound())).toBeUndefined();
    expect(brokenClaimInvariant({ ...sound(), ledger: false, markUncommitted: () => true })).toBeUndefined();
  });

  it.each(Object.entries(brokenClaims))('names %s when it is broken', (invariant, breaks) => {
    const broken = brokenClaimInvariant(breaks(sound()));
    expect(broken).toBeInstanceOf(ProtocolViolation);
    expect(broken?.invariant).toBe(invariant);
    expect(broken?.code).toBe('PROTOCOL_VIOLATION');
  });

  it('has a case above for every invariant it lists (the moves are checked by the moves themselves)', () => {
    expect(Object.keys(CLAIM_INVARIANTS).sort()).toEqual([...Object.keys(brokenClaims), 'listed-moves-only'].sort());
  });

  it('refuses a move no table lists, naming listed-moves-only', () => {
    expect(() => moveRecord(entry(1n, 'queued'), 'permit-granted', 'calling')).toThrow(expect.objectContaining({ invariant: 'listed-moves-only' }));
    expect(() => moveClaim('ended', 'keep', 'active')).toThrow(ProtocolViolation);
    expect(() => moveMembership('member', 'joined')).not.toThrow();
    // The membership's one invariant is its moves.
    expect(Object.keys(MEMBERSHIP_INVARIANTS)).toEqual(['listed-moves-only']);
  });
});

function machine(): PartitionMachine<string> {
  return new PartitionMachine<string>({
    claim: testClaim(),
    ledger: true,
    markPermits: true,
    maxRunAhead: 100,
    commitIntervalMs: 50,
  });
}

/** Record 0 taken and marked, its mark committed: it waits for a slot. */
function awaitingSlot(m: PartitionMachine<string>): void {
  m.offer(0n, true, 0);
  m.take(0n, 'a');
  m.identify(0n, 'c0');
  m.wantSend(0n, true, 1, 0);
  m.permitGranted(0n, 1, 0);
  m.commitDue(0);
  m.transactionCommitted(1);
  m.drain();
}

describe('PartitionMachine asserts its invariants', () => {
  it('throws when its driver dropped the mark of a record that then gets its slot (by default, as in tests)', () => {
    const m = machine();
    awaitingSlot(m);
    // A driver bug: the claim's open mark of record 0 gone while it waits for its slot.
    m.claim.open.delete(0n);
    m.slotGranted(0n, true);
    expect(() => m.drain()).toThrow(expect.objectContaining({ invariant: 'calls-under-committed-marks' }));
  });

  it('throws when the committed position is moved back behind its back', () => {
    const m = machine();
    awaitingSlot(m);
    m.claim.position.committed = 5n;
    m.drain();
    m.claim.position.committed = 1n;
    expect(() => m.drain()).toThrow(expect.objectContaining({ invariant: 'offset-only-forward' }));
  });
});
