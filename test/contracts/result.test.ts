import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  CommandShapeError,
  DEAD_LETTER_CODES,
  commandFromAvro,
  deadLetterFromAvro,
  deadLetterRecord,
  deadLetterToAvro,
  deadLetterType,
  expiredResult,
  failedResult,
  rejectedResult,
  resultFromAvro,
  resultToAvro,
  resultType,
  sentResult,
  unusableCommandResult,
} from '../../src/contracts/index.ts';
import { boundDetails, resultCommandId, resultMetadata } from '../../src/contracts/result.ts';
import type { CommandResult, ResultContext } from '../../src/contracts/index.ts';
import type { ProviderSuccess } from '../../src/provider/types.ts';
import { NOW, textCommand, voiceCommand } from './fixtures.ts';

const source = { topic: 'sms.commands', partition: 3, offset: '9007199254740993' }; // above 2^53: strings keep it exact
const ctx: ResultContext = { command: textCommand({ to: ['13800138000', '+14155552671'] }, { metadata: { traceId: 't-1' } }), source, completedAt: NOW };

const success: ProviderSuccess = {
  requestId: 'req-42',
  attempts: 2,
  result: {
    recipients: 2,
    messageCount: 3,
    totalAmount: '0.150000',
    payAmount: '0.150000',
    virtualAmount: '0.000000',
    messages: [
      { id: 'm1', to: '+8613800138000', regionCode: 'CN', countryCode: '86', messageCount: 1, status: 'sent', upstream: 'up-a', price: '0.050000' },
      { id: 'm2', to: '+14155552671', regionCode: 'US', countryCode: '1', messageCount: 2, status: 'sent', upstream: 'up-b', price: '0.100000' },
    ],
  },
};

function roundTrip(result: CommandResult): CommandResult {
  return resultFromAvro(resultType.fromBuffer(resultType.toBuffer(resultToAvro(result))));
}

describe('result builders', () => {
  it('SENT carries the service amounts as strings, the reports, request id and attempts', () => {
    const result = sentResult(ctx, success, [{ to: 'bogus', problem: 'recipient is empty' }]);
    expect(result).toEqual({
      commandId: 'cmd-1',
      operation: 'TEXT_MESSAGE',
      outcome: 'SENT',
      recipients: 2,
      messageCount: 3,
      totalAmount: '0.150000',
      payAmount: '0.150000',
      virtualAmount: '0.000000',
      messages: success.result.messages,
      rejectedRecipients: [{ to: 'bogus', problem: 'recipient is empty' }],
      error: null,
      providerRequestId: 'req-42',
      attempts: 2,
      metadata: { traceId: 't-1' },
      source,
      completedAt: NOW,
    });
  });

  it('REJECTED lists every problem in details, nulls the SENT fields and made no attempt', () => {
    const problems = Array.from({ length: 7 }, (_, i) => ({ field: `operation.to[${i}]`, problem: 'recipient is empty' }));
    const result = rejectedResult(ctx, problems);
    expect(result).toMatchObject({
      outcome: 'REJECTED',
      recipients: null,
      totalAmount: null,
      messages: [],
      attempts: 0,
      providerRequestId: null,
      error: { code: 'VALIDATION_FAILED', stage: 'VALIDATION', retryable: false, details: problems },
    });
    expect(result.error?.message).toMatch(/^command rejected, 7 problems: operation\.to\[0\]: recipient is empty;/);
    expect(result.error?.message).toMatch(/and 2 more \(see details\)$/);
  });

  it('FAILED carries the failure as given', () => {
    const result = failedResult(
      { ...ctx, command: voiceCommand() },
      { code: 'PROVIDER_101301', message: 'no valid upstream', stage: 'PROVIDER', retryable: false, attempts: 1, requestId: 'req-7' },
    );
    expect(result).toMatchObject({
      operation: 'VOICE_VERIFICATION',
      outcome: 'FAILED',
      attempts: 1,
      providerRequestId: 'req-7',
      error: { code: 'PROVIDER_101301', message: 'no valid upstream', stage: 'PROVIDER', retryable: false, details: [] },
    });
  });

  it('EXPIRED says when', () => {
    const result = expiredResult(ctx, NOW - 60_000);
    expect(result).toMatchObject({ outcome: 'EXPIRED', attempts: 0, error: { code: 'COMMAND_EXPIRED', stage: 'VALIDATION', retryable: false } });
    expect(result.error?.message).toContain(new Date(NOW - 60_000).toISOString());
  });

  it('REJECTED for a decoded value that is not a usable command', () => {
    let error: unknown;
    try {
      commandFromAvro({ commandId: 'c-5', createdAt: 1, metadata: { a: 'b' }, operation: { 'io.smsworker.v1.VoiceVerification': { to: '1', code: 4 } } });
    } catch (caught) {
      error = caught;
    }
    if (!(error instanceof CommandShapeError) || error.commandId === undefined) throw new Error('expected a CommandShapeError with a commandId');
    const result = unusableCommandResult({ error, commandId: error.commandId, source, completedAt: NOW });
    expect(result).toMatchObject({
      commandId: 'c-5',
      operation: 'VOICE_VERIFICATION',
      outcome: 'REJECTED',
      metadata: { a: 'b' },
      attempts: 0,
      error: { code: 'COMMAND_UNUSABLE', stage: 'VALIDATION', retryable: false, details: [{ field: 'operation.code' }] },
    });
  });
});

describe('result round trip: resultToAvro → encode → decode → resultFromAvro', () => {
  it.each([
    ['SENT', sentResult(ctx, success)],
    ['REJECTED', rejectedResult(ctx, [{ field: 'operation.signature', problem: 'x' }])],
    ['FAILED', failedResult(ctx, { code: 'TRANSPORT_TIMEOUT', message: 'timed out', stage: 'TRANSPORT', retryable: true, attempts: 3 })],
    ['EXPIRED', expiredResult(ctx, NOW - 1)],
  ])('%s', (_label, result) => {
    expect(roundTrip(result)).toEqual(result);
  });

  it('refuses a value that is not a result', () => {
    expect(() => resultFromAvro({ commandId: 'x' })).toThrow(/RESULT_UNREADABLE|does not match the result schema/);
  });
});

describe('dead-letter envelope', () => {
  const input = {
    key: 'cmd-1',
    value: Buffer.from([0x00, 0x00, 0x00, 0x00, 0x2a, 0xff]),
    headers: { trace: ['a', Buffer.from('b')], empty: undefined, single: 'x' },
    source,
    error: { code: DEAD_LETTER_CODES.unknownSchemaId, message: 'schema id 42 not found' },
    deadLetteredAt: NOW,
  };

  it('keeps bytes as bytes and repeated headers as repeated entries, in order', () => {
    const record = deadLetterRecord(input);
    expect(record.key).toEqual(Buffer.from('cmd-1'));
    expect(record.headers).toEqual([
      { key: 'trace', value: Buffer.from('a') },
      { key: 'trace', value: Buffer.from('b') },
      { key: 'empty', value: null },
      { key: 'single', value: Buffer.from('x') },
    ]);
  });

  it('round-trips through the schema byte for byte', () => {
    const record = deadLetterRecord(input);
    const decoded = deadLetterFromAvro(deadLetterType.fromBuffer(deadLetterType.toBuffer(deadLetterToAvro(record))));
    expect(decoded).toEqual(record);
    expect(decoded.value?.equals(input.value)).toBe(true);
  });

  it('writes a missing key, value and headers as null / empty', () => {
    const record = deadLetterRecord({ ...input, key: null, value: undefined, headers: undefined });
    const decoded = deadLetterFromAvro(deadLetterType.fromBuffer(deadLetterType.toBuffer(deadLetterToAvro(record))));
    expect(decoded).toMatchObject({ key: null, value: null, headers: [] });
  });
});

describe('bounded results (issue 11)', () => {
  const problems = (n: number) => Array.from({ length: n }, (_, i) => ({ field: `operation.to[${i}]`, problem: 'recipient is empty' }));

  it('boundDetails keeps up to 20 problems as they are', () => {
    expect(boundDetails(problems(20))).toEqual(problems(20));
  });

  it('boundDetails keeps the first 19 of more and ends with "… and K more problems"', () => {
    const bounded = boundDetails(problems(50_000));
    expect(bounded).toHaveLength(20);
    expect(bounded.slice(0, 19)).toEqual(problems(19));
    expect(bounded[19]).toEqual({ field: '…', problem: '… and 49981 more problems' });
  });

  it('boundDetails cuts each field to 200 and each problem to 500 UTF-16 units, never splitting a surrogate pair', () => {
    const [detail] = boundDetails([{ field: `metadata.${'k'.repeat(1000)}`, problem: '😀'.repeat(1000) }]);
    expect(detail?.field).toHaveLength(200);
    expect(detail?.field.endsWith('…')).toBe(true);
    expect(detail?.problem.length).toBeLessThanOrEqual(500);
    expect(detail?.problem).toBe(`${'😀'.repeat(249)}…`);
  });

  it('a REJECTED result of 50,000 problems is small and still counts them all in its message', () => {
    const result = rejectedResult(ctx, problems(50_000));
    expect(result.error?.details).toHaveLength(20);
    expect(result.error?.message).toMatch(/^command rejected, 50000 problems: /);
    expect(result.error?.message).toMatch(/; and 49995 more \(see details\)$/);
    expect(resultType.toBuffer(resultToAvro(result)).length).toBeLessThan(5_000);
  });

  it('resultCommandId echoes a commandId of up to 256 code points and replaces a longer one by prefix and SHA-256', () => {
    expect(resultCommandId('😀'.repeat(256))).toBe('😀'.repeat(256));
    const long = 'c'.repeat(300);
    const digest = createHash('sha256').update(long, 'utf8').digest('hex');
    expect(resultCommandId(long)).toBe(`${'c'.repeat(127)}…sha256:${digest}`);
    const result = rejectedResult({ ...ctx, command: textCommand({}, { commandId: 'x'.repeat(1_000_000) }) }, problems(1));
    expect(result.commandId.length).toBeLessThan(256);
  });

  it('resultMetadata echoes metadata within the hard caps (256 entries, 65536 bytes) and nothing beyond', () => {
    const entries = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
    expect(resultMetadata(entries(256))).toEqual(entries(256));
    expect(resultMetadata(entries(257))).toEqual({});
    expect(resultMetadata({ k: 'v'.repeat(65_535) })).toEqual({ k: 'v'.repeat(65_535) });
    expect(resultMetadata({ k: 'v'.repeat(65_536) })).toEqual({});
    const expired = expiredResult({ ...ctx, command: textCommand({}, { metadata: { huge: 'x'.repeat(1_000_000) } }) }, NOW - 1);
    expect(expired.metadata).toEqual({});
  });

  it('a FAILED result bounds the service-supplied code, message and request id', () => {
    const result = failedResult(ctx, {
      code: '9'.repeat(1000),
      message: 'm'.repeat(100_000),
      stage: 'PROVIDER',
      retryable: false,
      attempts: 1,
      requestId: 'r'.repeat(1000),
    });
    expect(result.error?.code).toHaveLength(200);
    expect(result.error?.message).toHaveLength(2_000);
    expect(result.providerRequestId).toHaveLength(200);
  });

  it('a COMMAND_UNUSABLE result of a value with 50,000 shape problems and a huge key is small', () => {
    let error: CommandShapeError | undefined;
    try {
      commandFromAvro({
        commandId: 'c',
        createdAt: 1,
        expiresAt: null,
        metadata: {},
        operation: { 'io.smsworker.v1.TextMessage': { to: Array.from({ length: 50_000 }, () => 1), signature: 'ab' } },
      });
    } catch (caught) {
      if (caught instanceof CommandShapeError) error = caught;
    }
    expect(error?.problems.length).toBeGreaterThanOrEqual(50_000);
    expect(error?.message.length).toBeLessThanOrEqual(2_000);
    const result = unusableCommandResult({ error: error as CommandShapeError, commandId: 'k'.repeat(100_000), source, completedAt: NOW });
    expect(result.error?.details).toHaveLength(20);
    expect(resultType.toBuffer(resultToAvro(result)).length).toBeLessThan(10_000);
  });
});
