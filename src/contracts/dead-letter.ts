/**
 * The dead-letter envelope (schemas/dead-letter.avsc) for command records that cannot be decoded.
 * The original key, value and headers are kept byte for byte so the record can be replayed.
 */
import { z } from 'zod';
import { SmsWorkerError } from '../errors.ts';
import type { SourcePosition } from './result.ts';

/** Reasons the decoder may give; the schema documents them, and readers treat unknown codes as UNDECODABLE. */
export const DEAD_LETTER_CODES = {
  notConfluentFraming: 'NOT_CONFLUENT_FRAMING',
  unknownSchemaId: 'UNKNOWN_SCHEMA_ID',
  undecodable: 'UNDECODABLE',
} as const;

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
    error: input.error,
    deadLetteredAt: input.deadLetteredAt,
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
  };
}

const bytes = z.custom<Buffer>((value) => Buffer.isBuffer(value), 'expected bytes (a Buffer)');
const nullableBytes = z
  .union([z.null(), z.object({ bytes })])
  .transform((value) => (value === null ? null : value.bytes));

const deadLetterSchema = z.object({
  key: nullableBytes,
  value: nullableBytes,
  headers: z.array(z.object({ key: z.string(), value: nullableBytes })),
  source: z.object({ topic: z.string(), partition: z.number().int(), offset: z.string() }),
  error: z.object({ code: z.string(), message: z.string() }),
  deadLetteredAt: z.number().int(),
});

/** For tools that read the dead-letter topic (inspection, replay). @throws SmsWorkerError `DEAD_LETTER_UNREADABLE`. */
export function deadLetterFromAvro(decoded: unknown): DeadLetter {
  const parsed = deadLetterSchema.safeParse(decoded);
  if (!parsed.success) {
    throw new SmsWorkerError('DEAD_LETTER_UNREADABLE', `decoded value does not match the dead-letter schema: ${parsed.error.message}`);
  }
  return parsed.data;
}
