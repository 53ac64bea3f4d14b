import { describe, expect, it } from 'vitest';
import { deliverySeconds, outcomeOf, parseReport, parseReports, readReportDate, REPORT_FIELD_LIMITS } from '../../src/receipts/report.ts';

/** A report as the UniSMS DLR extension documents it (reference provider.md §4). */
function report(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '3d1a3c6b6a0e4d0b9f3e2f5c1c8a9b7d',
    status: 'delivered',
    to: '+8613800138000',
    regionCode: 'CN',
    countryCode: '86',
    messageCount: 1,
    price: '0.050000',
    currency: 'CNY',
    errorCode: 'DELIVRD',
    errorMessage: 'Delivered',
    submitDate: '2026-11-23T10:00:00Z',
    doneDate: '2026-11-23T10:00:04.500Z',
    ...overrides,
  };
}

describe('parseReport', () => {
  it('keeps every documented field as sent and reads both dates', () => {
    const parsed = parseReport(report());
    expect(parsed).toEqual({
      ok: true,
      receipt: {
        messageId: '3d1a3c6b6a0e4d0b9f3e2f5c1c8a9b7d',
        outcome: 'DELIVERED',
        status: 'delivered',
        to: '+8613800138000',
        regionCode: 'CN',
        countryCode: '86',
        messageCount: 1,
        price: '0.050000',
        currency: 'CNY',
        errorCode: 'DELIVRD',
        errorMessage: 'Delivered',
        submitDate: '2026-11-23T10:00:00Z',
        doneDate: '2026-11-23T10:00:04.500Z',
        submittedAt: Date.UTC(2026, 10, 23, 10, 0, 0),
        doneAt: Date.UTC(2026, 10, 23, 10, 0, 4, 500),
      },
    });
  });

  it('needs only id and status; absent fields become null; unknown fields are ignored', () => {
    const parsed = parseReport({ id: 'm-1', status: 'failed', somethingNew: { nested: true } });
    expect(parsed.ok && parsed.receipt).toMatchObject({
      messageId: 'm-1',
      outcome: 'UNDELIVERED',
      to: null,
      price: null,
      messageCount: null,
      submittedAt: null,
    });
  });

  it.each([
    ['id', { id: undefined }, 'is required'],
    ['id', { id: '' }, 'is required'],
    ['status', { status: null }, 'is required'],
    ['id', { id: 42 }, 'must be a string'],
    ['id', { id: 'a/b' }, 'must be a message id'],
    ['id', { id: 'x'.repeat(REPORT_FIELD_LIMITS.id + 1) }, `at most ${REPORT_FIELD_LIMITS.id}`],
    ['status', { status: 'deliv ered' }, 'must be a status word'],
    ['to', { to: 'call me' }, 'must be a phone number'],
    ['regionCode', { regionCode: 'C1' }, 'region code'],
    ['countryCode', { countryCode: -1 }, 'calling code'],
    ['price', { price: '1e-7' }, 'non-negative decimal'],
    ['price', { price: '-0.05' }, 'non-negative decimal'],
    ['price', { price: Number.NaN }, 'non-negative decimal'],
    ['currency', { currency: 'C$' }, 'currency code'],
    ['errorCode', { errorCode: 'é' }, 'printable ASCII'],
    ['errorMessage', { errorMessage: 'x'.repeat(REPORT_FIELD_LIMITS.errorMessage + 1) }, `at most ${REPORT_FIELD_LIMITS.errorMessage}`],
    ['errorMessage', { errorMessage: 'line\u0000break' }, 'must be text'],
    ['messageCount', { messageCount: 1.5 }, 'integer from 0 to 255'],
    ['messageCount', { messageCount: 256 }, 'integer from 0 to 255'],
    ['submitDate', { submitDate: { at: 1 } }, 'must be a string'],
    ['doneDate', { doneDate: 'x'.repeat(REPORT_FIELD_LIMITS.date + 1) }, `at most ${REPORT_FIELD_LIMITS.date}`],
  ])('refuses a bad %s, naming it', (field, overrides, problem) => {
    const parsed = parseReport(report(overrides));
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.field).toBe(field);
      expect(parsed.problem).toContain(problem);
    }
  });

  it('accepts numbers where the service may send them: countryCode, price, messageCount as text, epoch dates', () => {
    const parsed = parseReport(report({ countryCode: 86, price: 0.05, messageCount: '2', submitDate: 1_790_000_000, doneDate: '1790000003000' }));
    expect(parsed.ok && parsed.receipt).toMatchObject({
      countryCode: '86',
      price: '0.05',
      messageCount: 2,
      submitDate: '1790000000',
      submittedAt: 1_790_000_000_000,
      doneAt: 1_790_000_003_000,
    });
  });

  it('keeps a well-formed but unreadable date as text with a null time', () => {
    const parsed = parseReport(report({ doneDate: 'yesterday' }));
    expect(parsed.ok && parsed.receipt).toMatchObject({ doneDate: 'yesterday', doneAt: null });
  });

  it('refuses something that is not an object', () => {
    expect(parseReport('hello')).toEqual({ ok: false, field: '', problem: 'must be a JSON object' });
  });
});

describe('parseReports', () => {
  it('takes one report or a list', () => {
    expect(parseReports(report(), 10)).toMatchObject({ ok: true, receipts: [{ status: 'delivered' }] });
    const list = parseReports([report({ id: 'a' }), report({ id: 'b', status: 'failed' })], 10);
    expect(list.ok && list.receipts.map((r) => [r.messageId, r.outcome])).toEqual([
      ['a', 'DELIVERED'],
      ['b', 'UNDELIVERED'],
    ]);
  });

  it('names the report and the field in a list, and refuses the whole list', () => {
    expect(parseReports([report(), report({ price: 'free' })], 10)).toMatchObject({ ok: false, field: '[1].price' });
    expect(parseReports([report(), 7], 10)).toMatchObject({ ok: false, field: '[1]', problem: 'must be a JSON object' });
  });

  it('bounds the number of reports per post and refuses an empty list', () => {
    expect(parseReports([report(), report(), report()], 2)).toMatchObject({
      ok: false,
      field: '(body)',
      problem: expect.stringContaining('more than the limit of 2'),
    });
    expect(parseReports([], 2)).toMatchObject({ ok: false, field: '(body)' });
  });
});

describe('outcomeOf', () => {
  it.each([
    ['delivered', 'DELIVERED'],
    ['DELIVERED', 'DELIVERED'],
    ['failed', 'UNDELIVERED'],
    ['undelivered', 'UNDELIVERED'],
    ['rejected', 'UNDELIVERED'],
    ['expired', 'UNDELIVERED'],
    ['accepted', 'UNKNOWN'],
    ['sent', 'UNKNOWN'],
  ])('%s → %s', (status, outcome) => expect(outcomeOf(status)).toBe(outcome));
});

describe('readReportDate', () => {
  it.each<[string, number | null]>([
    ['2026-11-23T10:00:00Z', Date.UTC(2026, 10, 23, 10)],
    ['2026-11-23T18:00:00+08:00', Date.UTC(2026, 10, 23, 10)],
    ['2026-11-23 10:00:00', Date.UTC(2026, 10, 23, 10)],
    ['1790000000', 1_790_000_000_000],
    ['1790000000123', 1_790_000_000_123],
    ['2026-02-31 10:00:00', null],
    ['2026-11-23T10:00:00', Date.UTC(2026, 10, 23, 10)],
    ['soon', null],
  ])('%s', (raw, ms) => expect(readReportDate(raw)).toBe(ms));
});

describe('deliverySeconds', () => {
  it('is done − submitted when both are known and in order', () => {
    const parsed = parseReport(report());
    expect(parsed.ok && deliverySeconds(parsed.receipt)).toBe(4.5);
    const reversed = parseReport(report({ submitDate: '2026-11-23T11:00:00Z' }));
    expect(reversed.ok && deliverySeconds(reversed.receipt)).toBeUndefined();
    const missing = parseReport(report({ doneDate: undefined }));
    expect(missing.ok && deliverySeconds(missing.receipt)).toBeUndefined();
  });
});
