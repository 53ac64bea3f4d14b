/**
 * The result of one command, mirroring schemas/result.avsc with nullable unions as plain `| null`
 * (result-avro.ts wraps them for encoding), and one builder per outcome so every result the
 * worker publishes is shaped the same way. Amounts stay the service's decimal strings.
 */
import { createHash } from 'node:crypto';
import type { MessageReport, ProviderSuccess } from '../provider/types.ts';
import type { CommandShapeError, Operation, SendCommand } from './command.ts';
import { codePoints, FIXED_LIMITS, mapBytes, truncate } from './limits.ts';
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
  /** The account (its label) the command was last tried through; absent when none was tried. */
  readonly account?: string | null;
  /** Each account the command left for the next, in order; absent or empty when it left none. */
  readonly failovers?: readonly ResultFailover[];
}

/** One account a command left for its next, and why (the account proved it was not sent there). */
export interface ResultFailover {
  readonly account: string;
  /** no-route, funds, refused-client, unreachable or paused (src/accounts/failover.ts). */
  readonly reason: string;
  /** The service's code (101301, 105400, PROVIDER_HTTP_401, …) or the pause's reason. */
  readonly code: string;
  readonly message: string;
}

/** Error codes the contracts layer itself produces (provider and transport codes come from SmsWorkerError.code). */
export const RESULT_ERROR_CODES = {
  validationFailed: 'VALIDATION_FAILED',
  /** REJECTED by the geo permissions alone (every problem is a recipient's region; see geo.ts). */
  regionNotAllowed: 'REGION_NOT_ALLOWED',
  /** REJECTED by the velocity limits per destination alone (src/worker/guard/velocity.ts). */
  destinationVelocityLimited: 'DESTINATION_VELOCITY_LIMITED',
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

const OPERATION_OF = { text: 'TEXT_MESSAGE', voice: 'VOICE_VERIFICATION' } as const satisfies Record<Operation['kind'], ResultOperation>;

/** How many problems the error message spells out; `details` carries up to FIXED_LIMITS.details. */
const PROBLEMS_IN_MESSAGE = 5;
/** UTF-16 units of the commandId prefix kept when a commandId over the limit is replaced by its digest. */
const COMMAND_ID_PREFIX_UNITS = 128;
/** Codes and request ids come from the service; bounded like any other text the worker writes. */
const PROVIDER_TEXT_UNITS = 200;

const NOT_SENT = {
  recipients: null,
  messageCount: null,
  totalAmount: null,
  payAmount: null,
  virtualAmount: null,
  messages: [],
  rejectedRecipients: [],
} as const;

/**
 * The commandId a result carries (and is keyed by). A commandId within the limit (validation
 * rejects longer ones) is echoed as is. A longer one, which only a REJECTED, EXPIRED or
 * COMMAND_UNUSABLE result can meet, is replaced by its first 127 UTF-16 units, '…', and
 * `sha256:` with the hex SHA-256 of its UTF-8 bytes, so the producer can still match it and the
 * result stays small.
 */
export function resultCommandId(commandId: string): string {
  if (commandId.length <= FIXED_LIMITS.commandIdChars || codePoints(commandId) <= FIXED_LIMITS.commandIdChars) return commandId;
  const digest = createHash('sha256').update(commandId, 'utf8').digest('hex');
  return `${truncate(commandId, COMMAND_ID_PREFIX_UNITS)}sha256:${digest}`;
}

/**
 * The metadata a result echoes: the command's, unless it exceeds the hard caps
 * (FIXED_LIMITS.metadataEntries / metadataBytes, the upper bounds of MAX_METADATA_ENTRIES /
 * MAX_METADATA_BYTES), then none. A command that passed validation is always within them; an
 * expired or unusable one is not validated, and its result must stay small all the same.
 */
export function resultMetadata(metadata: Readonly<Record<string, string>>): Readonly<Record<string, string>> {
  const entries = Object.keys(metadata).length;
  if (entries > FIXED_LIMITS.metadataEntries || mapBytes(metadata) > FIXED_LIMITS.metadataBytes) return {};
  return metadata;
}

/**
 * The `error.details` of a result: at most FIXED_LIMITS.details entries, each field and problem
 * cut to its limit; when there are more problems, the first ones and a final
 * `{ field: '…', problem: '… and K more problems' }`. Pure; the input is not changed.
 */
export function boundDetails(problems: readonly FieldProblem[]): FieldProblem[] {
  const clip = (p: FieldProblem): FieldProblem => ({
    field: truncate(p.field, FIXED_LIMITS.detailFieldChars),
    problem: truncate(p.problem, FIXED_LIMITS.detailProblemChars),
  });
  if (problems.length <= FIXED_LIMITS.details) return problems.map(clip);
  const kept = problems.slice(0, FIXED_LIMITS.details - 1).map(clip);
  return [...kept, { field: '…', problem: `… and ${problems.length - kept.length} more problems` }];
}

function base(ctx: ResultContext) {
  return {
    commandId: resultCommandId(ctx.command.commandId),
    operation: OPERATION_OF[ctx.command.operation.kind],
    metadata: resultMetadata(ctx.command.metadata),
    source: ctx.source,
    completedAt: ctx.completedAt,
  };
}

function summarise(problems: readonly FieldProblem[]): string {
  const shown = boundDetails(problems.slice(0, PROBLEMS_IN_MESSAGE)).map((p) => `${p.field}: ${p.problem}`);
  const more = problems.length > PROBLEMS_IN_MESSAGE ? `; and ${problems.length - PROBLEMS_IN_MESSAGE} more (see details)` : '';
  return truncate(
    `command rejected, ${problems.length} problem${problems.length === 1 ? '' : 's'}: ${shown.join('; ')}${more}`,
    FIXED_LIMITS.errorMessageChars,
  );
}

export function sentResult(ctx: ResultContext, success: ProviderSuccess, rejectedRecipients: readonly RejectedRecipient[] = []): CommandResult {
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
export function rejectedResult(
  ctx: ResultContext,
  problems: readonly FieldProblem[],
  code:
    | typeof RESULT_ERROR_CODES.validationFailed
    | typeof RESULT_ERROR_CODES.regionNotAllowed
    | typeof RESULT_ERROR_CODES.destinationVelocityLimited = RESULT_ERROR_CODES.validationFailed,
): CommandResult {
  return {
    ...base(ctx),
    ...NOT_SENT,
    outcome: 'REJECTED',
    error: { code, message: summarise(problems), stage: 'VALIDATION', retryable: false, details: boundDetails(problems) },
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
    error: {
      code: truncate(failure.code, PROVIDER_TEXT_UNITS),
      message: truncate(failure.message, FIXED_LIMITS.errorMessageChars),
      stage: failure.stage,
      retryable: failure.retryable,
      details: [],
    },
    providerRequestId: failure.requestId === undefined ? null : truncate(failure.requestId, PROVIDER_TEXT_UNITS),
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
    commandId: resultCommandId(input.commandId),
    operation: error.operationKind === undefined ? 'UNKNOWN' : OPERATION_OF[error.operationKind],
    outcome: 'REJECTED',
    ...NOT_SENT,
    error: {
      code: RESULT_ERROR_CODES.unusable,
      message: truncate(error.message, FIXED_LIMITS.errorMessageChars),
      stage: 'VALIDATION',
      retryable: false,
      details: boundDetails(error.problems),
    },
    providerRequestId: null,
    attempts: 0,
    metadata: resultMetadata(error.metadata),
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
export function unknownResult(
  ctx: ResultContext,
  unknown: {
    readonly message: string;
    readonly stage: ErrorStage;
    readonly attempts: number;
    readonly attemptedAt: number | null;
    readonly requestId?: string | undefined;
    readonly code?: string;
  },
): CommandResult {
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
