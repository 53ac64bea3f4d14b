import { describe, expect, it } from 'vitest';
import {
  checkpointKey,
  decodeCheckpoint,
  encodeCheckpoint,
  recoveryPlan,
  withHangingMarks,
  type Checkpoint,
} from '../../../src/worker/lane/ledger-checkpoint.ts';

const key = Buffer.from(checkpointKey('g', 'cmds'));

describe('ledger checkpoint encoding', () => {
  it('round-trips offsets beyond 2^53 and the open marks', () => {
    const checkpoint: Checkpoint = {
      next: 9_007_199_254_740_993n,
      open: [
        { offset: 9_007_199_254_740_993n, commandId: 'cmd-1', at: 1_700_000_000_000 },
        { offset: 9_007_199_254_740_995n, commandId: 'cmd-2', at: 1_700_000_000_001 },
      ],
    };
    expect(decodeCheckpoint(key, encodeCheckpoint(checkpoint), 'checkpoint/g/cmds')).toEqual(checkpoint);
  });

  it('round-trips the records answered ahead of the offset, and lists them as marks too for readers of the previous release', () => {
    const checkpoint: Checkpoint = {
      next: 4n,
      open: [{ offset: 4n, commandId: 'cmd-4', at: 1_700_000_000_000 }],
      done: [{ offset: 5n, commandId: 'cmd-5' }],
    };
    const encoded = encodeCheckpoint(checkpoint);
    expect(decodeCheckpoint(key, encoded, 'checkpoint/g/cmds')).toEqual(checkpoint);
    // A reader that ignores `done` sees offset 5 as a mark: it reports UNKNOWN rather than send again.
    const raw = JSON.parse(encoded.toString('utf8')) as { v: number; open: { o: string }[] };
    expect(raw.v).toBe(1);
    expect(raw.open.map((m) => m.o)).toEqual(['4', '5']);
  });

  it("round-trips a mark's account; a reader of the previous release ignores it; an account this version cannot read is left out, the mark kept", () => {
    const checkpoint: Checkpoint = { next: 1n, open: [{ offset: 1n, commandId: 'cmd-1', at: 5, by: 'w.1', account: 'backup' }] };
    const encoded = encodeCheckpoint(checkpoint);
    expect(decodeCheckpoint(key, encoded, 'checkpoint/g/cmds')).toEqual(checkpoint);
    expect((JSON.parse(encoded.toString('utf8')) as { open: { ac?: string }[] }).open[0]?.ac).toBe('backup');
    const tooLong = Buffer.from(JSON.stringify({ v: 1, next: '1', open: [{ o: '1', id: 'c', at: 5, ac: 'x'.repeat(33) }] }));
    expect(decodeCheckpoint(key, tooLong, 'checkpoint/g/cmds')).toEqual({ next: 1n, open: [{ offset: 1n, commandId: 'c', at: 5 }] });
    const notText = Buffer.from(JSON.stringify({ v: 1, next: '1', open: [{ o: '1', id: 'c', at: 5, ac: 7 }] }));
    expect(decodeCheckpoint(key, notText, 'checkpoint/g/cmds')).toEqual({ next: 1n, open: [{ offset: 1n, commandId: 'c', at: 5 }] });
  });

  it('refuses a checkpoint whose answered records are malformed', () => {
    const bad = Buffer.from(JSON.stringify({ v: 1, next: '1', open: [], done: [{ o: 'x', id: 'c' }] }));
    expect(decodeCheckpoint(key, bad, 'checkpoint/g/cmds')).toBeUndefined();
  });

  it('cuts commandIds to 256 characters (they are informational; the offset identifies the record)', () => {
    const decoded = decodeCheckpoint(key, encodeCheckpoint({ next: 1n, open: [{ offset: 1n, commandId: 'x'.repeat(1_000), at: 1 }] }), 'checkpoint/g/cmds');
    expect(decoded?.open[0]?.commandId).toHaveLength(256);
  });

  it.each([
    ['another key', Buffer.from('other'), encodeCheckpoint({ next: 1n, open: [] })],
    ['no key', null, encodeCheckpoint({ next: 1n, open: [] })],
    ['a tombstone', key, null],
    ['not JSON', key, Buffer.from('{not json')],
    ['JSON null', key, Buffer.from('null')],
    ['a JSON string', key, Buffer.from('"checkpoint"')],
    ['another version', key, Buffer.from(JSON.stringify({ v: 2, next: '1', open: [] }))],
    ['a numeric next', key, Buffer.from(JSON.stringify({ v: 1, next: 1, open: [] }))],
    ['a negative next', key, Buffer.from(JSON.stringify({ v: 1, next: '-1', open: [] }))],
    ['a next with leading zeros', key, Buffer.from(JSON.stringify({ v: 1, next: '01', open: [] }))],
    ['a next beyond int64', key, Buffer.from(JSON.stringify({ v: 1, next: '99999999999999999999', open: [] }))],
    ['open not an array', key, Buffer.from(JSON.stringify({ v: 1, next: '1', open: {} }))],
    ['a null mark', key, Buffer.from(JSON.stringify({ v: 1, next: '1', open: [null] }))],
    ['a mark without id', key, Buffer.from(JSON.stringify({ v: 1, next: '1', open: [{ o: '1', at: 1 }] }))],
    ['a mark with a bad offset', key, Buffer.from(JSON.stringify({ v: 1, next: '1', open: [{ o: 'x', id: 'a', at: 1 }] }))],
    ['a mark with a string time', key, Buffer.from(JSON.stringify({ v: 1, next: '1', open: [{ o: '1', id: 'a', at: '1' }] }))],
  ])('reads %s as no checkpoint', (_, k, value) => {
    expect(decodeCheckpoint(k, value, 'checkpoint/g/cmds')).toBeUndefined();
  });
});

describe('recoveryPlan', () => {
  const mark = (offset: bigint) => ({ offset, commandId: `c${offset}`, at: 1 });

  it('starts at the group offset when there is no checkpoint, with nothing in doubt', () => {
    const plan = recoveryPlan(7n, undefined);
    expect(plan.start).toBe(7n);
    expect(plan.inDoubt.size).toBe(0);
  });

  it('starts at the later of the group offset and the checkpoint', () => {
    expect(recoveryPlan(5n, { next: 9n, open: [] }).start).toBe(9n);
    expect(recoveryPlan(12n, { next: 9n, open: [] }).start).toBe(12n);
  });

  it('carries the records answered ahead of the start (never sent or published again), and does not count them in doubt', () => {
    const plan = recoveryPlan(4n, {
      next: 4n,
      open: [mark(4n)],
      done: [
        { offset: 3n, commandId: 'c3' },
        { offset: 5n, commandId: 'c5' },
      ],
    });
    expect([...plan.answered]).toEqual([[5n, 'c5']]);
    expect([...plan.inDoubt.keys()]).toEqual([4n]);
  });

  it('inherits only the marks at or after the start (those below it have committed results)', () => {
    const plan = recoveryPlan(10n, { next: 8n, open: [mark(8n), mark(10n), mark(11n)] });
    expect([...plan.inDoubt.keys()]).toEqual([10n, 11n]);
  });
});

describe('withHangingMarks (a claim after its fence, the ledger holding checkpoints of unknown fate)', () => {
  const mark = (offset: bigint, by?: string) => ({ offset, commandId: `c${offset}`, at: 1, ...(by !== undefined && { by }) });

  it('is the committed checkpoint when nothing is unsure', () => {
    const committed: Checkpoint = { next: 3n, open: [mark(3n, 'a-1')] };
    expect(withHangingMarks(committed, [])).toBe(committed);
    expect(withHangingMarks(undefined, [])).toBeUndefined();
  });

  it('keeps the marks the unsure checkpoints carried past the committed one in doubt, with their names; a record they answered without a mark was never called, and is handled again', () => {
    const committed: Checkpoint = { next: 5n, open: [mark(5n, 'a-1')], done: [{ offset: 7n, commandId: 'c7' }] };
    const unsure: Checkpoint[] = [
      { next: 5n, open: [mark(5n, 'a-1'), mark(6n, 'a-2')] },
      // 8 answered in the lost transaction without a call (no mark: rejected, say), 7 answered before.
      {
        next: 6n,
        open: [mark(6n, 'a-2')],
        done: [
          { offset: 7n, commandId: 'c7' },
          { offset: 8n, commandId: 'c8' },
        ],
      },
      // Below the committed next: its result is committed.
      { next: 2n, open: [mark(2n, 'a-0')] },
    ];
    expect(withHangingMarks(committed, unsure)).toEqual({
      next: 5n,
      // 5 is below the second unsure checkpoint's next: that transaction answered it (`answered`).
      open: [{ ...mark(5n, 'a-1'), answered: true }, mark(6n, 'a-2')],
      done: [{ offset: 7n, commandId: 'c7' }],
    });
    // Nothing committed yet: from 0, every mark kept.
    expect(withHangingMarks(undefined, [{ next: 0n, open: [mark(1n, 'a-1')] }])).toEqual({ next: 0n, open: [mark(1n, 'a-1')] });
  });

  it('of one offset keeps the latest mark: a later claim settled the earlier one and marked the record anew (a handover of the earlier name says nothing of the new call)', () => {
    // a-1's mark was handed over as withdrawn; the next claim marked the record as b-1 and called it.
    const kept = withHangingMarks({ next: 0n, open: [mark(0n, 'a-1')] }, [{ next: 0n, open: [mark(0n, 'b-1')] }]);
    expect(kept?.open).toEqual([mark(0n, 'b-1')]);
  });

  it('marks the kept marks an unsure transaction answered (in its done, or below its next) `answered`, and the checkpoint carries that', () => {
    const key = 'checkpoint/g/t';
    const kept = withHangingMarks({ next: 4n, open: [mark(4n, 'a-1'), mark(5n, 'a-2'), mark(6n, 'a-3')] }, [
      { next: 5n, open: [mark(5n, 'a-2'), mark(6n, 'a-3')], done: [{ offset: 6n, commandId: 'c6' }] },
    ]);
    expect(kept?.open).toEqual([{ ...mark(4n, 'a-1'), answered: true }, mark(5n, 'a-2'), { ...mark(6n, 'a-3'), answered: true }]);
    expect(decodeCheckpoint(Buffer.from(key), encodeCheckpoint(kept as Checkpoint), key)).toEqual(kept);
    // A checkpoint written without it reads without it.
    expect(decodeCheckpoint(Buffer.from(key), encodeCheckpoint({ next: 4n, open: [mark(4n, 'a-1')] }), key)?.open[0]).not.toHaveProperty('answered');
  });

  it('with `uncalled`, also keeps the records they answered without a mark, to look for their results first: named, marked `answered` and `uncalled`, from their earliest mark', () => {
    const key = 'checkpoint/g/t';
    const unsure: Checkpoint[] = [
      {
        next: 4n,
        open: [
          { ...mark(5n, 'a-1'), at: 700 },
          { ...mark(9n, 'a-3'), at: 900 },
        ],
        // 6 rejected (no call); 7 a repeat (answered without its commandId); 4 answered in the committed one.
        done: [
          { offset: 4n, commandId: 'c4' },
          { offset: 6n, commandId: 'c6' },
          { offset: 7n, commandId: '' },
        ],
      },
    ];
    const committed: Checkpoint = { next: 4n, open: [], done: [{ offset: 4n, commandId: 'c4' }] };
    expect(withHangingMarks(committed, unsure)?.open.map((m) => m.offset)).toEqual([5n, 9n]);
    const kept = withHangingMarks(committed, unsure, { uncalled: true });
    expect(kept?.open).toEqual([
      { ...mark(5n, 'a-1'), at: 700 },
      { offset: 6n, commandId: 'c6', at: 700, by: 'answered.6', answered: true, uncalled: true },
      { ...mark(9n, 'a-3'), at: 900 },
    ]);
    expect(decodeCheckpoint(Buffer.from(key), encodeCheckpoint(kept as Checkpoint), key)).toEqual(kept);
    // No mark to tell when they began: `fallbackAt` (never 0, a search from the topic's start).
    const unmarked = withHangingMarks(undefined, [{ next: 0n, open: [], done: [{ offset: 2n, commandId: 'c2' }] }], { uncalled: true, fallbackAt: 5_000 });
    expect(unmarked?.open.map((m) => m.at)).toEqual([5_000]);
  });

  it('recoveryPlan then puts them in doubt: the next claim reports them, never sends them again', () => {
    const kept = withHangingMarks({ next: 5n, open: [] }, [{ next: 5n, open: [mark(6n, 'a-2')] }]);
    expect([...recoveryPlan(5n, kept).inDoubt.keys()]).toEqual([6n]);
    // The committed checkpoint alone (before): 6 looked never marked.
    expect([...recoveryPlan(5n, { next: 5n, open: [] }).inDoubt.keys()]).toEqual([]);
  });
});
