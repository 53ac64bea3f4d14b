/** Public contracts of the worker: the Avro schemas, the command and result types, and validation. */
export {
  AVRO_PARSE_OPTIONS,
  BRANCH,
  SCHEMAS_DIR,
  commandSchema,
  commandType,
  deadLetterSchema,
  deadLetterType,
  loadSchemaJson,
  parseSchema,
  resultSchema,
  resultType,
} from './avro.ts';
export type { SchemaName } from './avro.ts';
export { CommandShapeError, commandFromAvro, commandToAvro } from './command.ts';
export type { Operation, SendCommand, TextOperation, VoiceOperation } from './command.ts';
export { isDomestic, parsePhone } from './phone.ts';
export type { CountryCode, Phone, PhoneParse, PhoneProblem } from './phone.ts';
export { RULES } from './rules.ts';
export type { FieldProblem, RuleId } from './rules.ts';
export { DEFAULT_VALIDATION_POLICY, validateCommand } from './validate.ts';
export type { RejectedRecipient, Validation, ValidationPolicy } from './validate.ts';
export {
  RESULT_ERROR_CODES,
  expiredResult,
  failedResult,
  rejectedResult,
  sentResult,
  unusableCommandResult,
} from './result.ts';
export type {
  CommandResult,
  ErrorStage,
  Failure,
  Outcome,
  ResultContext,
  ResultError,
  ResultOperation,
  SourcePosition,
} from './result.ts';
export { resultFromAvro, resultToAvro } from './result-avro.ts';
export { DEAD_LETTER_CODES, deadLetterFromAvro, deadLetterRecord, deadLetterToAvro } from './dead-letter.ts';
export type { DeadLetter, DeadLetterHeader, DeadLetterInput, RawHeaders } from './dead-letter.ts';
