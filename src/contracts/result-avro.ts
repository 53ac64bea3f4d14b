/**
 * CommandResult to and from the avsc value of schemas/result.avsc (wrapped unions, see avro.ts).
 * `resultFromAvro` is for readers of the result topic (CLI, tests); it is strict about shape but
 * maps an enum symbol it does not know to UNKNOWN/OTHER, as an Avro reader with the enum default would.
 */
import { z } from 'zod';
import { SmsWorkerError } from '../errors.ts';
import { BRANCH } from './avro.ts';
import type { CommandResult, ErrorStage, Outcome, ResultOperation } from './result.ts';

function wrap<T>(branch: string, value: T | null): Record<string, T> | null {
  return value === null ? null : { [branch]: value };
}

/** The value to encode with `resultType` (or the registry). */
export function resultToAvro(result: CommandResult): Record<string, unknown> {
  const { error } = result;
  return {
    commandId: result.commandId,
    operation: result.operation,
    outcome: result.outcome,
    recipients: wrap('int', result.recipients),
    messageCount: wrap('int', result.messageCount),
    totalAmount: wrap('string', result.totalAmount),
    payAmount: wrap('string', result.payAmount),
    virtualAmount: wrap('string', result.virtualAmount),
    messages: result.messages.map((m) => ({ ...m })),
    rejectedRecipients: result.rejectedRecipients.map((r) => ({ to: r.to, problem: r.problem })),
    error: wrap(
      BRANCH.resultError,
      error === null
        ? null
        : {
            code: error.code,
            message: error.message,
            stage: error.stage,
            retryable: error.retryable,
            details: error.details.map((d) => ({ field: d.field, problem: d.problem })),
          },
    ),
    providerRequestId: wrap('string', result.providerRequestId),
    attempts: result.attempts,
    metadata: { ...result.metadata },
    source: { ...result.source },
    completedAt: result.completedAt,
    attemptedAt: wrap('long', result.attemptedAt ?? null),
    account: wrap('string', result.account ?? null),
    failovers: (result.failovers ?? []).map((f) => ({ account: f.account, reason: f.reason, code: f.code, message: f.message })),
  };
}

function nullable<T extends z.ZodType>(branch: string, inner: T) {
  return z.union([z.null(), z.object({ [branch]: inner })]).transform((value) => (value === null ? null : (value[branch] as z.output<T>)));
}

function enumWithDefault<const S extends readonly [string, ...string[]]>(symbols: S, fallback: S[number]) {
  return z.string().transform((value): S[number] => ((symbols as readonly string[]).includes(value) ? value : fallback));
}

const OPERATIONS = ['TEXT_MESSAGE', 'VOICE_VERIFICATION', 'UNKNOWN'] as const satisfies readonly ResultOperation[];
const OUTCOMES = ['SENT', 'REJECTED', 'FAILED', 'EXPIRED', 'UNKNOWN'] as const satisfies readonly Outcome[];
const STAGES = ['VALIDATION', 'PROVIDER', 'TRANSPORT', 'OTHER'] as const satisfies readonly ErrorStage[];

const resultSchema = z.object({
  commandId: z.string(),
  operation: enumWithDefault(OPERATIONS, 'UNKNOWN'),
  outcome: enumWithDefault(OUTCOMES, 'UNKNOWN'),
  recipients: nullable('int', z.number().int()),
  messageCount: nullable('int', z.number().int()),
  totalAmount: nullable('string', z.string()),
  payAmount: nullable('string', z.string()),
  virtualAmount: nullable('string', z.string()),
  messages: z.array(
    z.object({
      id: z.string(),
      to: z.string(),
      regionCode: z.string(),
      countryCode: z.string(),
      messageCount: z.number().int(),
      status: z.string(),
      upstream: z.string(),
      price: z.string(),
    }),
  ),
  rejectedRecipients: z.array(z.object({ to: z.string(), problem: z.string() })),
  error: nullable(
    BRANCH.resultError,
    z.object({
      code: z.string(),
      message: z.string(),
      stage: enumWithDefault(STAGES, 'OTHER'),
      retryable: z.boolean(),
      details: z.array(z.object({ field: z.string(), problem: z.string() })),
    }),
  ),
  providerRequestId: nullable('string', z.string()),
  attempts: z.number().int(),
  metadata: z.record(z.string(), z.string()),
  source: z.object({ topic: z.string(), partition: z.number().int(), offset: z.string() }),
  completedAt: z.number().int(),
  // Absent in results written before the field existed (the reader's default then fills in null).
  attemptedAt: nullable('long', z.number().int()).optional(),
  // Absent in results written before 0.4 (the reader's defaults: null and []).
  account: nullable('string', z.string()).optional(),
  failovers: z.array(z.object({ account: z.string(), reason: z.string(), code: z.string(), message: z.string() })).optional(),
});

/** @throws SmsWorkerError `RESULT_UNREADABLE` when the value is not a result of this schema. */
export function resultFromAvro(decoded: unknown): CommandResult {
  const parsed = resultSchema.safeParse(decoded);
  if (!parsed.success) {
    throw new SmsWorkerError('RESULT_UNREADABLE', `decoded result does not match the result schema: ${parsed.error.message}`);
  }
  const { attemptedAt, account, failovers, ...rest } = parsed.data;
  return {
    ...rest,
    ...(attemptedAt === null || attemptedAt === undefined ? {} : { attemptedAt }),
    ...(account === null || account === undefined ? {} : { account }),
    ...(failovers === undefined || failovers.length === 0 ? {} : { failovers }),
  };
}
