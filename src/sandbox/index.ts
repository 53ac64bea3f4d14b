export { startSandbox, DEFAULT_SANDBOX_BALANCE } from './server.ts';
export type { SandboxOptions, SandboxAccount, SandboxAccountOptions, RunningSandbox } from './server.ts';
export { runSandboxFromArgs, parseSandboxArgs } from './main.ts';
export { SandboxState } from './state.ts';
export type { RequestLogEntry, RequestLogView, RequestFilter, SandboxStats } from './state.ts';
export { SANDBOX_ERRORS, errorEnvelope } from './error-codes.ts';
export type { SandboxErrorDefinition, SandboxErrorKey, ErrorEnvelope } from './error-codes.ts';
export { FAULT_KINDS, AFTER_PROCESSING, DEFAULT_FAULTS, FaultPlan, sampleLatency, seededRandom } from './faults.ts';
export type { FaultKind, FaultSettings, LatencySpec } from './faults.ts';
export {
  applyFaultUpdate,
  applyDeliveryReportUpdate,
  answerFaultUpdateSchema,
  deliveryReportUpdateSchema,
  faultUpdateSchema,
  handleAdmin,
  ADMIN_PREFIX,
} from './admin.ts';
export type { AnswerFaultUpdate, DeliveryReportUpdate, FaultUpdate } from './admin.ts';
export { DeliveryReporter, DEFAULT_DELIVERY_REPORTS, FAILURE_CODES, buildReport, retryDelayMs, fetchPoster } from './delivery-reports.ts';
export type { DeliveryReportBody, DeliveryReportSettings, DeliveryReportStats, ReportPoster } from './delivery-reports.ts';
export {
  ANSWER_FAULT_KINDS,
  AnswerFaults,
  corruptEnvelope,
  MAX_ANSWER_FAULT_TARGETS,
  HUGE_BODY_PADDING_BYTES,
  NEVER_ENDS_MAX_MS,
  NEVER_ENDS_TRICKLE_MS,
  OVERFLOW_MESSAGE_COUNT,
} from './answer-faults.ts';
export type { AnswerFaultKind } from './answer-faults.ts';
export { PRICE_TABLE, textRoute, voiceRoute } from './pricing.ts';
export type { Route, RegionRoutes } from './pricing.ts';
export { TEMPLATES, renderTemplate } from './templates.ts';
export type { TemplateDefinition } from './templates.ts';
export { segment, billedText } from '../contracts/segments.ts';
export type { Segmentation, Encoding } from '../contracts/segments.ts';
export { parseMoney, formatMoney, MICROS_PER_UNIT } from './money.ts';
export { validateText, validateVoice, parseRecipient, MAX_TEXT_RECIPIENTS } from './validate.ts';
export type { Recipient, TextCommand, VoiceCommand } from './validate.ts';
export { sendText, sendVoice } from './operations.ts';
export { checkAuth, TIMESTAMP_TOLERANCE_MS } from './auth.ts';
