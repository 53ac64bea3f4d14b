/**
 * The partition protocol without any I/O: events in, effects out. The simulation (test/simulate)
 * tries millions of interleavings; these pin the rules one at a time.
 */
import { describe, expect, it } from 'vitest';
import { buildClaim, type PartitionClaim } from '../../../src/worker/protocol/claim.ts';
import { PartitionMachine, type Effect } from '../../../src/worker/protocol/partition-machine.ts';
import { testClaim } from '../../helpers/claims.ts';

function claim(start = 0n, inDoubt: [bigint, string][] = []): PartitionClaim {
  return testClaim({ start, inDoubt: inDoubt.map(([offset, commandId]) => ({ offset, commandId, at: 1 })) });
}

function machine(options: { ledger?: boolean; maxRunAhead?: number; claim?: PartitionClaim; handovers?: boolean } = {}): PartitionMachine<string> {
  return new PartitionMachine<string>({
    claim: options.claim ?? claim(),
    ledger: options.ledger ?? true,
    markPermits: true,
    maxRunAhead: options.maxRunAhead ?? 100,
    commitIntervalMs: 50,
    ...(options.handovers !== undefined && { handovers: options.handovers }),
  });
}

const types = (effects: Effect<string>[]): string[] => effects.map((e) => ('offset' in e ? `${e.type}:${e.offset}` : e.type));

/** Takes records 0..n-1 with the given keys and identifies each as new. */
function takeAll(m: PartitionMachine<string>, keys: string[]): void {
  keys.forEach((key, i) => {
    expect(m.offer(BigInt(i), true, 0)).toBe('take');
    m.take(BigInt(i), key);
  });
  keys.forEach((_key, i) => m.recordState(BigInt(i)) === 'handling' && m.identify(BigInt(i), `c${i}`));
  m.drain();
}

/** Takes record 0 and brings it to a committed mark, waiting for a slot. */
function markedAwaitingSlot(m: PartitionMachine<string>): void {
  takeAll(m, ['a']);
  m.wantSend(0n, true, 1, 0);
  m.permitGranted(0n, 1, 0);
  m.commitDue(0);
  m.transactionCommitted(1);
  m.drain();
}

/** Takes records 0 and 1 and marks both (one transaction): record 0 calls, record 1 waits for a slot. */
function oneCallingOneAwaitingSlot(m: PartitionMachine<string>): void {
  takeAll(m, ['a', 'b']);
  for (const offset of [0n, 1n]) {
    m.wantSend(offset, true, 1, 0);
    m.permitGranted(offset, 1, 0);
  }
  m.commitDue(0);
  m.transactionCommitted(1);
  m.slotGranted(0n, true);
  m.drain();
}

describe('PartitionMachine: a send', () => {
  it('calls only once its mark has committed and it holds a slot', () => {
    const m = machine();
    takeAll(m, ['a']);
    m.wantSend(0n, true, 1, 0);
    expect(types(m.drain())).toEqual(['acquire-permit:0']);
    m.permitGranted(0n, 1, 0);
    const marking = m.drain();
    expect(types(marking)).toEqual(['mark-opened', 'arm-commit']);
    m.commitDue(0);
    const [transaction] = m.drain();
    expect(transaction).toMatchObject({ type: 'transaction', plan: { marks: [0n], commitOffset: undefined, checkpoint: { next: 0n } } });
    expect(m.recordState(0n)).toBe('marking');
    m.transactionCommitted(1);
    expect(types(m.drain())).toContain('acquire-slot:0');
    m.slotGranted(0n, true);
    expect(types(m.drain())).toEqual(['release-permit', 'call:0']);
    expect(m.recordState(0n)).toBe('calling');
  });

  it("names the account of the call in its mark; a failover's withdrawn mark leaves, and the next account's mark names that account", () => {
    const m = machine();
    takeAll(m, ['a']);
    m.wantSend(0n, true, 1, 0, 'default');
    m.permitGranted(0n, 1, 0);
    m.commitDue(0);
    const [first] = m.drain().filter((e) => e.type === 'transaction');
    expect(first).toMatchObject({ plan: { checkpoint: { open: [{ offset: 0n, account: 'default' }] } } });
    m.transactionCommitted(1);
    m.slotGranted(0n, true);
    m.drain();
    // default declined it without sending (a refusal proving not-sent): the mark is withdrawn.
    m.kept(0n, false);
    expect(m.claim.open.has(0n)).toBe(false);
    m.wantSend(0n, true, 2, 0, 'backup');
    m.permitGranted(0n, 2, 0);
    m.commitDue(0);
    const [second] = m.drain().filter((e) => e.type === 'transaction');
    expect(second).toMatchObject({ plan: { checkpoint: { open: [{ offset: 0n, account: 'backup', at: 2 }] } } });
  });

  it('with the ledger off goes straight to a slot, without a mark', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a']);
    m.wantSend(0n, true, 1, 0);
    expect(types(m.drain())).toEqual(['acquire-slot:0']);
    m.slotGranted(0n, true);
    expect(types(m.drain())).toEqual(['call:0']);
  });

  it('is refused when the lease no longer holds at the slot, which fails the claim; its mark is withdrawn when it gives up', () => {
    const m = machine();
    markedAwaitingSlot(m);
    m.slotGranted(0n, false);
    expect(types(m.drain())).toEqual(expect.arrayContaining(['release-permit', 'refuse-call:0', 'abort-all']));
    expect(m.state).toBe('failed');
    m.abandoned(0n, false);
    expect(m.claim.open.has(0n)).toBe(false);
    expect(m.state).toBe('ended');
  });

  it('keeps the mark of a record whose earlier call may have reached the service, even when a later call surely did not', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a']);
    m.claim.open.set(0n, { offset: 0n, commandId: 'c0', at: 1 });
    m.wantSend(0n, true, 1, 0);
    m.slotGranted(0n, true);
    m.kept(0n, true); // kept after an ambiguous answer: this call may have reached the service
    m.wantSend(0n, true, 1, 0);
    m.slotGranted(0n, true);
    m.kept(0n, false); // this call surely did not reach the service; the first may have
    expect(m.claim.open.has(0n)).toBe(true);
    m.abandoned(0n, false);
    expect(m.claim.open.has(0n)).toBe(true);
  });

  it('a call kept for later gives its slot back at once (a command held by a pause holds no slot), and asks for one again', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a']);
    m.wantSend(0n, true, 1, 0);
    m.slotGranted(0n, true);
    m.drain();
    m.kept(0n, false);
    expect(types(m.drain())).toEqual(['release-slot']);
    expect(m.recordState(0n)).toBe('handling');
    m.wantSend(0n, true, 1, 0);
    expect(types(m.drain())).toEqual(['acquire-slot:0']);
  });

  it('a record waits for the previous record with its key; other keys go at once', () => {
    const m = machine();
    m.offer(0n, true, 0);
    m.take(0n, 'a');
    m.offer(1n, true, 0);
    m.take(1n, 'a');
    m.offer(2n, true, 0);
    m.take(2n, 'b');
    expect(types(m.drain()).filter((t) => t.startsWith('handle'))).toEqual(['handle:0', 'handle:2']);
    m.identify(0n, 'c0');
    m.finished(0n, 'r0', 0);
    expect(types(m.drain())).toContain('handle:1');
  });
});

describe('PartitionMachine: transactions', () => {
  it('never commit past a record that is not done', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a', 'b', 'c']);
    m.finished(1n, 'r1', 100);
    m.finished(2n, 'r2', 100);
    m.commitDue(100);
    expect(m.drain().some((e) => e.type === 'transaction')).toBe(false);
    m.finished(0n, 'r0', 200);
    m.commitDue(200);
    const transaction = m.drain().find((e) => e.type === 'transaction');
    expect(transaction).toMatchObject({ plan: { outcomes: ['r0', 'r1', 'r2'], commitOffset: 3n } });
  });

  it('publish an outcome done behind an unfinished record at once (ledger on), listing it as answered, and never again', () => {
    const m = machine();
    takeAll(m, ['a', 'b']);
    m.wantSend(0n, true, 5, 0);
    m.permitGranted(0n, 5, 0);
    m.finished(1n, 'r1', 0);
    m.commitDue(100);
    const ahead = m.drain().find((e) => e.type === 'transaction');
    expect(ahead).toMatchObject({
      plan: { outcomes: ['r1'], ahead: [1n], commitOffset: undefined, checkpoint: { next: 0n, done: [{ offset: 1n, commandId: 'c1' }] } },
    });
    m.transactionCommitted(101);
    expect(m.recordState(1n)).toBe('published');
    m.drain();
    // Offset 0 is sent and answered: the prefix 0–1 commits; r1 is not published a second time.
    m.slotGranted(0n, true);
    m.finished(0n, 'r0', 200);
    m.commitDue(300);
    const prefix = m.drain().find((e) => e.type === 'transaction');
    expect(prefix).toMatchObject({ plan: { outcomes: ['r0'], offsets: [0n, 1n], commitOffset: 2n, checkpoint: { next: 2n, open: [] } } });
  });

  it('plan how each transaction would be read back if it failed: by the checkpoint it wrote (ledger on), by its offset (ledger off), not at all when nothing it publishes would be duplicated', () => {
    const plans = (m: PartitionMachine<string>) => m.drain().flatMap((e) => (e.type === 'transaction' ? [e.plan] : []));
    // Ledger on: marks alone are written again harmlessly; an outcome published ahead, or an offset
    // moved, is read back by the checkpoint written with it.
    const on = new PartitionMachine<string>({
      claim: claim(),
      ledger: true,
      markPermits: true,
      maxRunAhead: 100,
      commitIntervalMs: 50,
      publishes: (o) => o !== 'dup',
    });
    takeAll(on, ['a', 'b', 'c']);
    on.wantSend(0n, true, 5, 0);
    on.permitGranted(0n, 5, 0);
    on.commitDue(0);
    const [marks] = plans(on);
    expect(marks?.readBack).toEqual({ by: 'nothing' });
    on.transactionCommitted(1);
    on.finished(1n, 'r1', 1);
    on.commitDue(100);
    const [ahead] = plans(on);
    // Each read-back also checks the claim's floor: the checkpoint it committed last.
    expect(ahead?.readBack).toEqual({ by: 'checkpoint', written: ahead?.checkpoint, floor: marks?.checkpoint });
    on.transactionCommitted(101);
    // An outcome that publishes nothing (a repeat's), ahead: nothing of its own to duplicate, the floor still to check.
    on.finished(2n, 'dup', 102);
    on.commitDue(200);
    const [repeat] = plans(on);
    expect([repeat?.outcomes, repeat?.commitOffset, repeat?.readBack]).toEqual([['dup'], undefined, { by: 'nothing', floor: ahead?.checkpoint }]);
    // Ledger off: by the offset.
    const off = machine({ ledger: false });
    takeAll(off, ['a']);
    off.finished(0n, 'r0', 0);
    off.commitDue(100);
    expect(plans(off)[0]?.readBack).toEqual({ by: 'offset', offset: 1n });
  });

  it('with the ledger off, publish only the contiguous prefix (nothing records what is answered ahead)', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a', 'b']);
    m.finished(1n, 'r1', 0);
    m.commitDue(100);
    expect(m.drain().some((e) => e.type === 'transaction')).toBe(false);
  });

  it('list in the checkpoint every mark still open past the offset they commit', () => {
    const m = machine();
    takeAll(m, ['a', 'b']);
    m.wantSend(1n, true, 5, 0);
    m.permitGranted(1n, 5, 0);
    m.finished(0n, 'r0', 0);
    m.commitDue(100);
    const transaction = m.drain().find((e) => e.type === 'transaction');
    expect(transaction).toMatchObject({ plan: { marks: [1n], commitOffset: 1n, checkpoint: { next: 1n, open: [{ offset: 1n, commandId: 'c1', at: 5 }] } } });
  });

  it('a failed transaction fails the claim: waits are cut, nothing more commits, the lane ends with the failure', () => {
    const m = machine();
    takeAll(m, ['a']);
    m.wantSend(0n, true, 1, 0);
    m.permitGranted(0n, 1, 0);
    m.commitDue(0);
    m.drain();
    const failure = new Error('broker gone');
    m.transactionFailed(failure, 1);
    expect(types(m.drain())).toEqual(expect.arrayContaining(['abort-all', 'refuse-call:0']));
    expect(m.state).toBe('failed');
    m.abandoned(0n, false);
    expect(m.drain().at(-1)).toEqual({ type: 'ended', failure });
  });

  it('a retired claim commits what is done, then ends', () => {
    const m = machine({ ledger: false });
    takeAll(m, ['a']);
    m.finished(0n, 'r0', 0);
    m.drain();
    m.retire();
    const [transaction] = m.drain().filter((e) => e.type === 'transaction');
    expect(transaction).toMatchObject({ plan: { closing: true, commitOffset: 1n } });
    m.transactionCommitted(1);
    expect(m.drain().at(-1)).toEqual({ type: 'ended' });
    expect(m.state).toBe('ended');
  });
});

describe('PartitionMachine: taking records', () => {
  it('stops fetching at the run-ahead bound and fetches again when half of it is committed', () => {
    const m = machine({ ledger: false, maxRunAhead: 2 });
    takeAll(m, ['a', 'b']);
    expect(m.offer(2n, true, 0)).toBe('full');
    expect(m.drain()).toContainEqual({ type: 'hold-fetching', held: true });
    m.finished(0n, 'r0', 0);
    m.finished(1n, 'r1', 0);
    m.commitDue(100);
    m.drain();
    m.transactionCommitted(101);
    expect(m.drain()).toContainEqual({ type: 'hold-fetching', held: false });
  });

  it('skips what an earlier owner answered and reports its in-doubt mark instead of sending', () => {
    const c = claim(5n, [[6n, 'c6']]);
    const m = machine({ claim: { ...c, answered: new Map([[7n, 'c7']]) } });
    expect(m.offer(4n, true, 0)).toBe('skip');
    expect(m.offer(7n, true, 0)).toBe('skip');
    expect(m.offer(6n, true, 0)).toBe('take');
    m.take(6n, 'a');
    expect(m.identify(6n, 'c6')).toEqual({ kind: 'in-doubt', mark: { offset: 6n, commandId: 'c6', at: 1 } });
  });

  it('refuses a move its table does not list', () => {
    const m = machine();
    takeAll(m, ['a']);
    expect(() => m.kept(0n, false)).toThrow(/cannot go from handling to handling on kept/);
  });
});

describe('PartitionMachine: a rebalance holds, then keeps or retires', () => {
  it('holding, a record about to call waits (held), keeping its slot; kept, it calls', () => {
    const m = machine();
    markedAwaitingSlot(m);
    m.hold();
    expect(m.state).toBe('holding');
    expect(m.offer(1n, true, 0)).toBe('closed');
    m.slotGranted(0n, true);
    expect(types(m.drain())).not.toContain('call:0');
    expect(m.recordState(0n)).toBe('held');
    m.keep(true);
    expect(m.state).toBe('active');
    expect(types(m.drain())).toContain('call:0');
    expect(m.recordState(0n)).toBe('calling');
    expect(m.offer(1n, true, 0)).toBe('take');
  });

  it('holding, marks still commit and calls under way still finish; retired, a held record is refused and its mark withdrawn', () => {
    const m = machine();
    markedAwaitingSlot(m);
    m.hold();
    m.slotGranted(0n, true);
    m.drain();
    m.retire();
    expect(m.state).toBe('retiring');
    expect(types(m.drain())).toContain('refuse-call:0');
    m.abandoned(0n, false, 5);
    expect(types(m.drain())).toContain('release-slot');
    expect(m.claim.open.has(0n)).toBe(false);
  });

  it('a held record whose lease is gone by the keep is refused, and the claim fails', () => {
    const m = machine();
    markedAwaitingSlot(m);
    m.hold();
    m.slotGranted(0n, true);
    m.keep(false);
    expect(types(m.drain())).toEqual(expect.arrayContaining(['refuse-call:0', 'abort-all']));
    expect(m.state).toBe('failed');
  });
});

describe('PartitionMachine: a withdrawn mark commits at once', () => {
  it('a record given up unsent while a slower call holds the retiring claim open: its withdrawal is a transaction of its own, not the closing one', () => {
    const m = machine();
    // Record 0 calls (slow); record 1 is marked and waits for a slot.
    oneCallingOneAwaitingSlot(m);
    m.retire();
    m.drain();
    m.abandoned(1n, false, 10);
    const effects = m.drain();
    expect(effects).toContainEqual({ type: 'arm-commit', delayMs: 0 });
    m.commitDue(10);
    const [transaction] = m.drain();
    expect(transaction).toMatchObject({ type: 'transaction', plan: { closing: false, checkpoint: { open: [{ offset: 0n }] } } });
    expect(m.recordState(0n)).toBe('calling');
  });
});

describe('PartitionMachine: a refused call withdraws its mark at once', () => {
  it('a call that surely did not reach the service (refused, then held for a pause) has its mark dropped in a transaction of its own', () => {
    const m = machine();
    markedAwaitingSlot(m);
    m.slotGranted(0n, true);
    m.drain();
    m.kept(0n, false, 5);
    expect(m.drain()).toContainEqual({ type: 'arm-commit', delayMs: 0 });
    m.commitDue(5);
    const [transaction] = m.drain();
    expect(transaction).toMatchObject({ type: 'transaction', plan: { checkpoint: { open: [] } } });
    expect(m.recordState(0n)).toBe('handling');
  });
});

describe('PartitionMachine: an earlier owner’s mark', () => {
  it('stays when its record is given up before it was even identified (a forced stop while decoding): only a result settles it', () => {
    const m = machine({ claim: claim(0n, [[0n, 'c0']]) });
    expect(m.offer(0n, true, 0)).toBe('take');
    m.take(0n, 'a');
    m.drain();
    m.abandoned(0n, false, 1);
    expect(m.claim.open.has(0n)).toBe(true);
  });

  it('given up, it keeps its commandId in the repeat window: an earlier record of the same command is a repeat, never new', () => {
    // The earlier owner identified offset 2 first (records of different keys are decoded
    // concurrently), so the mark is there and offset 1 was its repeat. The shipped-lane simulation
    // found this published a second result: offset 1 taken for new once 2 was given up.
    const inherited = buildClaim(
      { topic: 't', partition: 0, generation: 2, markOwner: 'next' },
      0n,
      { next: 0n, open: [{ offset: 2n, commandId: 'c1', at: 1, by: 'earlier.1' }] },
      [],
      100,
    );
    const m = machine({ claim: inherited });
    for (const [offset, key] of [
      [1n, 'a'],
      [2n, 'b'],
    ] as const) {
      expect(m.offer(offset, true, 0)).toBe('take');
      m.take(offset, key);
    }
    expect(m.identify(2n, 'c1').kind).toBe('in-doubt');
    m.abandoned(2n, false, 1);
    expect(m.claim.open.has(2n)).toBe(true);
    expect(m.identify(1n, 'c1')).toEqual({ kind: 'duplicate', firstOffset: 2n });
  });

  it('a record given up with nothing left open forgets its commandId: the command may come again', () => {
    const m = machine();
    takeAll(m, ['a']);
    m.abandoned(0n, false, 1);
    expect(m.claim.dedup.firstOffset('c0')).toBeUndefined();
  });
});

const handovers = (effects: Effect<string>[]): { offset: bigint; by: string | undefined; outcome: string | undefined }[] =>
  effects.flatMap((e) => (e.type === 'handover' ? [{ offset: e.offset, by: e.mark.by, outcome: e.outcome }] : []));

/** Takes record 0 and brings it to a call under way (its mark committed). */
function calling(m: PartitionMachine<string>): void {
  markedAwaitingSlot(m);
  m.slotGranted(0n, true);
  m.drain();
}

describe('PartitionMachine: handing over when the claim stops working the partition', () => {
  it('names each mark uniquely: the claim’s owner and a count', () => {
    const m = machine();
    takeAll(m, ['a', 'b']);
    for (const offset of [0n, 1n]) {
      m.wantSend(offset, true, 1, 0);
      m.permitGranted(offset, 1, 0);
    }
    expect([...m.claim.open.values()].map((mark) => mark.by)).toEqual(['test.1', 'test.2']);
  });

  it('hands nothing over while the claim works (its own transactions commit the outcome)', () => {
    const m = machine();
    calling(m);
    m.finished(0n, 'SENT', 2);
    expect(handovers(m.drain())).toEqual([]);
  });

  it('a call that ends after the claim retired: its outcome is handed over (the next owner may have fenced the last transaction)', () => {
    const m = machine();
    calling(m);
    m.retire();
    expect(handovers(m.drain())).toEqual([]);
    m.finished(0n, 'SENT', 2);
    expect(handovers(m.drain())).toEqual([{ offset: 0n, by: 'test.1', outcome: 'SENT' }]);
  });

  it('an outcome done but not yet committed when the claim retires or fails is handed over then', () => {
    for (const stop of ['retire', 'fail'] as const) {
      const m = machine();
      calling(m);
      m.finished(0n, 'SENT', 2);
      m.drain();
      if (stop === 'retire') m.retire();
      else m.fail(new Error('fenced'));
      expect(handovers(m.drain())).toEqual([{ offset: 0n, by: 'test.1', outcome: 'SENT' }]);
    }
  });

  it('an outcome in a transaction under way when the claim retires or fails is handed over too (the next owner’s fence may abort that transaction)', () => {
    for (const stop of ['retire', 'transaction-fenced'] as const) {
      const m = machine({ handovers: true });
      calling(m);
      m.finished(0n, 'SENT', 2);
      m.commitDue(2);
      expect(m.drain()).toContainEqual(expect.objectContaining({ type: 'transaction', plan: expect.objectContaining({ outcomes: ['SENT'] }) }));
      m.hold();
      if (stop === 'retire') m.retire(true, 3);
      else m.transactionFailed(new Error('fenced by the next owner'), 3);
      expect(handovers(m.drain())).toEqual([{ offset: 0n, by: 'test.1', outcome: 'SENT' }]);
      // Retired first, the transaction then fails: nothing is handed over twice.
      if (stop === 'retire') {
        m.transactionFailed(new Error('fenced by the next owner'), 4);
        expect(handovers(m.drain())).toEqual([]);
      }
    }
  });

  it('a committed mark whose record is refused at retirement is handed over as withdrawn, never one whose call is under way', () => {
    const m = machine();
    oneCallingOneAwaitingSlot(m);
    expect(m.recordState(1n)).toBe('awaiting-slot');
    m.retire();
    m.drain();
    m.abandoned(1n, false, 3);
    expect(handovers(m.drain())).toEqual([{ offset: 1n, by: 'test.2', outcome: undefined }]);
    expect(m.recordState(0n)).toBe('calling');
  });

  it('a mark withdrawn while the claim worked, its drop not yet committed, is handed over as withdrawn when the claim retires', () => {
    const m = machine();
    calling(m);
    m.kept(0n, false, 5);
    m.drain();
    m.retire();
    expect(handovers(m.drain())).toEqual([{ offset: 0n, by: 'test.1', outcome: undefined }]);
  });

  it('a withdrawal a committed checkpoint dropped is not handed over again', () => {
    const m = machine();
    calling(m);
    m.kept(0n, false, 5);
    m.commitDue(5);
    m.transactionCommitted(6);
    m.drain();
    m.retire();
    expect(handovers(m.drain())).toEqual([]);
  });

  it('an in-doubt mark handed over as withdrawn: the mark is dropped and the record goes on to send under a mark of its own', () => {
    const m = machine({ claim: claim(0n, [[0n, 'c0']]) });
    expect(m.offer(0n, true, 0)).toBe('take');
    m.take(0n, 'a');
    expect(m.identify(0n, 'c0').kind).toBe('in-doubt');
    m.handedOver(0n);
    expect(m.claim.inDoubt.has(0n)).toBe(false);
    m.wantSend(0n, true, 7, 0);
    m.permitGranted(0n, 7, 0);
    expect(m.claim.open.get(0n)).toMatchObject({ at: 7, by: 'test.1' });
    expect(m.recordState(0n)).toBe('marking');
  });
});

describe('PartitionMachine: no transaction while the partition may be fenced by its next owner (handovers on)', () => {
  const transactions = (effects: Effect<string>[]): number => effects.filter((e) => e.type === 'transaction').length;

  it('begins none while the group rebalances: a mark opened meanwhile commits once the claim is kept', () => {
    const m = machine({ handovers: true });
    takeAll(m, ['a']);
    m.hold();
    m.wantSend(0n, true, 1, 0);
    m.permitGranted(0n, 1, 0);
    m.commitDue(1);
    expect(transactions(m.drain())).toBe(0);
    m.keep(true, 2);
    expect(m.drain()).toContainEqual({ type: 'arm-commit', delayMs: 0 });
    m.commitDue(2);
    expect(m.drain()).toContainEqual(expect.objectContaining({ type: 'transaction', plan: expect.objectContaining({ marks: [0n] }) }));
  });

  it('begins none once its partition moved to another member: outcomes are handed over, and the claim ends without a last transaction', () => {
    const m = machine({ handovers: true });
    calling(m);
    m.retire(true, 3);
    m.finished(0n, 'SENT', 4);
    const effects = m.drain();
    expect(transactions(effects)).toBe(0);
    expect(handovers(effects)).toEqual([{ offset: 0n, by: 'test.1', outcome: 'SENT' }]);
    expect(m.state).toBe('ended');
  });

  it('retired for shutdown (or not kept but assigned here again), it still commits what is done', () => {
    const m = machine({ handovers: true });
    calling(m);
    m.retire(false, 3);
    m.finished(0n, 'SENT', 4);
    expect(m.drain()).toContainEqual(expect.objectContaining({ type: 'transaction', plan: expect.objectContaining({ closing: true, outcomes: ['SENT'] }) }));
  });
});

describe('PartitionMachine: retiring for shutdown', () => {
  it('commits what is done at once, and says when that transaction has ended (the process then leaves its group)', () => {
    const m = machine();
    calling(m);
    expect(m.offer(1n, true, 0)).toBe('take');
    m.take(1n, 'b');
    m.identify(1n, 'c1');
    m.finished(1n, 'REJECTED', 2);
    m.drain();
    expect(m.retireCommitted).toBe(true);
    m.retire(false, 3);
    expect(m.drain()).toContainEqual({ type: 'arm-commit', delayMs: 0 });
    expect(m.retireCommitted).toBe(false);
    m.commitDue(3);
    expect(m.drain()).toContainEqual(expect.objectContaining({ type: 'transaction', plan: expect.objectContaining({ outcomes: ['REJECTED'] }) }));
    expect(m.retireCommitted).toBe(false);
    m.transactionCommitted(4);
    // The call under way goes on; the process need not wait for it to leave.
    expect(m.retireCommitted).toBe(true);
    expect(m.recordState(0n)).toBe('calling');
  });
});
