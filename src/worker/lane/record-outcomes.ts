import { deadLetterRecord, deadLetterToAvro, reduceDeadLetter } from '../../contracts/dead-letter.ts';
import type { CommandResult, SourcePosition } from '../../contracts/result.ts';
import { resultToAvro } from '../../contracts/result-avro.ts';
import type { Codec } from '../../schema/codec.ts';
import type { DeadLetter, RawHeaders } from '../../contracts/dead-letter.ts';

/** A command record as the worker sees it: no client library types. */
export interface CommandRecord {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: RawHeaders | undefined;
  /** Kafka timestamp, epoch ms as a string: when the command was published (time to send starts there). */
  readonly timestamp?: string | undefined;
}

/**
 * What became of one command record. `abandoned` leaves its offset uncommitted (the record is
 * consumed again); `duplicate` commits it without a record (its commandId already has a result:
 * of an earlier record, or `published`, of this very record, found in the result topic).
 */
export type RecordOutcome =
  | { readonly kind: 'result'; readonly result: CommandResult; readonly key: string; readonly value: Buffer; readonly headers?: TraceHeaders }
  | { readonly kind: 'dead-letter'; readonly record: DeadLetter; readonly key: Buffer | null; readonly value: Buffer; readonly headers?: TraceHeaders }
  | { readonly kind: 'duplicate'; readonly commandId: string; readonly firstOffset: bigint; readonly published?: true }
  | { readonly kind: 'abandoned'; readonly maybeSent?: boolean };

/** An outcome that publishes a record (a result, a dead letter): what a transaction sends, and what its read-back must tell. */
export function publishesRecord(outcome: RecordOutcome): outcome is Extract<RecordOutcome, { kind: 'result' | 'dead-letter' }> {
  return outcome.kind === 'result' || outcome.kind === 'dead-letter';
}

/** The part of the codec a record needs (an interface, so the handler can be unit-tested without a registry). */
export type RecordCodec = Pick<Codec, 'decode' | 'encodeResult' | 'encodeDeadLetter'>;

/** `traceparent`/`tracestate` of the command's span, written on the result or dead letter it produced. */
type TraceHeaders = Readonly<Record<string, string>>;

/** What encoding an outcome needs: the codec and the largest record the topics take. */
export interface OutcomeEncoding {
  readonly codec: RecordCodec;
  readonly maxRecordBytes: number;
}

/** A result encoded for the result topic, reduced (shrinkResult) until it fits. */
export async function encodedResult(commandResult: CommandResult, deps: OutcomeEncoding): Promise<RecordOutcome> {
  let current = commandResult;
  for (let step = 0; ; step++) {
    const value = await deps.codec.encodeResult(resultToAvro(current));
    const shrunk = value.length > deps.maxRecordBytes ? shrinkResult(current, step, value.length, deps.maxRecordBytes) : undefined;
    if (shrunk === undefined) return { kind: 'result', result: current, key: current.commandId, value };
    current = shrunk;
  }
}

/**
 * A result too large for the topic is reduced, in this order, until it fits: (0) metadata replaced
 * by one entry saying how much was dropped; (1) error details cut to the first 10; (2) the
 * per-recipient reports dropped (counts and amounts stay). Past that nothing is left to cut.
 */
export function shrinkResult(result: CommandResult, step: number, size: number, limit: number): CommandResult | undefined {
  const note = (what: string): Record<string, string> => ({
    'sms-worker.reduced': `${what}: the result was ${size} bytes, over the ${limit}-byte record limit`,
  });
  switch (step) {
    case 0:
      return { ...result, metadata: note('metadata dropped') };
    case 1:
      return result.error === null
        ? { ...result }
        : { ...result, error: { ...result.error, message: result.error.message.slice(0, 1_000), details: result.error.details.slice(0, 10) } };
    case 2:
      return {
        ...result,
        messages: [],
        rejectedRecipients: [],
        metadata: note(`metadata, ${result.messages.length} message reports and ${result.rejectedRecipients.length} rejected recipients dropped`),
      };
    default:
      return undefined;
  }
}

export async function encodedDeadLetter(
  message: CommandRecord,
  source: SourcePosition,
  error: { code: string; message: string },
  deps: OutcomeEncoding,
  at: number,
): Promise<RecordOutcome> {
  const headers = message.headers;
  // Too large to carry whole: reduceDeadLetter replaces the original bytes by their size and SHA-256.
  const record = reduceDeadLetter(
    deadLetterRecord({ key: message.key, value: message.value, headers, source, error, deadLetteredAt: at }),
    deps.maxRecordBytes,
  );
  return { kind: 'dead-letter', record, key: record.key, value: await deps.codec.encodeDeadLetter(deadLetterToAvro(record)) };
}
