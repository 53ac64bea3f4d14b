/**
 * The decoded command as the rest of the worker sees it, and the mapping from/to the avsc value
 * (wrapped unions, see avro.ts). The mapping checks shape only (types, required fields); whether a
 * command may be sent is validate.ts's job.
 */
import { z } from 'zod';
import { SmsWorkerError } from '../errors.ts';
import { BRANCH } from './avro.ts';
import { FIXED_LIMITS, truncate } from './limits.ts';
import type { FieldProblem } from './rules.ts';

export interface TextOperation {
  readonly kind: 'text';
  readonly to: readonly string[];
  readonly signature: string;
  readonly content?: string | undefined;
  readonly templateId?: string | undefined;
  readonly templateData?: Readonly<Record<string, string>> | undefined;
}

export interface VoiceOperation {
  readonly kind: 'voice';
  readonly to: string;
  readonly code: string;
}

export type Operation = TextOperation | VoiceOperation;

export interface SendCommand {
  readonly commandId: string;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /** Epoch milliseconds; null: never expires. */
  readonly expiresAt: number | null;
  readonly operation: Operation;
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * The decoded value is not a command of our schema (a writer schema we do not understand, or an
 * options mismatch in the decoder). Not retryable: decoding the same bytes again gives the same
 * value. `commandId` and `metadata` are what could still be read, for the REJECTED result.
 */
export class CommandShapeError extends SmsWorkerError {
  readonly problems: readonly FieldProblem[];
  readonly commandId: string | undefined;
  readonly metadata: Readonly<Record<string, string>>;
  /** Which branch the operation union held, when that much could be read. */
  readonly operationKind: Operation['kind'] | undefined;

  constructor(
    problems: readonly FieldProblem[],
    read: { commandId: string | undefined; metadata: Readonly<Record<string, string>>; operationKind: Operation['kind'] | undefined },
  ) {
    super('COMMAND_UNUSABLE', shapeMessage(problems));
    this.problems = problems;
    this.commandId = read.commandId;
    this.metadata = read.metadata;
    this.operationKind = read.operationKind;
  }
}

/** Problems spelled out in the message; a value of the wrong shape can have one per array entry or map key. */
const PROBLEMS_IN_MESSAGE = 5;

/** Bounded whatever the value held: it becomes a result's or a dead letter's error message. */
function shapeMessage(problems: readonly FieldProblem[]): string {
  const shown = problems
    .slice(0, PROBLEMS_IN_MESSAGE)
    .map((p) => `${truncate(p.field, FIXED_LIMITS.detailFieldChars)}: ${truncate(p.problem, FIXED_LIMITS.detailProblemChars)}`);
  const more = problems.length > PROBLEMS_IN_MESSAGE ? `; and ${problems.length - PROBLEMS_IN_MESSAGE} more` : '';
  return truncate(`decoded command does not match the command schema: ${shown.join('; ')}${more}`, FIXED_LIMITS.errorMessageChars);
}

const stringMap = z.record(z.string(), z.string());

/**
 * A wrapped nullable union `["null", T]`: `null` or `{ [branch]: value }`. A missing field reads
 * as null, as Avro schema resolution would fill in the default, so a value decoded with an older
 * writer schema still maps.
 */
function wrappedNullable<T extends z.ZodType>(branch: string, inner: T) {
  return z
    .object({ [branch]: inner })
    .nullish()
    .transform((value) => (value === null || value === undefined ? null : (value[branch] as z.output<T>)));
}

const textSchema = z.object({
  to: z.array(z.string()),
  signature: z.string(),
  content: wrappedNullable('string', z.string()),
  templateId: wrappedNullable('string', z.string()),
  templateData: wrappedNullable('map', stringMap),
});

const voiceSchema = z.object({ to: z.string(), code: z.string() });

const commandSchema = z.object({
  commandId: z.string(),
  createdAt: z.number().int(),
  expiresAt: wrappedNullable('long', z.number().int()),
  metadata: stringMap.optional().transform((value) => value ?? {}),
});

function pathOf(path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => {
    if (typeof key === 'number') return `${acc}[${key}]`;
    return acc === '' ? String(key) : `${acc}.${String(key)}`;
  }, '');
}

function problemsOf(error: z.ZodError, prefix: readonly PropertyKey[]): FieldProblem[] {
  return error.issues.map((issue) => ({ field: pathOf([...prefix, ...issue.path]), problem: issue.message }));
}

type OperationMapping = { operation: Operation } | { problems: FieldProblem[]; kind: Operation['kind'] | undefined };

function mapOperation(value: unknown): OperationMapping {
  const keys = typeof value === 'object' && value !== null ? Object.keys(value) : [];
  const branch = keys.length === 1 ? keys[0] : undefined;
  const inner = branch === undefined ? undefined : (value as Record<string, unknown>)[branch];
  if (branch === BRANCH.textMessage) {
    const parsed = textSchema.safeParse(inner);
    if (!parsed.success) return { problems: problemsOf(parsed.error, ['operation']), kind: 'text' };
    const { to, signature, content, templateId, templateData } = parsed.data;
    return {
      operation: {
        kind: 'text',
        to,
        signature,
        ...(content === null ? {} : { content }),
        ...(templateId === null ? {} : { templateId }),
        ...(templateData === null ? {} : { templateData }),
      },
    };
  }
  if (branch === BRANCH.voiceVerification) {
    const parsed = voiceSchema.safeParse(inner);
    if (!parsed.success) return { problems: problemsOf(parsed.error, ['operation']), kind: 'voice' };
    return { operation: { kind: 'voice', ...parsed.data } };
  }
  return {
    kind: undefined,
    problems: [
      {
        field: 'operation',
        problem: `expected a union value with exactly one key, ${BRANCH.textMessage} or ${BRANCH.voiceVerification}; got keys [${keys.join(', ')}]`,
      },
    ],
  };
}

function fieldOf(decoded: unknown, name: string): unknown {
  return typeof decoded === 'object' && decoded !== null ? (decoded as Record<string, unknown>)[name] : undefined;
}

/**
 * Maps an avsc-decoded command value (decoded with AVRO_PARSE_OPTIONS) to a SendCommand.
 * @throws CommandShapeError listing every shape problem found.
 */
export function commandFromAvro(decoded: unknown): SendCommand {
  const parsed = commandSchema.safeParse(decoded);
  const mapped = mapOperation(fieldOf(decoded, 'operation'));
  if (parsed.success && 'operation' in mapped) {
    const { commandId, createdAt, expiresAt, metadata } = parsed.data;
    return { commandId, createdAt, expiresAt, operation: mapped.operation, metadata };
  }
  // Best-effort reads, so the REJECTED result can still be keyed and carry the metadata.
  const commandId = fieldOf(decoded, 'commandId');
  const metadata = stringMap.safeParse(fieldOf(decoded, 'metadata'));
  throw new CommandShapeError([...(parsed.success ? [] : problemsOf(parsed.error, [])), ...('problems' in mapped ? mapped.problems : [])], {
    commandId: typeof commandId === 'string' ? commandId : undefined,
    metadata: metadata.success ? metadata.data : {},
    operationKind: 'problems' in mapped ? mapped.kind : mapped.operation.kind,
  });
}

/** Wraps a value for a `["null", T]` union. Absent (undefined) is written as null. */
function wrap<T>(branch: string, value: T | null | undefined): Record<string, T> | null {
  return value === null || value === undefined ? null : { [branch]: value };
}

/** The inverse of commandFromAvro: the value to encode with `commandType` (or the registry). */
export function commandToAvro(command: SendCommand): Record<string, unknown> {
  const { operation } = command;
  const avroOperation =
    operation.kind === 'text'
      ? {
          [BRANCH.textMessage]: {
            to: [...operation.to],
            signature: operation.signature,
            content: wrap('string', operation.content),
            templateId: wrap('string', operation.templateId),
            templateData: wrap('map', operation.templateData === undefined ? undefined : { ...operation.templateData }),
          },
        }
      : { [BRANCH.voiceVerification]: { to: operation.to, code: operation.code } };
  return {
    commandId: command.commandId,
    createdAt: command.createdAt,
    expiresAt: wrap('long', command.expiresAt),
    operation: avroOperation,
    metadata: { ...command.metadata },
  };
}
