import { createHash } from 'node:crypto';
import type avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { deadLetterSchema, deadLetterType, parseSchema } from '../../src/contracts/avro.ts';
import {
  DEAD_LETTER_CODES,
  DEAD_LETTER_OVERHEAD_BYTES,
  checkCommandRecordSize,
  commandRecordBytes,
  deadLetterFromAvro,
  deadLetterRecord,
  deadLetterToAvro,
  encodedDeadLetterBytes,
  reduceDeadLetter,
} from '../../src/contracts/dead-letter.ts';
import type { DeadLetter, DeadLetterInput } from '../../src/contracts/dead-letter.ts';
import { NOW } from './fixtures.ts';

const source = { topic: 'sms.commands', partition: 1, offset: '42' };
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

function letter(overrides: Partial<DeadLetterInput> = {}): DeadLetter {
  return deadLetterRecord({
    key: 'key-1',
    value: Buffer.alloc(10, 1),
    headers: { trace: 'abc' },
    source,
    error: { code: DEAD_LETTER_CODES.undecodable, message: 'bytes do not decode' },
    deadLetteredAt: NOW,
    ...overrides,
  });
}

function roundTrip(record: DeadLetter): DeadLetter {
  return deadLetterFromAvro(deadLetterType.fromBuffer(deadLetterType.toBuffer(deadLetterToAvro(record))));
}

describe('checkCommandRecordSize', () => {
  it('counts key, value, header keys (UTF-8) and header values', () => {
    expect(commandRecordBytes({ key: 'ab', value: Buffer.alloc(10), headers: { é: ['x', Buffer.alloc(3)], none: undefined } })).toBe(
      2 + 10 + (2 + 1) + (2 + 3) + 4,
    );
    expect(commandRecordBytes({ key: null, value: null })).toBe(0);
  });

  it('accepts a record of exactly maxBytes and refuses one more, with RECORD_TOO_LARGE and both sizes', () => {
    expect(checkCommandRecordSize({ key: null, value: Buffer.alloc(1000) }, 1000)).toEqual({ ok: true, bytes: 1000 });
    expect(checkCommandRecordSize({ key: 'k', value: Buffer.alloc(1000) }, 1000)).toEqual({
      ok: false,
      bytes: 1001,
      code: 'RECORD_TOO_LARGE',
      message: 'record is 1001 bytes (key, value and headers); at most 1000 are accepted (MAX_COMMAND_BYTES)',
    });
  });
});

describe('reduceDeadLetter', () => {
  it('returns a dead letter that fits unchanged, byte for byte', () => {
    const record = letter();
    expect(reduceDeadLetter(record, encodedDeadLetterBytes(record))).toBe(record);
  });

  it('leaves out the value first, describing it by size and SHA-256', () => {
    const value = Buffer.alloc(100_000, 7);
    const record = letter({ value });
    const reduced = reduceDeadLetter(record, 10_000);
    expect(reduced.value).toBeNull();
    expect(reduced.key).toEqual(Buffer.from('key-1'));
    expect(reduced.headers).toEqual(record.headers);
    expect(reduced.omitted).toEqual([{ part: 'value', size: 100_000, sha256: sha256(value) }]);
    expect(encodedDeadLetterBytes(reduced)).toBeLessThanOrEqual(10_000);
    expect(roundTrip(reduced)).toEqual(reduced);
  });

  it('then the key, then the headers (digest of their Avro encoding), each only while still needed', () => {
    const key = Buffer.alloc(50_000, 2);
    const headers = { big: Buffer.alloc(50_000, 3) };
    const record = letter({ key, value: Buffer.alloc(50_000, 1), headers });
    const withoutValueAndKey = reduceDeadLetter(letter({ key, value: Buffer.alloc(50_000, 1), headers: { small: 'x' } }), 10_000);
    expect(withoutValueAndKey.omitted.map((o) => o.part)).toEqual(['value', 'key']);
    expect(withoutValueAndKey.omitted[1]).toEqual({ part: 'key', size: 50_000, sha256: sha256(key) });
    expect(withoutValueAndKey.headers).toEqual([{ key: 'small', value: Buffer.from('x') }]);

    const reduced = reduceDeadLetter(record, 10_000);
    expect(reduced).toMatchObject({ key: null, value: null, headers: [] });
    const headersType = parseSchema({
      type: 'array',
      items: (deadLetterSchema as { fields: { name: string; type: { items: avro.Schema } }[] }).fields.find((f) => f.name === 'headers')?.type.items ?? 'null',
    });
    const encodedHeaders = headersType.toBuffer(deadLetterToAvro(record).headers);
    expect(reduced.omitted).toEqual([
      { part: 'value', size: 50_000, sha256: expect.any(String) as unknown },
      { part: 'key', size: 50_000, sha256: sha256(key) },
      { part: 'headers', size: encodedHeaders.length, sha256: sha256(encodedHeaders) },
    ]);
    expect(encodedDeadLetterBytes(reduced)).toBeLessThan(10_000);
  });

  it('never needs to reduce a record within MAX_COMMAND_BYTES published under MAX_COMMAND_BYTES + DEAD_LETTER_OVERHEAD_BYTES', () => {
    const max = 100_000;
    const headers = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`h${i}`, Buffer.alloc(10)]));
    const input = { key: Buffer.alloc(1000), value: Buffer.alloc(0), headers };
    const value = Buffer.alloc(max - commandRecordBytes(input));
    expect(checkCommandRecordSize({ ...input, value }, max).ok).toBe(true);
    const record = letter({ ...input, value, error: { code: 'UNDECODABLE', message: 'x'.repeat(100_000) } });
    expect(reduceDeadLetter(record, max + DEAD_LETTER_OVERHEAD_BYTES).omitted).toEqual([]);
  });

  it('bounds the error message to 2,000 characters', () => {
    expect(letter({ error: { code: 'UNDECODABLE', message: 'x'.repeat(100_000) } }).error.message).toHaveLength(2_000);
  });
});

describe('dead-letter schema evolution (omitted added with a default)', () => {
  const v1Json = structuredClone(deadLetterSchema) as { fields: { name: string }[] };
  v1Json.fields = v1Json.fields.filter((f) => f.name !== 'omitted');
  const v1 = parseSchema(v1Json as unknown as avro.Schema);

  it('the current reader reads a dead letter written with the first version, omitted empty', () => {
    const record = letter();
    const { omitted: _omitted, ...v1Value } = deadLetterToAvro(record);
    const read: unknown = deadLetterType.fromBuffer(v1.toBuffer(v1Value), deadLetterType.createResolver(v1));
    expect(deadLetterFromAvro(read)).toEqual(record);
  });

  it('a first-version reader reads a reduced dead letter, skipping omitted', () => {
    const reduced = reduceDeadLetter(letter({ value: Buffer.alloc(100_000) }), 10_000);
    const read = v1.fromBuffer(deadLetterType.toBuffer(deadLetterToAvro(reduced)), v1.createResolver(deadLetterType)) as Record<string, unknown>;
    expect(read).not.toHaveProperty('omitted');
    expect(read['value']).toBeNull();
    expect(deadLetterFromAvro(read)).toEqual({ ...reduced, omitted: [] });
  });
});
