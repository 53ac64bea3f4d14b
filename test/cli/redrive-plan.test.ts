import { describe, expect, it } from 'vitest';
import type { DeadLetter } from '../../src/contracts/dead-letter.ts';
import { parseTime, REDRIVEN_FROM_HEADER, redriveRecord, selected, unreplayable } from '../../src/cli/redrive-plan.ts';
import { progressBar, summaryLines } from '../../src/cli/redrive.ts';

function letter(over: Partial<DeadLetter> = {}): DeadLetter {
  return {
    key: Buffer.from('cmd-1'),
    value: Buffer.from([0, 0, 0, 0, 7, 1, 2, 3]),
    headers: [],
    source: { topic: 'sms.commands', partition: 2, offset: '40' },
    error: { code: 'UNKNOWN_SCHEMA_ID', message: 'schema id 7 is not in the registry' },
    deadLetteredAt: Date.parse('2026-12-06T10:00:00Z'),
    omitted: [],
    ...over,
  };
}

describe('selected', () => {
  it('lets everything through without filters', () => {
    expect(selected(letter(), {})).toBe(true);
  });

  it('filters by code', () => {
    expect(selected(letter(), { codes: new Set(['UNKNOWN_SCHEMA_ID']) })).toBe(true);
    expect(selected(letter(), { codes: new Set(['UNDECODABLE', 'NOT_CONFLUENT_FRAMING']) })).toBe(false);
  });

  it('takes the time range as since inclusive, until exclusive', () => {
    const at = Date.parse('2026-12-06T10:00:00Z');
    expect(selected(letter(), { since: at })).toBe(true);
    expect(selected(letter(), { since: at + 1 })).toBe(false);
    expect(selected(letter(), { until: at })).toBe(false);
    expect(selected(letter(), { until: at + 1 })).toBe(true);
  });

  it('filters by source topic, partition and offset range (from inclusive, to exclusive)', () => {
    expect(selected(letter(), { sourceTopic: 'sms.commands', sourcePartition: 2 })).toBe(true);
    expect(selected(letter(), { sourceTopic: 'other' })).toBe(false);
    expect(selected(letter(), { sourcePartition: 0 })).toBe(false);
    expect(selected(letter(), { fromOffset: 40n, toOffset: 41n })).toBe(true);
    expect(selected(letter(), { fromOffset: 41n })).toBe(false);
    expect(selected(letter(), { toOffset: 40n })).toBe(false);
  });

  it('compares offsets beyond 2^53 exactly', () => {
    const big = letter({ source: { topic: 't', partition: 0, offset: '9007199254740993' } });
    expect(selected(big, { fromOffset: 9007199254740993n })).toBe(true);
    expect(selected(big, { fromOffset: 9007199254740994n })).toBe(false);
  });
});

describe('unreplayable', () => {
  it('refuses a dead letter that left parts of the record out', () => {
    expect(unreplayable(letter({ omitted: [{ part: 'value', size: 2_000_000, sha256: 'ab' }] }))).toBe('reduced');
  });

  it('refuses a record dead-lettered for its size (it would be again)', () => {
    expect(unreplayable(letter({ error: { code: 'RECORD_TOO_LARGE', message: 'x' } }))).toBe('too-large');
  });

  it('accepts a whole record with any other code', () => {
    expect(unreplayable(letter())).toBeUndefined();
    expect(unreplayable(letter({ error: { code: 'UNDECODABLE', message: 'x' } }))).toBeUndefined();
  });
});

describe('redriveRecord', () => {
  it('keeps key, value and headers byte for byte, repeats in order, and adds where it was dead-lettered', () => {
    const record = redriveRecord(
      letter({
        headers: [
          { key: 'traceparent', value: Buffer.from('00-abc-def-01') },
          { key: 'tag', value: Buffer.from('a') },
          { key: 'tag', value: Buffer.from('b') },
          { key: 'tag', value: Buffer.from('c') },
          { key: 'empty', value: null },
        ],
      }),
      { topic: 'sms.commands.dlq', partition: 1, offset: 12n },
    );
    expect(record.key).toEqual(Buffer.from('cmd-1'));
    expect(record.value).toEqual(Buffer.from([0, 0, 0, 0, 7, 1, 2, 3]));
    expect(record.headers).toEqual({
      traceparent: Buffer.from('00-abc-def-01'),
      tag: [Buffer.from('a'), Buffer.from('b'), Buffer.from('c')],
      empty: Buffer.alloc(0),
      [REDRIVEN_FROM_HEADER]: Buffer.from('sms.commands.dlq/1/12'),
    });
  });

  it('replaces the header an earlier redrive added rather than repeating it', () => {
    const record = redriveRecord(letter({ headers: [{ key: REDRIVEN_FROM_HEADER, value: Buffer.from('sms.commands.dlq/0/3') }] }), {
      topic: 'sms.commands.dlq',
      partition: 0,
      offset: 9n,
    });
    expect(record.headers[REDRIVEN_FROM_HEADER]).toEqual(Buffer.from('sms.commands.dlq/0/9'));
  });

  it('keeps a null key null (the record then lands where the producer puts it)', () => {
    expect(redriveRecord(letter({ key: null }), { topic: 'd', partition: 0, offset: 0n }).key).toBeNull();
  });
});

describe('parseTime', () => {
  it('reads epoch milliseconds and ISO 8601', () => {
    expect(parseTime('1765015200000')).toBe(1_765_015_200_000);
    expect(parseTime('2026-12-06T10:00:00Z')).toBe(Date.parse('2026-12-06T10:00:00Z'));
    expect(parseTime('2026-12-06')).toBe(Date.parse('2026-12-06'));
  });

  it('refuses anything else', () => {
    expect(parseTime('yesterday')).toBeUndefined();
    expect(parseTime('')).toBeUndefined();
  });
});

describe('summaryLines and progressBar', () => {
  const summary = {
    read: 10,
    selected: 8,
    published: 0,
    wouldPublish: 4,
    overMax: 1,
    stillUndecodable: { UNKNOWN_SCHEMA_ID: 2 },
    reduced: 1,
    tooLarge: 0,
    unreadable: 1,
  };

  it('says a dry run is one, and why each selected letter was left', () => {
    expect(summaryLines(summary, { execute: false, max: 4 })).toEqual([
      'dead letters read: 10; selected by the filters: 8',
      'would publish: 4 (a dry run: --execute publishes)',
      'not published, beyond --max 4: 1 (run again for them)',
      'not published, still undecodable: UNKNOWN_SCHEMA_ID 2',
      'not published, parts left out of the dead letter: 1',
      'records of the topic that are not dead letters: 1',
    ]);
  });

  it('counts what was published when executed', () => {
    expect(
      summaryLines({ ...summary, published: 4, wouldPublish: 0, overMax: 0, stillUndecodable: {}, reduced: 0, unreadable: 0 }, { execute: true, max: 10 }),
    ).toEqual(['dead letters read: 10; selected by the filters: 8', 'published: 4']);
  });

  it('draws the bar in proportion', () => {
    expect(progressBar(5, 10, 10)).toBe('[#####-----] 5/10');
    expect(progressBar(0, 0, 4)).toBe('[####] 0/0');
  });
});
