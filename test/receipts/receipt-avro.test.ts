import { describe, expect, it } from 'vitest';
import { deliveryReceiptType } from '../../src/contracts/avro.ts';
import { receiptFromAvro, receiptToAvro } from '../../src/receipts/receipt-avro.ts';
import type { DeliveryReceipt } from '../../src/receipts/report.ts';

const full: DeliveryReceipt = {
  messageId: 'm-1',
  outcome: 'UNDELIVERED',
  status: 'failed',
  to: '+8613800138000',
  regionCode: 'CN',
  countryCode: '86',
  messageCount: 2,
  price: '0.100000',
  currency: 'CNY',
  errorCode: 'UNDELIV',
  errorMessage: 'Message undeliverable',
  submitDate: '2026-11-23T10:00:00Z',
  doneDate: '2026-11-23T10:00:04Z',
  submittedAt: 1_795_428_000_000,
  doneAt: 1_795_428_004_000,
};

describe('DeliveryReceipt Avro', () => {
  it.each<[string, DeliveryReceipt]>([
    ['every field', full],
    [
      'only the required ones',
      {
        ...full,
        outcome: 'DELIVERED',
        status: 'delivered',
        to: null,
        regionCode: null,
        countryCode: null,
        messageCount: null,
        price: null,
        currency: null,
        errorCode: null,
        errorMessage: null,
        submitDate: null,
        doneDate: null,
        submittedAt: null,
        doneAt: null,
      },
    ],
  ])('round-trips %s through the schema', (_label, receipt) => {
    const bytes = deliveryReceiptType.toBuffer(receiptToAvro(receipt));
    expect(receiptFromAvro(deliveryReceiptType.fromBuffer(bytes))).toEqual(receipt);
  });

  it('encodes the same receipt to the same bytes (a duplicate report is an identical record)', () => {
    expect(deliveryReceiptType.toBuffer(receiptToAvro(full)).equals(deliveryReceiptType.toBuffer(receiptToAvro({ ...full })))).toBe(true);
  });

  it('reads an outcome symbol it does not know as UNKNOWN, and refuses other shapes', () => {
    expect(receiptFromAvro({ ...receiptToAvro(full), outcome: 'BOUNCED' }).outcome).toBe('UNKNOWN');
    expect(() => receiptFromAvro({ messageId: 1 })).toThrow();
    expect(() => receiptFromAvro({ ...receiptToAvro(full), price: { int: 1 } })).toThrow();
  });
});
