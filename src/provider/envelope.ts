/**
 * Validation of the service's answer envelope (spec §2). Pure: a body string in, a typed
 * result or a short description of what is wrong out. Money stays the decimal string received.
 */
import { z } from 'zod';
import type { OperationName, SendResult } from './types.ts';

/**
 * The amounts we accept: a non-negative decimal written with digits only, at most 18 digits
 * before and 18 after the point, as the service writes amounts ("0.050000", six fractional
 * digits per the spec). Signs, exponents ("1e3"), "NaN", "Infinity", blanks and 400-digit
 * numbers are not amounts: such an answer is malformed.
 */
export const DECIMAL_PATTERN = /^\d{1,18}(?:\.\d{1,18})?$/;

/** Largest count we accept (Avro `int`, the result's type for recipients and messageCount). */
export const MAX_COUNT = 2_147_483_647;

/** Longest text field of a report (id, to, regionCode, countryCode, status, upstream) we accept. */
export const MAX_REPORT_TEXT = 256;

/** Longest envelope `code` we accept as the service's code; a longer one is not an envelope. */
export const MAX_CODE_LENGTH = 64;

/** Stands in for the voice answer's virtualAmount, which the spec's field table omits. */
export const ZERO_AMOUNT = '0.000000';

const decimal = z.string().regex(DECIMAL_PATTERN, 'expected a decimal string of at most 18.18 digits');
const count = z.number().int().min(0).max(MAX_COUNT);
const text = z.string().max(MAX_REPORT_TEXT);

const messageReport = z.object({
  id: text,
  to: text,
  regionCode: text,
  countryCode: text,
  messageCount: count,
  status: text,
  upstream: text,
  price: decimal,
});

const sendData = z.object({
  recipients: count,
  messageCount: count,
  totalAmount: decimal,
  payAmount: decimal,
  virtualAmount: decimal.optional(),
  messages: z.array(messageReport),
});

const envelopeHead = z.object({ code: z.string().min(1).max(MAX_CODE_LENGTH), message: z.string().optional() });

export type ParsedEnvelope =
  /** Not JSON, not an object, or no string `code`. */
  | { readonly kind: 'unparsable'; readonly problem: string }
  | { readonly kind: 'failure'; readonly code: string; readonly message: string }
  | { readonly kind: 'success'; readonly result: SendResult }
  /** code "0" but `data` missing or ill-typed. */
  | { readonly kind: 'bad-success'; readonly problem: string };

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return 'invalid';
  const path = issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.');
  return `${path}: ${issue.message}`;
}

export function parseEnvelope(body: string, operation: OperationName): ParsedEnvelope {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'unparsable', problem: 'body is not JSON' };
  }
  const head = envelopeHead.safeParse(json);
  if (!head.success) return { kind: 'unparsable', problem: `envelope ${describe(head.error)}` };
  if (head.data.code !== '0') return { kind: 'failure', code: head.data.code, message: head.data.message ?? '' };

  const data: unknown = (json as { data?: unknown }).data;
  if (data === undefined || data === null) return { kind: 'bad-success', problem: 'code "0" without data' };
  const parsed = sendData.safeParse(data);
  if (!parsed.success) return { kind: 'bad-success', problem: `data.${describe(parsed.error)}` };
  const { virtualAmount, ...rest } = parsed.data;
  if (virtualAmount === undefined && operation === 'sms.message.send') {
    return { kind: 'bad-success', problem: 'data.virtualAmount: missing' };
  }
  return { kind: 'success', result: { ...rest, virtualAmount: virtualAmount ?? ZERO_AMOUNT } };
}
