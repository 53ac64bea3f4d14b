export { startReceiver } from './receiver.ts';
export type { RunningReceiver, ReceiverDependencies } from './receiver.ts';
export { loadReceiverConfig, receiptsEnvSchema, RECEIPTS_SECRET_VARIABLES } from './config.ts';
export type { ReceiverConfig } from './config.ts';
export { parseReport, parseReports, outcomeOf, readReportDate, deliverySeconds, REPORT_FIELD_LIMITS, MAX_MESSAGE_COUNT } from './report.ts';
export type { DeliveryReceipt, DeliveryOutcome } from './report.ts';
export { receiptToAvro, receiptFromAvro } from './receipt-avro.ts';
export { ReceiptPublisher, ReceiptsUnavailableError } from './publisher.ts';
export { REJECT_REASONS } from './metrics.ts';
