/**
 * Property-based tests of the one function that judges the service's answers: whatever the status,
 * headers and body (random JSON, huge numbers, deep nesting, hostile text, not JSON at all), it
 * returns exactly one verdict, never throws, and every piece of outside text it carries is bounded.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { classifyOutcome, MAX_PROVIDER_MESSAGE, MAX_REQUEST_ID } from '../../src/provider/classify.ts';
import type { AttemptOutcome, Classification } from '../../src/provider/classify.ts';
import { DECIMAL_PATTERN, MAX_CODE_LENGTH, MAX_COUNT } from '../../src/provider/envelope.ts';
import { MAX_RETRY_AFTER_MS } from '../../src/provider/retry-after.ts';
import type { FailureClass } from '../../src/provider/types.ts';

const NOW = Date.parse('2025-01-01T00:00:00Z');
const FAILURE_CLASSES: readonly FailureClass[] = ['transport', 'throttled', 'ambiguous', 'business', 'insufficient-funds', 'configuration', 'malformed'];
/** Our own details are a sentence plus bounded pieces of outside text; this is their ceiling. */
const MAX_DETAIL = MAX_PROVIDER_MESSAGE + 500;

/** A number written as JSON text, including ones no JS number holds exactly. */
const jsonNumberText = fc.oneof(
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
  fc.bigInt({ min: -(10n ** 400n), max: 10n ** 400n }).map(String),
  fc.constantFrom('3000000000', '2147483648', '2147483647', '-1', '1e400', '-1e400', '0.5', '1E3'),
);

/** Amount-like strings: sane ones and the hostile ones users met. */
const amountText = fc.oneof(
  fc.stringMatching(/^\d{1,20}(\.\d{1,20})?$/),
  fc.constantFrom('NaN', 'Infinity', '-1', '1e3', '', ' 1', '0.', '.5', '9'.repeat(400)),
  fc.string({ maxLength: 30 }),
);

/** A success-shaped body whose fields are random JSON texts (numbers out of range, wrong types…). */
const successLike = fc
  .record({
    recipients: jsonNumberText,
    messageCount: jsonNumberText,
    totalAmount: amountText,
    payAmount: amountText,
    virtualAmount: fc.option(amountText, { nil: undefined }),
    reports: fc.array(
      fc.record({ id: fc.string({ maxLength: 300 }), messageCount: jsonNumberText, price: amountText, upstream: fc.string({ maxLength: 40 }) }),
      { maxLength: 4 },
    ),
  })
  .map(({ recipients, messageCount, totalAmount, payAmount, virtualAmount, reports }) => {
    const messages = reports.map(
      (r) =>
        `{"id":${JSON.stringify(r.id)},"to":"+8613800138000","regionCode":"CN","countryCode":"86","messageCount":${r.messageCount},"status":"sent","upstream":${JSON.stringify(r.upstream)},"price":${JSON.stringify(r.price)}}`,
    );
    const virtual = virtualAmount === undefined ? '' : `,"virtualAmount":${JSON.stringify(virtualAmount)}`;
    return `{"code":"0","message":"Success","data":{"recipients":${recipients},"messageCount":${messageCount},"totalAmount":${JSON.stringify(totalAmount)},"payAmount":${JSON.stringify(payAmount)}${virtual},"messages":[${messages.join(',')}]}}`;
  });

/** A failure envelope with a code and a message of any size (up to a few hundred kB). */
const failureLike = fc
  .record({
    code: fc.oneof(fc.constantFrom('105400', '101301', '0', ''), fc.string({ maxLength: 100 })),
    message: fc.oneof(
      fc.string({ maxLength: 2_000 }),
      fc.integer({ min: 1, max: 300_000 }).map((n) => 'm'.repeat(n)),
      fc.integer(),
    ),
  })
  .map((envelope) => JSON.stringify(envelope));

const deepNesting = fc
  .integer({ min: 1, max: 200_000 })
  .chain((depth) =>
    fc.constantFrom(
      '['.repeat(depth) + ']'.repeat(depth),
      `{"code":"0","data":${'['.repeat(depth)}${']'.repeat(depth)}}`,
      '{"a":'.repeat(depth) + '1' + '}'.repeat(depth),
    ),
  );

const body = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify({ code: '0', message: 'Success', data: value })),
  successLike,
  failureLike,
  deepNesting,
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
);

const retryAfter = fc.option(
  fc.oneof(
    fc.nat().map(String),
    fc.string({ maxLength: 40 }),
    fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
    fc.constantFrom('9'.repeat(400), '-1', '1e3', 'Infinity'),
  ),
  { nil: undefined },
);

const responseOutcome: fc.Arbitrary<AttemptOutcome> = fc.record({
  kind: fc.constant('response' as const),
  status: fc.oneof(fc.integer({ min: 100, max: 599 }), fc.constantFrom(200, 400, 401, 403, 404, 429, 500, 502, 503, 504), fc.integer({ min: -1, max: 1_000 })),
  body,
  retryAfter,
  requestId: fc.option(
    fc.oneof(
      fc.string({ maxLength: 50 }),
      fc.integer({ min: 1, max: 50_000 }).map((n) => 'r'.repeat(n)),
    ),
    { nil: undefined },
  ),
});

const otherOutcome: fc.Arbitrary<AttemptOutcome> = fc.oneof(
  fc.record({
    kind: fc.constant('network' as const),
    errorCode: fc.option(fc.oneof(fc.constantFrom('ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EPIPE'), fc.string({ maxLength: 5_000 })), { nil: undefined }),
    timeoutPhase: fc.option(fc.oneof(fc.constantFrom('lookup', 'connect', 'send', 'response', 'read'), fc.string({ maxLength: 30 })), { nil: undefined }),
  }),
  fc.record({
    kind: fc.constant('oversized' as const),
    status: fc.integer({ min: 100, max: 599 }),
    limitBytes: fc.integer({ min: 1, max: 104_857_600 }),
    requestId: fc.option(fc.string({ maxLength: 500 }), { nil: undefined }),
  }),
  fc.constant<AttemptOutcome>({ kind: 'aborted' }),
);

const operation = fc.constantFrom('sms.message.send' as const, 'sms.voice.verification.send' as const);

function checkVerdict(verdict: Classification): void {
  if (verdict.ok) {
    const { result } = verdict;
    for (const count of [result.recipients, result.messageCount, ...result.messages.map((m) => m.messageCount)]) {
      expect(Number.isInteger(count) && count >= 0 && count <= MAX_COUNT).toBe(true);
    }
    for (const amount of [result.totalAmount, result.payAmount, result.virtualAmount, ...result.messages.map((m) => m.price)]) {
      expect(amount).toMatch(DECIMAL_PATTERN);
    }
    return;
  }
  const { failure } = verdict;
  expect(FAILURE_CLASSES).toContain(failure.failureClass);
  expect(failure.code.length).toBeGreaterThan(0);
  expect(failure.code.length).toBeLessThanOrEqual(MAX_CODE_LENGTH);
  expect(failure.providerMessage.length).toBeLessThanOrEqual(MAX_PROVIDER_MESSAGE);
  expect(failure.detail.length).toBeLessThanOrEqual(MAX_DETAIL);
  if (failure.requestId !== undefined) expect(failure.requestId.length).toBeLessThanOrEqual(MAX_REQUEST_ID);
  if (failure.retryAfterMs !== undefined) expect(failure.retryAfterMs).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS);
  expect(typeof failure.answered).toBe('boolean');
}

describe('classifyOutcome, for any answer (property-based)', () => {
  it('never throws and returns exactly one well-formed verdict with bounded text', () => {
    fc.assert(
      fc.property(fc.oneof({ arbitrary: responseOutcome, weight: 4 }, { arbitrary: otherOutcome, weight: 1 }), operation, (outcome, op) => {
        checkVerdict(classifyOutcome(outcome, op, NOW));
      }),
      { numRuns: 500 },
    );
  });

  it('success-shaped bodies with random numbers and amounts: a success only when every count and amount is in range', () => {
    fc.assert(
      fc.property(successLike, operation, (text, op) => {
        const verdict = classifyOutcome({ kind: 'response', status: 200, body: text }, op, NOW);
        checkVerdict(verdict);
        if (!verdict.ok) expect(verdict.failure).toMatchObject({ failureClass: 'malformed', answered: true });
      }),
      { numRuns: 300 },
    );
  });

  it('is a pure function: the same answer gives the same verdict', () => {
    fc.assert(
      fc.property(responseOutcome, operation, (outcome, op) => {
        expect(classifyOutcome(outcome, op, NOW)).toEqual(classifyOutcome(outcome, op, NOW));
      }),
      { numRuns: 100 },
    );
  });

  it('429 and 503 are throttled whatever the body and Retry-After; 500/502/504 ambiguous', () => {
    fc.assert(
      fc.property(fc.constantFrom(429, 503, 500, 502, 504), body, retryAfter, (status, text, after) => {
        const verdict = classifyOutcome({ kind: 'response', status, body: text, retryAfter: after }, 'sms.message.send', NOW);
        expect(verdict.ok).toBe(false);
        if (!verdict.ok) expect(verdict.failure.failureClass).toBe(status === 429 || status === 503 ? 'throttled' : 'ambiguous');
      }),
      { numRuns: 200 },
    );
  });
});
