import { describe, expect, it } from 'vitest';
import { ReceiptJoin, receiptRow } from '../../src/cli/receipt-join.ts';
import type { CommandResult } from '../../src/contracts/result.ts';
import type { DeliveryReceipt } from '../../src/receipts/report.ts';

function result(commandId: string, messageIds: string[]): CommandResult {
  return {
    commandId,
    operation: 'TEXT_MESSAGE',
    outcome: 'SENT',
    totalAmount: '0.05',
    error: null,
    messages: messageIds.map((id) => ({
      id,
      to: '+8613800138000',
      regionCode: 'CN',
      countryCode: '86',
      messageCount: 1,
      status: 'sent',
      upstream: 'u',
      price: '0.05',
    })),
  } as unknown as CommandResult;
}

function receipt(messageId: string, status = 'delivered'): DeliveryReceipt {
  return {
    messageId,
    outcome: status === 'delivered' ? 'DELIVERED' : 'UNDELIVERED',
    status,
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
  };
}

const summary = (lines: ReturnType<ReceiptJoin['addResult']>): string[] =>
  lines.map((l) => (l.kind === 'result' ? `result ${l.result.commandId}` : `receipt ${l.receipt.messageId} of ${l.commandId ?? '?'}`));

describe('ReceiptJoin', () => {
  it('prints a receipt with its command when the result came first', () => {
    const join = new ReceiptJoin();
    expect(summary(join.addResult(result('c1', ['m1', 'm2'])))).toEqual(['result c1']);
    expect(summary(join.addReceipt(receipt('m2')))).toEqual(['receipt m2 of c1']);
  });

  it('holds a receipt that came before its result, and prints it right after the result', () => {
    const join = new ReceiptJoin();
    expect(join.addReceipt(receipt('m1'))).toEqual([]);
    expect(join.waiting).toBe(1);
    expect(summary(join.addResult(result('c1', ['m1'])))).toEqual(['result c1', 'receipt m1 of c1']);
    expect(join.waiting).toBe(0);
  });

  it('filters to one command', () => {
    const join = new ReceiptJoin({ commandId: 'c2' });
    expect(join.addResult(result('c1', ['m1']))).toEqual([]);
    expect(join.addReceipt(receipt('m1'))).toEqual([]);
    expect(summary(join.addResult(result('c2', ['m2'])))).toEqual(['result c2']);
    expect(summary(join.addReceipt(receipt('m2')))).toEqual(['receipt m2 of c2']);
  });

  it('bounds the receipts waiting: the oldest is printed without its command', () => {
    const join = new ReceiptJoin({ maxPending: 2 });
    join.addReceipt(receipt('a'));
    join.addReceipt(receipt('b'));
    expect(summary(join.addReceipt(receipt('c')))).toEqual(['receipt a of ?']);
    expect(join.waiting).toBe(2);
  });

  it('bounds the message ids remembered', () => {
    const join = new ReceiptJoin({ maxMessages: 1 });
    join.addResult(result('c1', ['m1']));
    join.addResult(result('c2', ['m2']));
    expect(join.addReceipt(receipt('m1'))).toEqual([]);
    expect(summary(join.addReceipt(receipt('m2')))).toEqual(['receipt m2 of c2']);
  });

  it('renders a readable row', () => {
    expect(receiptRow({ ...receipt('m1', 'failed'), errorCode: 'UNDELIV' }, null)).toMatchObject({
      commandId: '(unknown)',
      messageId: 'm1',
      outcome: 'UNDELIVERED',
      code: 'UNDELIV',
    });
  });
});

describe('renderJoined (tail --receipts output)', () => {
  it('prints JSON lines: {"result"} and {"receipt","commandId"}', async () => {
    const { renderJoined } = await import('../../src/cli/tail-receipts.ts');
    const r = result('c1', ['m1']);
    expect(JSON.parse(renderJoined({ kind: 'result', result: r }, false))).toEqual({ result: JSON.parse(JSON.stringify(r)) });
    expect(JSON.parse(renderJoined({ kind: 'receipt', receipt: receipt('m1'), commandId: 'c1' }, false))).toMatchObject({
      receipt: { messageId: 'm1' },
      commandId: 'c1',
    });
  });

  it('pretty: a table row per result (header on the first) and an indented line per receipt', async () => {
    const { renderJoined } = await import('../../src/cli/tail-receipts.ts');
    const first = renderJoined({ kind: 'result', result: result('c1', ['m1']) }, true, true).split('\n');
    expect(first[0]).toMatch(/^commandId\s+operation\s+outcome/);
    expect(first[2]).toMatch(/^c1\s+text\s+SENT/);
    expect(renderJoined({ kind: 'result', result: result('c2', []) }, true).split('\n')).toHaveLength(1);
    expect(renderJoined({ kind: 'receipt', receipt: { ...receipt('m1', 'failed'), errorCode: 'UNDELIV' }, commandId: 'c1' }, true)).toBe(
      '  ↳ m1  UNDELIVERED (failed, UNDELIV)',
    );
    expect(renderJoined({ kind: 'receipt', receipt: receipt('m9'), commandId: null }, true)).toContain('(command unknown)');
  });
});
