import { describe, expect, it } from 'vitest';
import { CommandShapeError, commandFromAvro, commandToAvro } from '../../src/contracts/index.ts';
import { SmsWorkerError } from '../../src/errors.ts';
import { textCommand, voiceCommand } from './fixtures.ts';

function shapeError(decoded: unknown): CommandShapeError {
  try {
    commandFromAvro(decoded);
  } catch (error) {
    if (error instanceof CommandShapeError) return error;
    throw error;
  }
  throw new Error('commandFromAvro did not throw');
}

describe('commandToAvro', () => {
  it('writes absent optional fields as null and wraps present ones', () => {
    expect(commandToAvro(textCommand({ content: 'hi' }, { expiresAt: 5 }))).toEqual({
      commandId: 'cmd-1',
      createdAt: expect.any(Number),
      expiresAt: { long: 5 },
      operation: {
        'io.smsworker.v1.TextMessage': {
          to: ['13800138000'],
          signature: '合一短信',
          content: { string: 'hi' },
          templateId: null,
          templateData: null,
        },
      },
      metadata: {},
    });
  });
});

describe('commandFromAvro', () => {
  it('fills fields missing from an older writer with their schema defaults', () => {
    expect(
      commandFromAvro({
        commandId: 'c',
        createdAt: 1,
        operation: { 'io.smsworker.v1.TextMessage': { to: ['13800138000'], signature: 'ab' } },
      }),
    ).toEqual({ commandId: 'c', createdAt: 1, expiresAt: null, metadata: {}, operation: { kind: 'text', to: ['13800138000'], signature: 'ab' } });
  });

  it('keeps empty strings as decoded (validation, not mapping, decides they are absent)', () => {
    const avro = commandToAvro(textCommand({ content: '' }));
    expect(commandFromAvro(avro)).toMatchObject({ operation: { content: '' } });
  });

  it('lists every shape problem with its path and keeps what it could read', () => {
    const error = shapeError({
      commandId: 'c-9',
      createdAt: 'yesterday',
      metadata: { team: 'auth' },
      operation: { 'io.smsworker.v1.VoiceVerification': { to: 18509872103, code: '1234' } },
    });
    expect(error).toBeInstanceOf(SmsWorkerError);
    expect(error.code).toBe('COMMAND_UNUSABLE');
    expect(error.retryable).toBe(false);
    expect(error.problems.map((p) => p.field)).toEqual(['createdAt', 'operation.to']);
    expect(error).toMatchObject({ commandId: 'c-9', metadata: { team: 'auth' }, operationKind: 'voice' });
  });

  it.each([
    ['an unknown branch', { 'io.smsworker.v2.Email': {} }],
    ['an unwrapped record', { to: '18509872103', code: '1234' }],
    ['nothing', undefined],
  ])('refuses an operation that is %s', (_label, operation) => {
    const error = shapeError({ ...commandToAvro(voiceCommand()), operation });
    expect(error.problems).toEqual([{ field: 'operation', problem: expect.stringMatching(/^expected a union value with exactly one key/) }]);
    expect(error.operationKind).toBeUndefined();
  });

  it.each([null, 'text', 42])('refuses %j and reads no commandId', (decoded) => {
    const error = shapeError(decoded);
    expect(error.commandId).toBeUndefined();
    expect(error.metadata).toEqual({});
  });

  it('paths into arrays use brackets', () => {
    const error = shapeError({
      ...commandToAvro(textCommand()),
      operation: { 'io.smsworker.v1.TextMessage': { to: ['1', 2], signature: 'ab', content: { string: 'x' }, templateId: null, templateData: null } },
    });
    expect(error.problems.map((p) => p.field)).toEqual(['operation.to[1]']);
  });
});
