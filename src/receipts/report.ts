/**
 * The service's delivery reports as the receiver reads them: pure functions from a parsed JSON
 * body to DeliveryReceipt values, or the first problem with the field named. No I/O here.
 *
 * What the receiver relies on (docs/receipts.md): the body is one JSON object or an
 * array of them; each has `id` (the message id of the send answer's messages[].id) and `status`.
 * Every other field of the UniSMS report (`to`, `regionCode`, `countryCode`, `messageCount`,
 * `price`, `currency`, `errorCode`, `errorMessage`, `submitDate`, `doneDate`) is optional, checked
 * for type and length when present, and kept as sent. Fields we do not know are ignored, so a
 * service that adds one does not get its reports refused.
 */

/** Limits on one report's fields (characters); a longer value is refused with 400 naming the field. */
export const REPORT_FIELD_LIMITS = {
  id: 128,
  status: 32,
  to: 32,
  regionCode: 8,
  countryCode: 8,
  price: 32,
  currency: 8,
  errorCode: 64,
  errorMessage: 512,
  date: 64,
} as const;

/** Largest messageCount accepted (255: the most parts a concatenated SMS can have). */
export const MAX_MESSAGE_COUNT = 255;

export type DeliveryOutcome = 'DELIVERED' | 'UNDELIVERED' | 'UNKNOWN';

/** One accepted report, the value published (schemas/delivery-receipt.avsc). */
export interface DeliveryReceipt {
  readonly messageId: string;
  readonly outcome: DeliveryOutcome;
  readonly status: string;
  readonly to: string | null;
  readonly regionCode: string | null;
  readonly countryCode: string | null;
  readonly messageCount: number | null;
  readonly price: string | null;
  readonly currency: string | null;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly submitDate: string | null;
  readonly doneDate: string | null;
  readonly submittedAt: number | null;
  readonly doneAt: number | null;
}

export type ReportsParse =
  { readonly ok: true; readonly receipts: readonly DeliveryReceipt[] } | { readonly ok: false; readonly field: string; readonly problem: string };

const UNDELIVERED_STATUSES = new Set(['failed', 'undelivered', 'rejected', 'expired']);

/** The report's status read into the receiver's three cases (case-insensitive). */
export function outcomeOf(status: string): DeliveryOutcome {
  const normal = status.trim().toLowerCase();
  if (normal === 'delivered') return 'DELIVERED';
  return UNDELIVERED_STATUSES.has(normal) ? 'UNDELIVERED' : 'UNKNOWN';
}

// Printable text without control characters: what ends up in records, labels and tables.
const PRINTABLE = /^[^\p{Cc}]*$/u;
const MESSAGE_ID = /^[A-Za-z0-9._:-]+$/;
const DECIMAL = /^\d{1,18}(\.\d{1,12})?$/;
const DIGITS = /^\d{1,8}$/;
const LETTERS = /^[A-Za-z]{1,8}$/;
const PHONE = /^\+?[0-9*]{3,31}$/;
const ISO_WITH_ZONE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;
const PLAIN_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})$/;

/**
 * A report date as epoch milliseconds, or null when it cannot be read. ISO 8601 with a zone;
 * `YYYY-MM-DD HH:mm:ss` without one is read as UTC (an assumption: the service's examples do not
 * say); a number (or a string of digits) is epoch seconds below 10^11 and milliseconds from there.
 */
export function readReportDate(raw: string): number | null {
  if (/^\d{1,15}$/.test(raw)) {
    const n = Number(raw);
    return n < 1e11 ? n * 1000 : n;
  }
  if (ISO_WITH_ZONE.test(raw)) {
    const ms = Date.parse(raw);
    return Number.isFinite(ms) ? ms : null;
  }
  const plain = PLAIN_DATE_TIME.exec(raw);
  if (plain !== null) {
    const [, y, mo, d, h, mi, s] = plain.map(Number) as [number, number, number, number, number, number, number];
    const ms = Date.UTC(y, mo - 1, d, h, mi, s);
    const check = new Date(ms);
    // Date.UTC rolls 2026-02-31 over into March: refuse dates that are not on the calendar.
    return check.getUTCMonth() === mo - 1 && check.getUTCDate() === d && h < 24 && mi < 60 && s < 60 ? ms : null;
  }
  return null;
}

type FieldResult<T> = { ok: true; value: T } | { ok: false; problem: string };

function text(value: unknown, limit: number, pattern: RegExp, rule: string): FieldResult<string | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'string') return { ok: false, problem: `must be a string (${rule})` };
  if (value.length > limit) return { ok: false, problem: `must be at most ${limit} characters` };
  if (!PRINTABLE.test(value) || !pattern.test(value)) return { ok: false, problem: `must be ${rule}` };
  return { ok: true, value };
}

/** A string, or a finite number written as digits (the service may send either). */
function digitsOrText(value: unknown, limit: number, pattern: RegExp, rule: string): FieldResult<string | null> {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) return { ok: false, problem: `must be ${rule}` };
    return text(String(value), limit, pattern, rule);
  }
  return text(value, limit, pattern, rule);
}

function priceOf(value: unknown): FieldResult<string | null> {
  // A JSON number has already lost any trailing zeros; String() of a finite number in this range is
  // its shortest exact decimal, which the pattern then checks (no exponent form gets through).
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) return { ok: false, problem: 'must be a non-negative decimal' };
    return text(String(value), REPORT_FIELD_LIMITS.price, DECIMAL, 'a non-negative decimal such as "0.050000"');
  }
  return text(value, REPORT_FIELD_LIMITS.price, DECIMAL, 'a non-negative decimal such as "0.050000"');
}

function messageCountOf(value: unknown): FieldResult<number | null> {
  if (value === undefined || value === null) return { ok: true, value: null };
  const n = typeof value === 'string' && /^\d{1,3}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_MESSAGE_COUNT) {
    return { ok: false, problem: `must be an integer from 0 to ${MAX_MESSAGE_COUNT}` };
  }
  return { ok: true, value: n };
}

function dateOf(value: unknown): FieldResult<{ raw: string | null; ms: number | null }> {
  if (value === undefined || value === null) return { ok: true, value: { raw: null, ms: null } };
  const raw = typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : value;
  const checked = text(raw, REPORT_FIELD_LIMITS.date, /./, 'a date (ISO 8601 text or epoch seconds/milliseconds)');
  if (!checked.ok) return checked;
  // An unreadable but well-formed date is kept as text, not refused: the report's other fields
  // (above all the status) are worth more than the timing, and the service would retry forever.
  return { ok: true, value: { raw: checked.value, ms: checked.value === null ? null : readReportDate(checked.value) } };
}

/** One report object → a receipt, or the first problem (field name relative to the report). */
export function parseReport(value: unknown): { ok: true; receipt: DeliveryReceipt } | { ok: false; field: string; problem: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, field: '', problem: 'must be a JSON object' };
  const r = value as Record<string, unknown>;
  if (r['id'] === undefined || r['id'] === null || r['id'] === '') return { ok: false, field: 'id', problem: 'is required' };
  if (r['status'] === undefined || r['status'] === null || r['status'] === '') return { ok: false, field: 'status', problem: 'is required' };
  const L = REPORT_FIELD_LIMITS;
  const checks = {
    id: text(r['id'], L.id, MESSAGE_ID, 'a message id (letters, digits, . _ : -)'),
    status: text(r['status'], L.status, /^[A-Za-z_-]+$/, 'a status word such as "delivered"'),
    to: text(r['to'], L.to, PHONE, 'a phone number'),
    regionCode: text(r['regionCode'], L.regionCode, LETTERS, 'a region code such as "CN"'),
    countryCode: digitsOrText(r['countryCode'], L.countryCode, DIGITS, 'a calling code such as "86"'),
    price: priceOf(r['price']),
    currency: text(r['currency'], L.currency, LETTERS, 'a currency code such as "CNY"'),
    errorCode: text(r['errorCode'], L.errorCode, /^[\x20-\x7e]*$/, 'printable ASCII'),
    errorMessage: text(r['errorMessage'], L.errorMessage, /./su, 'text'),
    messageCount: messageCountOf(r['messageCount']),
    submitDate: dateOf(r['submitDate']),
    doneDate: dateOf(r['doneDate']),
  };
  for (const [field, check] of Object.entries(checks)) if (!check.ok) return { ok: false, field, problem: check.problem };
  // Every check passed (the loop above returned otherwise); narrow for the compiler.
  const v = <T>(check: FieldResult<T>): T => (check as { value: T }).value;
  const status = v(checks.status) as string;
  const submit = v(checks.submitDate);
  const done = v(checks.doneDate);
  return {
    ok: true,
    receipt: {
      messageId: v(checks.id) as string,
      outcome: outcomeOf(status),
      status,
      to: v(checks.to),
      regionCode: v(checks.regionCode),
      countryCode: v(checks.countryCode),
      messageCount: v(checks.messageCount),
      price: v(checks.price),
      currency: v(checks.currency),
      errorCode: v(checks.errorCode),
      errorMessage: v(checks.errorMessage),
      submitDate: submit.raw,
      doneDate: done.raw,
      submittedAt: submit.ms,
      doneAt: done.ms,
    },
  };
}

/**
 * A parsed body (one report or an array) → every receipt, or the first problem with its path
 * (`price`, or `[3].price` in a list). All or nothing: the service resends the whole body on a
 * non-200, so publishing part of it would only add duplicates.
 */
export function parseReports(body: unknown, maxReports: number): ReportsParse {
  const list = Array.isArray(body) ? body : [body];
  const prefix = (i: number): string => (Array.isArray(body) ? `[${i}]` : '');
  if (list.length === 0) return { ok: false, field: '(body)', problem: 'is an empty list' };
  if (list.length > maxReports) return { ok: false, field: '(body)', problem: `has ${list.length} reports, more than the limit of ${maxReports}` };
  const receipts: DeliveryReceipt[] = [];
  for (const [i, item] of list.entries()) {
    const parsed = parseReport(item);
    if (!parsed.ok) {
      const path = parsed.field === '' ? prefix(i) || '(body)' : `${prefix(i)}${prefix(i) === '' ? '' : '.'}${parsed.field}`;
      return { ok: false, field: path, problem: parsed.problem };
    }
    receipts.push(parsed.receipt);
  }
  return { ok: true, receipts };
}

/** Seconds from submission to the final state, when both dates were read and in order. */
export function deliverySeconds(receipt: DeliveryReceipt): number | undefined {
  if (receipt.submittedAt === null || receipt.doneAt === null || receipt.doneAt < receipt.submittedAt) return undefined;
  return (receipt.doneAt - receipt.submittedAt) / 1000;
}
