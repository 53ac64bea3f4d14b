import { describe, expect, it } from 'vitest';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint, recoveryPlan, type Checkpoint } from '../../src/worker/ledger-checkpoint.ts';

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
