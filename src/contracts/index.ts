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
export {
  DEFAULT_GEO_POLICY,
  GEO_MODES,
  GEO_OPERATIONS,
  KNOWN_REGIONS,
  MAX_GEO_REGIONS,
  NON_GEOGRAPHIC_REGION,
  REGION_NOT_ALLOWED,
  geoRuleName,
  geoRuleRefusing,
} from './geo.ts';
export type { GeoMode, GeoOperation, GeoPolicy, GeoRefusal, GeoRule, RegionRules } from './geo.ts';
export { isDomestic, parsePhone } from './phone.ts';
export type { CountryCode, Phone, PhoneParse, PhoneProblem } from './phone.ts';
export { RULES } from './rules.ts';
export type { FieldProblem, RuleId } from './rules.ts';
export { DEFAULT_VALIDATION_POLICY, validateCommand } from './validate.ts';
export type { RejectedRecipient, Validation, ValidationPolicy } from './validate.ts';
export {
  RESULT_ERROR_CODES,
  boundDetails,
  expiredResult,
  failedResult,
  rejectedResult,
  resultCommandId,
  resultMetadata,
  sentResult,
  unusableCommandResult,
} from './result.ts';
export type { CommandResult, ErrorStage, Failure, Outcome, ResultContext, ResultError, ResultOperation, SourcePosition } from './result.ts';
export { resultFromAvro, resultToAvro } from './result-avro.ts';
export {
  DEAD_LETTER_CODES,
  DEAD_LETTER_OVERHEAD_BYTES,
  checkCommandRecordSize,
  commandRecordBytes,
  deadLetterFromAvro,
  deadLetterRecord,
  deadLetterToAvro,
  encodedDeadLetterBytes,
  reduceDeadLetter,
} from './dead-letter.ts';
export type { DeadLetter, DeadLetterHeader, DeadLetterInput, OmittedPart, RawHeaders, RecordSizeCheck } from './dead-letter.ts';
export { FIXED_LIMITS, codePoints, truncate, utf8Bytes } from './limits.ts';
export { maxEncodedResultBytes } from './result-size.ts';
