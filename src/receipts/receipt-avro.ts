/**
 * DeliveryReceipt to and from the avsc value of schemas/delivery-receipt.avsc (wrapped unions,
 * see src/contracts/avro.ts). `receiptFromAvro` is for readers of the receipts topic (`tail
 * --receipts`, the demo, tests); an outcome symbol it does not know reads as UNKNOWN.
 */
import type { DeliveryOutcome, DeliveryReceipt } from './report.ts';

const STRING_FIELDS = ['to', 'regionCode', 'countryCode', 'price', 'currency', 'errorCode', 'errorMessage', 'submitDate', 'doneDate'] as const;
const OUTCOMES: readonly DeliveryOutcome[] = ['DELIVERED', 'UNDELIVERED', 'UNKNOWN'];

function wrap<T>(branch: string, value: T | null): Record<string, T> | null {
  return value === null ? null : { [branch]: value };
}

function unwrap<T>(value: unknown, branch: string, guard: (v: unknown) => v is T): T | null {
  if (value === null || value === undefined) return null;
  const inner = (value as Record<string, unknown>)[branch];
  if (!guard(inner)) throw new Error(`receipt field is not a ${branch} union value`);
  return inner;
}

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number';

/** The value to encode with `deliveryReceiptType` (or the registry). */
export function receiptToAvro(receipt: DeliveryReceipt): Record<string, unknown> {
  const value: Record<string, unknown> = {
    messageId: receipt.messageId,
    outcome: receipt.outcome,
    status: receipt.status,
    messageCount: wrap('int', receipt.messageCount),
    submittedAt: wrap('long', receipt.submittedAt),
    doneAt: wrap('long', receipt.doneAt),
  };
  for (const field of STRING_FIELDS) value[field] = wrap('string', receipt[field]);
  return value;
}

/** A decoded receipts-topic value → DeliveryReceipt; throws on a value of another shape. */
export function receiptFromAvro(value: unknown): DeliveryReceipt {
  if (typeof value !== 'object' || value === null) throw new Error('receipt value is not a record');
  const v = value as Record<string, unknown>;
  if (!isString(v['messageId']) || !isString(v['status'])) throw new Error('receipt value lacks messageId or status');
  const strings = Object.fromEntries(STRING_FIELDS.map((field) => [field, unwrap(v[field], 'string', isString)])) as Record<
    (typeof STRING_FIELDS)[number],
    string | null
  >;
  return {
    messageId: v['messageId'],
    outcome: OUTCOMES.includes(v['outcome'] as DeliveryOutcome) ? (v['outcome'] as DeliveryOutcome) : 'UNKNOWN',
    status: v['status'],
    ...strings,
    messageCount: unwrap(v['messageCount'], 'int', isNumber),
    submittedAt: unwrap(v['submittedAt'], 'long', isNumber),
    doneAt: unwrap(v['doneAt'], 'long', isNumber),
  };
}
