/**
 * The dead-letter envelope (schemas/dead-letter.avsc) for command records that cannot be decoded.
 * The original key, value and headers are kept byte for byte so the record can be replayed,
 * unless the dead letter would then be too large to publish (reduceDeadLetter): then the largest
 * parts are replaced by their size and SHA-256, listed in `omitted`.
 */
import { createHash } from 'node:crypto';
import type { Type, types } from 'avsc';
import { z } from 'zod';
import { SmsWorkerError } from '../errors.ts';
import { deadLetterType } from './avro.ts';
import { FIXED_LIMITS, truncate } from './limits.ts';
import type { SourcePosition } from './result.ts';

/** Reasons the decoder may give; the schema documents them, and readers treat unknown codes as UNDECODABLE. */
export const DEAD_LETTER_CODES = {
  notConfluentFraming: 'NOT_CONFLUENT_FRAMING',
  unknownSchemaId: 'UNKNOWN_SCHEMA_ID',
  undecodable: 'UNDECODABLE',
  /** The record is larger than MAX_COMMAND_BYTES; it was not decoded (see checkCommandRecordSize). */
  recordTooLarge: 'RECORD_TOO_LARGE',
} as const;

/** A part of the original record left out of the dead letter, described so it can be recognised. */
export interface OmittedPart {
  /** `key`, `value` or `headers` (readers should tolerate other names added later). */
  readonly part: string;
  /** Bytes of the key or value; for headers, of the Avro binary encoding of the original `headers` array. */
  readonly size: number;
  /** Lower-case hex SHA-256 of those same bytes. */
  readonly sha256: string;
}

export interface DeadLetterHeader {
  readonly key: string;
  readonly value: Buffer | null;
}

export interface DeadLetter {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: readonly DeadLetterHeader[];
  readonly source: SourcePosition;
  readonly error: { readonly code: string; readonly message: string };
  /** Epoch milliseconds. */
  readonly deadLetteredAt: number;
  /** Parts left out by reduceDeadLetter; empty when the record is kept byte for byte. */
  readonly omitted: readonly OmittedPart[];
}

type Bytes = Buffer | Uint8Array | string;

/** Headers as kafkajs delivers them: a value may be repeated (array) or missing. */
export type RawHeaders = Readonly<Record<string, Bytes | readonly Bytes[] | undefined>>;

export interface DeadLetterInput {
  readonly key: Bytes | null | undefined;
  readonly value: Bytes | null | undefined;
  readonly headers?: RawHeaders | undefined;
  readonly source: SourcePosition;
  readonly error: { readonly code: string; readonly message: string };
  readonly deadLetteredAt: number;
}

function toBuffer(bytes: Bytes | null | undefined): Buffer | null {
  if (bytes === null || bytes === undefined) return null;
  if (typeof bytes === 'string') return Buffer.from(bytes, 'utf8');
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Flattens repeated header values into repeated entries, in order (the Avro side is a list, not a map). */
function flattenHeaders(headers: RawHeaders): DeadLetterHeader[] {
  return Object.entries(headers).flatMap(([key, value]): DeadLetterHeader[] => {
    if (Array.isArray(value)) return (value as readonly Bytes[]).map((v) => ({ key, value: toBuffer(v) }));
    return [{ key, value: toBuffer(value as Bytes | undefined) }];
  });
}

export function deadLetterRecord(input: DeadLetterInput): DeadLetter {
  return {
    key: toBuffer(input.key),
    value: toBuffer(input.value),
    headers: input.headers === undefined ? [] : flattenHeaders(input.headers),
    source: input.source,
    // Bounded: the message may quote a decoder's error, and the envelope must stay small.
    error: { code: truncate(input.error.code, FIXED_LIMITS.detailFieldChars), message: truncate(input.error.message, FIXED_LIMITS.errorMessageChars) },
    deadLetteredAt: input.deadLetteredAt,
    omitted: [],
  };
}

function wrapBytes(value: Buffer | null): { bytes: Buffer } | null {
  return value === null ? null : { bytes: value };
}

/** The value to encode with `deadLetterType` (or the registry). */
export function deadLetterToAvro(record: DeadLetter): Record<string, unknown> {
  return {
    key: wrapBytes(record.key),
    value: wrapBytes(record.value),
    headers: record.headers.map((h) => ({ key: h.key, value: wrapBytes(h.value) })),
    source: { ...record.source },
    error: { ...record.error },
    deadLetteredAt: record.deadLetteredAt,
    omitted: record.omitted.map((o) => ({ ...o })),
  };
}

/** Bytes of the dead letter's value as the codec writes it: Avro binary and the 5-byte Confluent prefix. */
export function encodedDeadLetterBytes(record: DeadLetter): number {
  return CONFLUENT_PREFIX_BYTES + deadLetterType.toBuffer(deadLetterToAvro(record)).length;
}

const CONFLUENT_PREFIX_BYTES = 5;

/**
 * Room the envelope needs on top of a command record's own bytes (source, bounded error,
 * timestamps, length prefixes of up to a few hundred headers). A dead letter of a record within
 * MAX_COMMAND_BYTES is kept whole when reduced to `maxCommandBytes + DEAD_LETTER_OVERHEAD_BYTES`.
 */
export const DEAD_LETTER_OVERHEAD_BYTES = 16_384;

function omission(part: 'key' | 'value' | 'headers', bytes: Buffer): OmittedPart {
  return { part, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/**
 * Makes a dead letter publishable: when its encoded value (encodedDeadLetterBytes) would exceed
 * `maxBytes`, leaves out the original value, then if still needed the key, then the headers,
 * each replaced by an `omitted` entry with its size and SHA-256 (the value or key becomes null, the
 * headers an empty list). A record that fits is returned unchanged. The source, error and time
 * are always kept (all bounded), so the result is at most
 * `max(maxBytes, encodedDeadLetterBytes of a record with nothing but those)`, a few KiB.
 * Pure. The lead's wiring key for the Kafka record: use `record.key` of the result, not the original.
 */
export function reduceDeadLetter(record: DeadLetter, maxBytes: number): DeadLetter {
  let current = record;
  if (encodedDeadLetterBytes(current) <= maxBytes) return current;
  if (current.value !== null) {
    current = { ...current, value: null, omitted: [...current.omitted, omission('value', current.value)] };
    if (encodedDeadLetterBytes(current) <= maxBytes) return current;
  }
  if (current.key !== null) {
    current = { ...current, key: null, omitted: [...current.omitted, omission('key', current.key)] };
    if (encodedDeadLetterBytes(current) <= maxBytes) return current;
  }
  if (current.headers.length > 0) {
    const encoded = HEADERS_TYPE.toBuffer(deadLetterToAvro(current).headers);
    current = { ...current, headers: [], omitted: [...current.omitted, omission('headers', encoded)] };
  }
  return current;
}

/** The `headers` field's own type, to encode the original headers array for its digest. */
const HEADERS_TYPE: Type = (() => {
  const field = (deadLetterType as types.RecordType).fields.find((f) => f.name === 'headers');
  if (field === undefined) throw new Error('schemas/dead-letter.avsc has no headers field');
  return field.type;
})();

/** Bytes of a Kafka record as the size limit counts them: key, value, and every header key (UTF-8) and value. */
export function commandRecordBytes(record: {
  readonly key: Bytes | null | undefined;
  readonly value: Bytes | null | undefined;
  readonly headers?: RawHeaders | undefined;
}): number {
  const bytes = (b: Bytes | null | undefined): number =>
    b === null || b === undefined ? 0 : typeof b === 'string' ? Buffer.byteLength(b, 'utf8') : b.byteLength;
  let total = bytes(record.key) + bytes(record.value);
  for (const header of record.headers === undefined ? [] : flattenHeaders(record.headers)) total += Buffer.byteLength(header.key, 'utf8') + bytes(header.value);
  return total;
}

export type RecordSizeCheck =
  | { readonly ok: true; readonly bytes: number }
  | { readonly ok: false; readonly bytes: number; readonly code: typeof DEAD_LETTER_CODES.recordTooLarge; readonly message: string };

/**
 * Whether a command record may be decoded: at most `maxBytes` (MAX_COMMAND_BYTES) counted by
 * commandRecordBytes. A larger record is not decoded; dead-letter it with the returned code and
 * message (and reduceDeadLetter, which will leave its value out). Pure; never throws.
 */
export function checkCommandRecordSize(
  record: { readonly key: Bytes | null | undefined; readonly value: Bytes | null | undefined; readonly headers?: RawHeaders | undefined },
  maxBytes: number,
): RecordSizeCheck {
  const bytes = commandRecordBytes(record);
  if (bytes <= maxBytes) return { ok: true, bytes };
  return {
    ok: false,
    bytes,
    code: DEAD_LETTER_CODES.recordTooLarge,
    message: `record is ${bytes} bytes (key, value and headers); at most ${maxBytes} are accepted (MAX_COMMAND_BYTES)`,
  };
}

const bytes = z.custom<Buffer>((value) => Buffer.isBuffer(value), 'expected bytes (a Buffer)');
const nullableBytes = z.union([z.null(), z.object({ bytes })]).transform((value) => (value === null ? null : value.bytes));

const deadLetterSchema = z.object({
  key: nullableBytes,
  value: nullableBytes,
  headers: z.array(z.object({ key: z.string(), value: nullableBytes })),
  source: z.object({ topic: z.string(), partition: z.number().int(), offset: z.string() }),
  error: z.object({ code: z.string(), message: z.string() }),
  deadLetteredAt: z.number().int(),
  // Absent when decoded with the first version of the schema (no `omitted` field).
  omitted: z
    .array(z.object({ part: z.string(), size: z.number().int(), sha256: z.string() }))
    .optional()
    .transform((value) => value ?? []),
});

/** For tools that read the dead-letter topic (inspection, replay). @throws SmsWorkerError `DEAD_LETTER_UNREADABLE`. */
export function deadLetterFromAvro(decoded: unknown): DeadLetter {
  const parsed = deadLetterSchema.safeParse(decoded);
  if (!parsed.success) {
    throw new SmsWorkerError('DEAD_LETTER_UNREADABLE', `decoded value does not match the dead-letter schema: ${parsed.error.message}`);
  }
  return parsed.data;
}
