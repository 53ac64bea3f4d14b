/**
 * What `sms-worker redrive` does with each dead letter (pure: no Kafka, no registry): which dead
 * letters the operator's filters select, which of those can be re-published byte for byte, and the
 * record that goes back. The I/O is redrive.ts.
 */
import type { DeadLetter } from '../contracts/dead-letter.ts';

/** The header each re-published record gets beside its own: where it was dead-lettered, to trace a record that comes back. */
export const REDRIVEN_FROM_HEADER = 'sms-worker-redriven-from';

/** The operator's filters; each unset one lets everything through. */
export interface RedriveFilter {
  /** Dead-letter codes (NOT_CONFLUENT_FRAMING, UNKNOWN_SCHEMA_ID, UNDECODABLE, RECORD_TOO_LARGE, …). */
  readonly codes?: ReadonlySet<string> | undefined;
  /** Dead-lettered at or after (epoch ms). */
  readonly since?: number | undefined;
  /** Dead-lettered before (epoch ms). */
  readonly until?: number | undefined;
  readonly sourceTopic?: string | undefined;
  readonly sourcePartition?: number | undefined;
  /** The source offset at least this (inclusive). */
  readonly fromOffset?: bigint | undefined;
  /** The source offset below this (exclusive). */
  readonly toOffset?: bigint | undefined;
}

/** Why a dead letter the filters selected is not re-published, beside a decode that still fails. */
export type Unreplayable = 'reduced' | 'too-large';

/** Whether the filters select this dead letter. */
export function selected(letter: DeadLetter, filter: RedriveFilter): boolean {
  const offset = BigInt(letter.source.offset);
  return (
    (filter.codes === undefined || filter.codes.has(letter.error.code)) &&
    (filter.since === undefined || letter.deadLetteredAt >= filter.since) &&
    (filter.until === undefined || letter.deadLetteredAt < filter.until) &&
    (filter.sourceTopic === undefined || letter.source.topic === filter.sourceTopic) &&
    (filter.sourcePartition === undefined || letter.source.partition === filter.sourcePartition) &&
    (filter.fromOffset === undefined || offset >= filter.fromOffset) &&
    (filter.toOffset === undefined || offset < filter.toOffset)
  );
}

/**
 * Whether the original record can go back as it was: not when the dead letter left parts of it out
 * (a record too large to keep whole: its `omitted` parts), nor when it was dead-lettered for its
 * size (it would be again: RECORD_TOO_LARGE).
 */
export function unreplayable(letter: DeadLetter): Unreplayable | undefined {
  if (letter.omitted.length > 0) return 'reduced';
  if (letter.error.code === 'RECORD_TOO_LARGE') return 'too-large';
  return undefined;
}

/** A record as kafkajs sends it: the key and value as they were, the headers with repeats kept in order. */
export interface RedriveRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, Buffer | Buffer[]>;
}

/**
 * The original record to publish again: key, value and headers byte for byte (a header repeated
 * keeps each value, in order; a header without a value goes back empty, which Kafka's record
 * format cannot tell apart), and REDRIVEN_FROM_HEADER naming the dead letter's place, replacing one
 * an earlier redrive added.
 */
export function redriveRecord(letter: DeadLetter, from: { readonly topic: string; readonly partition: number; readonly offset: bigint }): RedriveRecord {
  const headers: Record<string, Buffer | Buffer[]> = {};
  for (const { key, value } of letter.headers) {
    if (key === REDRIVEN_FROM_HEADER) continue;
    const bytes = value ?? Buffer.alloc(0);
    const seen = headers[key];
    headers[key] = seen === undefined ? bytes : Array.isArray(seen) ? [...seen, bytes] : [seen, bytes];
  }
  headers[REDRIVEN_FROM_HEADER] = Buffer.from(`${from.topic}/${from.partition}/${from.offset}`);
  return { key: letter.key, value: letter.value, headers };
}

/** A time given on the command line: epoch milliseconds, or an ISO 8601 date or date-time. */
export function parseTime(text: string): number | undefined {
  if (/^\d{1,15}$/.test(text)) return Number(text);
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : ms;
}
