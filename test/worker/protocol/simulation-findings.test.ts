import { describe, expect, it } from 'vitest';
import {
  buildClaim,
  identifyCommand,
  LOST_RECLAIM_CONFIRMATIONS,
  LOST_RECLAIMS_PER_GENERATION,
  mayReclaimLost,
  type PartitionClaim,
} from '../../../src/worker/protocol/claim.ts';
import { PartitionMachine } from '../../../src/worker/protocol/partition-machine.ts';
import { testClaim } from '../../helpers/claims.ts';
/**
 * Rules of the partition machine and claim steps that schedules of the simulation broke before
 * they held, each shown by a few direct calls (the simulation itself is test/simulate/; what it
 * found, and when, is in docs/partition-protocol.md). The findings of the model simulation, retired
 * 2026-12-07, whose seeds no longer replay: the shipped-lane simulation runs the same worlds.
 */
function claim(): PartitionClaim {
  return testClaim({ dedupWindow: 16 });
}

function machine(ledger = false, base = claim()): PartitionMachine<string> {
  return new PartitionMachine<string>({ claim: base, ledger, markPermits: ledger, maxRunAhead: 8, commitIntervalMs: 0 });
}

describe('a lease that lapses and comes back without a rebalance', () => {
  it('fails the claim, so a later record of the key never calls, and the claim ends and is claimed afresh', () => {
    const m = machine();
    m.take(0n, 'k');
    m.take(1n, 'k');
    m.identify(0n, 'c0');
    m.wantSend(0n, false, 0, 0); // the lease lapsed (a long pause): refused, and the claim fails
    expect(m.state).toBe('failed');
    m.abandoned(0n, false);
    // Offset 1 is handled now (its key's previous record ended), but may not call: the claim failed.
    m.identify(1n, 'c1');
    m.wantSend(1n, true, 0, 0);
    expect(m.drain().filter((e) => e.type === 'call')).toEqual([]);
    m.abandoned(1n, false);
    expect(m.state).toBe('ended');
  });
});

describe('a handler that throws after its claim failed', () => {
  it('ends the claim once its last record in hand crashed', () => {
    const m = machine();
    m.take(0n, 'k');
    m.identify(0n, 'c0');
    m.wantSend(0n, true, 0, 0);
    m.slotGranted(0n, true); // calling
    m.fail(new Error('a transaction failed')); // failed; the call under way is left to answer
    m.crashed(0n, new Error('the handler threw')); // crashed → fail() returns early: no drained, no ended
    expect(m.state).toBe('ended');
  });
});

describe('a late fence of a former member leaves the partition lost when no rebalance follows', () => {
  it('claims a lost partition again only after two confirmed heartbeats of this generation, at most three times a generation', () => {
    expect(LOST_RECLAIM_CONFIRMATIONS).toBe(2);
    expect(mayReclaimLost(0, 0)).toBe(false);
    expect(mayReclaimLost(1, 0)).toBe(false);
    expect(mayReclaimLost(2, 0)).toBe(true);
    expect(mayReclaimLost(2, LOST_RECLAIMS_PER_GENERATION - 1)).toBe(true);
    expect(mayReclaimLost(5, LOST_RECLAIMS_PER_GENERATION)).toBe(false);
  });
});

describe('a commandId repeated under another key of the same partition', () => {
  it('an inherited mark holds its commandId: the same command at an earlier offset is a repeat of it, not new', () => {
    // The earlier owner marked offset 4 (the repeat, identified first: another key) and may have sent it.
    const base = buildClaim(
      { topic: 't', partition: 0, generation: 2, markOwner: 'test' },
      0n,
      { next: 0n, open: [{ offset: 4n, commandId: 'X', at: 0 }] },
      [],
      16,
    );
    expect(identifyCommand(base, 3n, 'X')).toEqual({ kind: 'duplicate', firstOffset: 4n });
  });

  it('a repeat published ahead of its first record is listed as answered without the commandId, so the next owner still sends the first', () => {
    const m = machine(true);
    m.take(0n, 'a');
    m.take(1n, 'b'); // the same command, published again upstream under another key
    m.identify(0n, 'X');
    m.wantSend(0n, true, 0, 0); // waits for a mark permit
    expect(m.identify(1n, 'X').kind).toBe('duplicate');
    m.finished(1n, 'duplicate of 0', 0);
    m.commitDue(0);
    const plan = m.drain().find((e) => e.type === 'transaction');
    if (plan?.type !== 'transaction') throw new Error('no transaction');
    expect(plan.plan.checkpoint?.done).toEqual([{ offset: 1n, commandId: '' }]);
    const next = buildClaim({ topic: 't', partition: 0, generation: 2, markOwner: 'test' }, 0n, plan.plan.checkpoint, [], 16);
    expect(identifyCommand(next, 0n, 'X').kind).toBe('new');
  });

  it('a repeat identified before the later record carrying the result is not committed past until that result is', () => {
    const m = machine(false);
    m.take(0n, 'a');
    m.take(1n, 'b');
    m.identify(1n, 'X'); // decoded first: the carrier
    m.wantSend(1n, true, 0, 0);
    m.slotGranted(1n, true);
    expect(m.identify(0n, 'X')).toEqual({ kind: 'duplicate', firstOffset: 1n });
    m.finished(0n, 'repeat', 0);
    m.commitDue(10);
    expect(m.drain().some((e) => e.type === 'transaction')).toBe(false);
    m.finished(1n, 'SENT', 20);
    m.commitDue(30);
    expect(m.drain().find((e) => e.type === 'transaction')).toMatchObject({ plan: { offsets: [0n, 1n], commitOffset: 2n } });
  });
});

describe('an earlier owner’s mark given up before its record was identified (sending stopped while it decoded)', () => {
  it('keeps the mark: the next owner reports the command UNKNOWN rather than sending it again', () => {
    const base = claim();
    base.inDoubt.set(0n, { offset: 0n, commandId: 'c0', at: 1 });
    base.open.set(0n, { offset: 0n, commandId: 'c0', at: 1 });
    const m = machine(true, base);
    m.take(0n, 'k');
    m.stopSending();
    m.abandoned(0n, false, 1);
    expect(m.claim.open.has(0n)).toBe(true);
  });
});

describe('a repeat before an earlier owner’s mark in doubt after it (another key)', () => {
  /** An earlier owner marked offset 3 (commandId X, another key) before it identified offset 0, X too, and died. */
  function inherited(): PartitionClaim {
    const base = claim();
    const mark = { offset: 3n, commandId: 'X', at: 1 };
    base.inDoubt.set(3n, mark);
    base.open.set(3n, mark);
    base.dedup.remember('X', 3n); // as buildClaim carries a mark in doubt into the window
    return base;
  }

  it('answers the repeat, but the offset passes it only with the marked record’s result', () => {
    const m = machine(true, inherited());
    m.take(0n, 'a');
    m.take(1n, 'b');
    expect(m.identify(0n, 'X')).toEqual({ kind: 'duplicate', firstOffset: 3n });
    m.finished(0n, 'repeat', 0);
    m.identify(1n, 'c1');
    m.finished(1n, 'REJECTED', 0);
    m.commitDue(10);
    // Before the fix the offset moved to 2 here: offset 3's mark could then be withdrawn (its
    // handover, a refused call), and the next claim's window would hold offset 0 as X's original
    // and answer offset 3 as its repeat: X without any result.
    const first = m.drain().find((e) => e.type === 'transaction');
    expect(first).toMatchObject({ plan: { commitOffset: undefined, ahead: [1n] } });
    m.transactionCommitted(11);
    m.take(3n, 'b');
    expect(m.identify(3n, 'X').kind).toBe('in-doubt');
    m.finished(3n, 'UNKNOWN', 20);
    m.commitDue(30);
    expect(m.drain().find((e) => e.type === 'transaction')).toMatchObject({ plan: { offsets: [0n, 1n, 3n], commitOffset: 4n } });
  });

  it('takes records up to that mark past the run-ahead bound (a MAX_RUN_AHEAD lower than the earlier owner’s would wedge the partition: nothing-lost in the simulation without it)', () => {
    const m = new PartitionMachine<string>({ claim: inherited(), ledger: true, markPermits: true, maxRunAhead: 2, commitIntervalMs: 0 });
    m.take(0n, 'a');
    m.take(1n, 'b');
    expect(m.offer(2n, true, 0)).toBe('full');
    expect(m.drain()).toContainEqual({ type: 'hold-fetching', held: true });
    m.identify(0n, 'X'); // a repeat of offset 3, which only a take can bring in
    expect(m.drain()).toContainEqual({ type: 'hold-fetching', held: false });
    expect(m.offer(2n, true, 0)).toBe('take');
    m.take(2n, 'c');
    expect(m.offer(3n, true, 0)).toBe('take');
    m.take(3n, 'b');
    expect(m.offer(4n, true, 0)).toBe('full');
  });
});
