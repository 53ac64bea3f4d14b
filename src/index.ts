/**
 * The package's public API, for teams that produce commands or read results, dead letters and
 * delivery receipts with their own Kafka client: the contracts' TypeScript types, and the
 * conversions between them and the values the schema registry's Avro decoding gives
 * (schemas/*.avsc, shipped beside `dist/`, at `SCHEMAS_DIR`). The worker itself is the `sms-worker`
 * command (`sms-worker/cli`).
 */
export type { Operation, SendCommand, TextOperation, VoiceOperation } from './contracts/command.ts';
export { commandFromAvro, commandToAvro, CommandShapeError } from './contracts/command.ts';
export type { CommandResult, ErrorStage, Outcome, ResultError, ResultOperation, SourcePosition } from './contracts/result.ts';
export { resultFromAvro } from './contracts/result-avro.ts';
export type { DeadLetter, DeadLetterHeader, OmittedPart } from './contracts/dead-letter.ts';
export { DEAD_LETTER_CODES, deadLetterFromAvro } from './contracts/dead-letter.ts';
export type { DeliveryOutcome, DeliveryReceipt } from './receipts/report.ts';
export { receiptFromAvro } from './receipts/receipt-avro.ts';
export { SCHEMAS_DIR } from './contracts/avro.ts';
