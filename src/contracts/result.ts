/**
 * The result of one command, mirroring schemas/result.avsc with nullable unions as plain `| null`
 * (result-avro.ts wraps them for encoding), and one builder per outcome so every result the
 * worker publishes is shaped the same way. Amounts stay the service's decimal strings.
 */
import type { MessageReport, ProviderSuccess } from '../provider/types.ts';
import type { CommandShapeError, Operation, SendCommand } from './command.ts';
import type { FieldProblem } from './rules.ts';
import type { RejectedRecipient } from './validate.ts';

export type ResultOperation = 'TEXT_MESSAGE' | 'VOICE_VERIFICATION' | 'UNKNOWN';
export type Outcome = 'SENT' | 'REJECTED' | 'FAILED' | 'EXPIRED' | 'UNKNOWN';
export type ErrorStage = 'VALIDATION' | 'PROVIDER' | 'TRANSPORT' | 'OTHER';

/** Where a record was read. The offset is a decimal string: Kafka offsets are int64 and kafkajs carries them as strings. */
export interface SourcePosition {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export interface ResultError {
  readonly code: string;
  readonly message: string;
  readonly stage: ErrorStage;
  readonly retryable: boolean;
  readonly details: readonly FieldProblem[];
}

export interface CommandResult {
  readonly commandId: string;
  readonly operation: ResultOperation;
  readonly outcome: Outcome;
  readonly recipients: number | null;
  readonly messageCount: number | null;
  readonly totalAmount: string | null;
  readonly payAmount: string | null;
  readonly virtualAmount: string | null;
  readonly messages: readonly MessageReport[];
  readonly rejectedRecipients: readonly RejectedRecipient[];
  readonly error: ResultError | null;
  readonly providerRequestId: string | null;
  readonly attempts: number;
  readonly metadata: Readonly<Record<string, string>>;
  readonly source: SourcePosition;
  /** Epoch milliseconds. */
  readonly completedAt: number;
  /** UNKNOWN only: when the send whose outcome is unknown was attempted (epoch ms). */
  readonly attemptedAt?: number | null;
}

/** Error codes the contracts layer itself produces (provider and transport codes come from SmsWorkerError.code). */
export const RESULT_ERROR_CODES = {
  validationFailed: 'VALIDATION_FAILED',
  expired: 'COMMAND_EXPIRED',
  unusable: 'COMMAND_UNUSABLE',
  outcomeUnknown: 'SEND_OUTCOME_UNKNOWN',
} as const;

/** What every builder needs: the command, where it was read, and when the worker finished with it. */
export interface ResultContext {
  readonly command: SendCommand;
  readonly source: SourcePosition;
  readonly completedAt: number;
}

const OPERATION_OF = { text: 'TEXT_MESSAGE', voice: 'VOICE_VERIFICATION' } as const satisfies Record<
  Operation['kind'],
  ResultOperation
>;

/** How many problems the error message spells out; `details` always carries all of them. */
const PROBLEMS_IN_MESSAGE = 5;

const NOT_SENT = {
  recipients: null,
  messageCount: null,
  totalAmount: null,
  payAmount: null,
  virtualAmount: null,
  messages: [],
  rejectedRecipients: [],
} as const;

function base(ctx: ResultContext) {
  return {
    commandId: ctx.command.commandId,
    operation: OPERATION_OF[ctx.command.operation.kind],
    metadata: ctx.command.metadata,
    source: ctx.source,
    completedAt: ctx.completedAt,
  };
}

function summarise(problems: readonly FieldProblem[]): string {
  const shown = problems.slice(0, PROBLEMS_IN_MESSAGE).map((p) => `${p.field}: ${p.problem}`);
  const more = problems.length > PROBLEMS_IN_MESSAGE ? `; and ${problems.length - PROBLEMS_IN_MESSAGE} more (see details)` : '';
  return `command rejected, ${problems.length} problem${problems.length === 1 ? '' : 's'}: ${shown.join('; ')}${more}`;
}

export function sentResult(
  ctx: ResultContext,
  success: ProviderSuccess,
  rejectedRecipients: readonly RejectedRecipient[] = [],
): CommandResult {
  const { result } = success;
  return {
    ...base(ctx),
    outcome: 'SENT',
    recipients: result.recipients,
    messageCount: result.messageCount,
    totalAmount: result.totalAmount,
    payAmount: result.payAmount,
    virtualAmount: result.virtualAmount,
    messages: result.messages,
    rejectedRecipients,
    error: null,
    providerRequestId: success.requestId ?? null,
    attempts: success.attempts,
  };
}

/** Validation failed: nothing was sent. */
export function rejectedResult(ctx: ResultContext, problems: readonly FieldProblem[]): CommandResult {
  return {
    ...base(ctx),
    ...NOT_SENT,
    outcome: 'REJECTED',
    error: { code: RESULT_ERROR_CODES.validationFailed, message: summarise(problems), stage: 'VALIDATION', retryable: false, details: problems },
    providerRequestId: null,
    attempts: 0,
  };
}

export interface Failure {
  readonly code: string;
  readonly message: string;
  readonly stage: ErrorStage;
  readonly retryable: boolean;
  /** HTTP calls made, including the failed ones. */
  readonly attempts: number;
  readonly requestId?: string | undefined;
}

/** The service or the transport failed (after the worker's own retries). */
export function failedResult(ctx: ResultContext, failure: Failure): CommandResult {
  return {
    ...base(ctx),
    ...NOT_SENT,
    outcome: 'FAILED',
    error: { code: failure.code, message: failure.message, stage: failure.stage, retryable: failure.retryable, details: [] },
    providerRequestId: failure.requestId ?? null,
    attempts: failure.attempts,
  };
}

/** The command reached the worker at or after its expiresAt: nothing was sent. */
export function expiredResult(ctx: ResultContext, expiresAt: number): CommandResult {
  return {
    ...base(ctx),
    ...NOT_SENT,
    outcome: 'EXPIRED',
    error: {
      code: RESULT_ERROR_CODES.expired,
      message: `command expired at ${new Date(expiresAt).toISOString()} (${expiresAt}) and was not sent; processed at ${new Date(ctx.completedAt).toISOString()}`,
      stage: 'VALIDATION',
      retryable: false,
      details: [],
    },
    providerRequestId: null,
    attempts: 0,
  };
}

/**
 * REJECTED result for a record that decoded with a registered schema but does not map to a
 * command (commandFromAvro threw). The result needs a commandId for its key: pass
 * `error.commandId`, or the record key if the producer keys by commandId. With neither there is
 * nothing to key a result by, and the record belongs in the dead-letter topic instead.
 */
export function unusableCommandResult(input: {
  readonly error: CommandShapeError;
  readonly commandId: string;
  readonly source: SourcePosition;
  readonly completedAt: number;
}): CommandResult {
  const { error } = input;
  return {
    commandId: input.commandId,
    operation: error.operationKind === undefined ? 'UNKNOWN' : OPERATION_OF[error.operationKind],
    outcome: 'REJECTED',
    ...NOT_SENT,
    error: { code: RESULT_ERROR_CODES.unusable, message: error.message, stage: 'VALIDATION', retryable: false, details: error.problems },
    providerRequestId: null,
    attempts: 0,
    metadata: error.metadata,
    source: input.source,
    completedAt: input.completedAt,
  };
}

/**
 * The service may have sent the command, and the worker cannot tell: a send marked in the ledger
 * without a result (a crash, a lost partition), or an answer that does not say (a timeout after
 * the request went out, a reset, a 5xx without the service's envelope, a malformed 2xx). It is not
 * sent again: a person may already have the message. `retryable` is false for that reason.
 */
export function unknownResult(ctx: ResultContext, unknown: { readonly message: string; readonly stage: ErrorStage; readonly attempts: number; readonly attemptedAt: number | null; readonly requestId?: string | undefined; readonly code?: string }): CommandResult {
  return {
    ...base(ctx),
    ...NOT_SENT,
    outcome: 'UNKNOWN',
    error: { code: unknown.code ?? RESULT_ERROR_CODES.outcomeUnknown, message: unknown.message, stage: unknown.stage, retryable: false, details: [] },
    providerRequestId: unknown.requestId ?? null,
    attempts: unknown.attempts,
    attemptedAt: unknown.attemptedAt,
  };
}
