import { describe, expect, it } from 'vitest';
import { decodeHandover, encodeHandover, handoverKey } from '../../../src/worker/ownership/handover-record.ts';
import type { CommandResult } from '../../../src/contracts/result.ts';

const KEY = handoverKey('group', 'commands');
const mark = { offset: 7n, commandId: 'c7', at: 1_000, by: 'owner.3' };
const result = { commandId: 'c7', outcome: 'SENT', messages: [], attempts: 1 } as unknown as CommandResult;

describe('handover record', () => {
  it('round-trips a result and a withdrawal, naming the mark it settles', () => {
    const sent = encodeHandover(7n, mark, { kind: 'result', result });
    expect(decodeHandover(Buffer.from(KEY), sent ?? null, KEY)).toEqual({ offset: 7n, by: 'owner.3', settlement: { kind: 'result', result } });
    const withdrawn = encodeHandover(7n, mark, { kind: 'withdrawn' });
    expect(decodeHandover(Buffer.from(KEY), withdrawn ?? null, KEY)).toEqual({ offset: 7n, by: 'owner.3', settlement: { kind: 'withdrawn' } });
  });

  it('writes nothing for a mark without a name (made by a version before handovers)', () => {
    expect(encodeHandover(7n, { offset: 7n, commandId: 'c7', at: 1 }, { kind: 'withdrawn' })).toBeUndefined();
  });

  it('reads nothing under another key (a checkpoint, another group or topic) or in another shape', () => {
    const value = encodeHandover(7n, mark, { kind: 'withdrawn' }) ?? null;
    expect(decodeHandover(Buffer.from(handoverKey('other', 'commands')), value, KEY)).toBeUndefined();
    expect(decodeHandover(Buffer.from('checkpoint/group/commands'), value, KEY)).toBeUndefined();
    for (const bad of [
      'not json',
      '{"v":2,"o":"7","by":"a.1","withdrawn":true}',
      '{"v":1,"o":"-1","by":"a.1","withdrawn":true}',
      '{"v":1,"o":"7","by":"","withdrawn":true}',
      `{"v":1,"o":"7","by":"${'x'.repeat(65)}","withdrawn":true}`,
      '{"v":1,"o":"7","by":"a.1"}',
      '{"v":1,"o":"7","by":"a.1","withdrawn":true,"result":{"commandId":"c7","outcome":"SENT"}}',
      '{"v":1,"o":"7","by":"a.1","result":{"outcome":"SENT"}}',
    ])
      expect(decodeHandover(Buffer.from(KEY), Buffer.from(bad), KEY), bad).toBeUndefined();
  });
});
