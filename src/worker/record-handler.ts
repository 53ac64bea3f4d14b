import { setTimeout as sleep } from 'node:timers/promises';
import type { KafkaMessage } from 'kafkajs';
import { commandFromAvro, CommandShapeError, type SendCommand } from '../contracts/command.ts';
import { deadLetterRecord, deadLetterToAvro, type DeadLetter } from '../contracts/dead-letter.ts';
import { expiredResult, failedResult, rejectedResult, sentResult, unusableCommandResult, type CommandResult, type SourcePosition } from '../contracts/result.ts';
import { resultToAvro } from '../contracts/result-avro.ts';
import { validateCommand, type ValidationPolicy } from '../contracts/validate.ts';
import { isProviderError } from '../provider/provider-error.ts';
import { RegistryUnavailableError, type Codec } from '../schema/codec.ts';
import type { GuardedSender, SendOutcome } from './guarded-sender.ts';

/** What became of one command record; only `abandoned` leaves its offset uncommitted. */
export type RecordOutcome =
  | { readonly kind: 'result'; readonly result: CommandResult; readonly key: string; readonly value: Buffer }
  | { readonly kind: 'dead-letter'; readonly record: DeadLetter; readonly key: Buffer | null; readonly value: Buffer }
  | { readonly kind: 'abandoned' };

export interface RecordHandlerDeps {
  readonly codec: Codec;
  readonly sender: GuardedSender;
  readonly policy: ValidationPolicy;
  readonly now?: () => number;
  readonly onRegistryRetry?: (error: RegistryUnavailableError) => void;
}

/**
 * Decode → validate → send → result, for one record. Never throws for anything about the
 * record itself: undecodable bytes become a dead letter, a bad command a REJECTED result, a failed
 * send a FAILED result. Only the abort signal (shutdown, rebalance) ends it without an outcome.
 */
export async function handleRecord(message: KafkaMessage, source: SourcePosition, deps: RecordHandlerDeps, signal: AbortSignal): Promise<RecordOutcome> {
  const now = deps.now ?? Date.now;
  const decoded = await decodeWithRetry(message.value, deps, signal);
  if (decoded === 'abandoned') return { kind: 'abandoned' };
  if (!decoded.ok) return deadLetter(message, source, { code: decoded.code, message: decoded.message }, deps.codec, now());

  let command: SendCommand;
  try {
    command = commandFromAvro(decoded.value);
  } catch (error) {
    if (!(error instanceof CommandShapeError)) throw error;
    // A REJECTED result needs a key: the commandId if it could be read, else the record key.
    const commandId = error.commandId ?? message.key?.toString('utf8');
    if (commandId === undefined || commandId === '') {
      return deadLetter(message, source, { code: 'NOT_A_COMMAND', message: error.message }, deps.codec, now());
    }
    return result(unusableCommandResult({ error, commandId, source, completedAt: now() }), deps.codec);
  }

  const validation = validateCommand(command, deps.policy, now());
  if (validation.kind === 'expired') return result(expiredResult({ command, source, completedAt: now() }, validation.expiresAt), deps.codec);
  if (validation.kind === 'rejected') return result(rejectedResult({ command, source, completedAt: now() }, validation.problems), deps.codec);

  const outcome: SendOutcome = await deps.sender.send(validation.request, command.commandId, signal, command.expiresAt);
  const ctx = { command, source, completedAt: now() };
  switch (outcome.kind) {
    case 'abandoned':
      return { kind: 'abandoned' };
    case 'expired':
      return result(expiredResult(ctx, outcome.expiresAt), deps.codec);
    case 'sent':
      return result(sentResult(ctx, { ...outcome.success, attempts: outcome.attempts }, validation.rejectedRecipients), deps.codec);
    case 'failed': {
      const error = outcome.error;
      if (isProviderError(error)) {
        const transport = error.failureClass === 'transport' || error.failureClass === 'ambiguous';
        return result(
          failedResult(ctx, { code: error.code, message: error.message, stage: transport ? 'TRANSPORT' : 'PROVIDER', retryable: error.retryable, attempts: outcome.attempts, requestId: error.requestId }),
          deps.codec,
        );
      }
      return result(failedResult(ctx, { code: 'INTERNAL_ERROR', message: error.message, stage: 'OTHER', retryable: true, attempts: outcome.attempts }), deps.codec);
    }
  }
}

async function result(commandResult: CommandResult, codec: Codec): Promise<RecordOutcome> {
  return { kind: 'result', result: commandResult, key: commandResult.commandId, value: await codec.encodeResult(resultToAvro(commandResult)) };
}

async function deadLetter(message: KafkaMessage, source: SourcePosition, error: { code: string; message: string }, codec: Codec, at: number): Promise<RecordOutcome> {
  const record = deadLetterRecord({ key: message.key, value: message.value, headers: message.headers, source, error, deadLetteredAt: at });
  return { kind: 'dead-letter', record, key: message.key ?? null, value: await codec.encodeDeadLetter(deadLetterToAvro(record)) };
}

/** A registry outage is not the record's fault: wait and ask again rather than dead-letter it. */
async function decodeWithRetry(value: Buffer | null, deps: RecordHandlerDeps, signal: AbortSignal): Promise<Awaited<ReturnType<Codec['decode']>> | 'abandoned'> {
  let delay = 250;
  for (;;) {
    try {
      return await deps.codec.decode(value);
    } catch (error) {
      if (!(error instanceof RegistryUnavailableError)) throw error;
      deps.onRegistryRetry?.(error);
      try {
        await sleep(delay, undefined, { signal });
      } catch {
        return 'abandoned';
      }
      delay = Math.min(delay * 2, 10_000);
    }
  }
}
