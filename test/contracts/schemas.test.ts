import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import {
  AVRO_PARSE_OPTIONS,
  commandFromAvro,
  commandSchema,
  commandToAvro,
  commandType,
  deadLetterSchema,
  loadSchemaJson,
  parseSchema,
  resultSchema,
} from '../../src/contracts/index.ts';
import type { SchemaName, SendCommand } from '../../src/contracts/index.ts';
import { NOW, textCommand, voiceCommand } from './fixtures.ts';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Every record, enum and field in a schema, with its path, and whether it has a non-empty doc. */
function documentables(node: Json, path: string, out: { path: string; doc: unknown }[] = []): { path: string; doc: unknown }[] {
  if (Array.isArray(node)) {
    node.forEach((branch) => documentables(branch, path, out));
  } else if (node !== null && typeof node === 'object') {
    if (node['type'] === 'record' || node['type'] === 'enum') out.push({ path: `${path}<${String(node['name'])}>`, doc: node['doc'] });
    const fields = node['fields'];
    if (Array.isArray(fields)) {
      for (const field of fields) {
        if (field === null || typeof field !== 'object' || Array.isArray(field)) continue;
        const fieldPath = `${path}.${String(field['name'])}`;
        out.push({ path: fieldPath, doc: field['doc'] });
        documentables(field['type'] ?? null, fieldPath, out);
      }
    }
    for (const key of ['type', 'items', 'values'] as const) {
      const child = node[key];
      if (child !== undefined && typeof child === 'object') documentables(child, path, out);
    }
  }
  return out;
}

describe.each(['command', 'result', 'dead-letter', 'delivery-receipt'] as const satisfies readonly SchemaName[])('%s.avsc', (name) => {
  const json = loadSchemaJson(name) as Json;

  it('parses with the project options and lives in io.smsworker.v1', () => {
    const type = parseSchema(loadSchemaJson(name));
    expect(type.name?.startsWith('io.smsworker.v1.')).toBe(true);
  });

  it('has a doc checker that notices a missing doc', () => {
    const bad: Json = { type: 'record', name: 'X', doc: 'x', fields: [{ name: 'a', type: 'string' }] };
    expect(
      documentables(bad, 'x')
        .filter((d) => d.doc === undefined)
        .map((d) => d.path),
    ).toEqual(['x.a']);
  });

  it('documents every record, enum and field', () => {
    const all = documentables(json, name);
    expect(all.length).toBeGreaterThan(5);
    const undocumented = all.filter((d) => typeof d.doc !== 'string' || d.doc.trim() === '').map((d) => d.path);
    expect(undocumented).toEqual([]);
  });
});

describe('parse options', () => {
  it('are frozen, wrap every union, and can be reused for any number of parses', () => {
    expect(Object.isFrozen(AVRO_PARSE_OPTIONS)).toBe(true);
    expect(AVRO_PARSE_OPTIONS).toEqual({ wrapUnions: 'always' });
    expect(() => [parseSchema(commandSchema), parseSchema(commandSchema), parseSchema(resultSchema), parseSchema(deadLetterSchema)]).not.toThrow();
  });

  it('keep timestamps as epoch-millisecond numbers', () => {
    const decoded: unknown = commandType.fromBuffer(commandType.toBuffer(commandToAvro(textCommand({}, { expiresAt: NOW + 60_000 }))));
    expect(decoded).toMatchObject({ createdAt: NOW - 1000, expiresAt: { long: NOW + 60_000 } });
  });
});

describe('command round trip: commandToAvro → encode → decode → commandFromAvro', () => {
  it.each<[string, SendCommand]>([
    ['text with content', textCommand({}, { metadata: { traceId: 'abc' }, expiresAt: NOW + 60_000 })],
    ['text with template', textCommand({ content: undefined, templateId: 'T1', templateData: { code: '1234' }, to: ['13800138000', '+14155552671'] })],
    ['voice', voiceCommand()],
  ])('%s', (_label, command) => {
    const buffer = commandType.toBuffer(commandToAvro(command));
    expect(commandFromAvro(commandType.fromBuffer(buffer))).toEqual(command);
  });

  it('matches the Avro JSON encoding a console producer would send', () => {
    const json = {
      commandId: 'c-1',
      createdAt: NOW,
      expiresAt: null,
      operation: { 'io.smsworker.v1.VoiceVerification': { to: '18509872103', code: '1234' } },
      metadata: {},
    };
    const value: unknown = commandType.fromString(JSON.stringify(json));
    expect(commandFromAvro(value)).toEqual({
      commandId: 'c-1',
      createdAt: NOW,
      expiresAt: null,
      operation: { kind: 'voice', to: '18509872103', code: '1234' },
      metadata: {},
    });
  });
});

describe('schema evolution', () => {
  /** v2 of the command: TextMessage gains an optional `priority`, the command an optional `tenant`. */
  function commandV2(): Record<string, unknown> {
    const v2 = structuredClone(commandSchema) as { fields: Record<string, unknown>[] };
    v2.fields.push({ name: 'tenant', type: ['null', 'string'], default: null, doc: 'v2 only.' });
    const operation = v2.fields.find((f) => f['name'] === 'operation') as { type: { name: string; fields: unknown[] }[] };
    operation.type.find((t) => t.name === 'TextMessage')?.fields.push({ name: 'priority', type: ['null', 'string'], default: null, doc: 'v2 only.' });
    return v2;
  }

  const v1 = commandType;
  const v2 = parseSchema(commandV2() as avro.Schema);

  it('v2 reads v1 data, filling the new fields with their defaults', () => {
    const bytes = v1.toBuffer(commandToAvro(textCommand()));
    const read: unknown = v2.fromBuffer(bytes, v2.createResolver(v1));
    expect(read).toMatchObject({ tenant: null, operation: { 'io.smsworker.v1.TextMessage': { priority: null } } });
    expect(commandFromAvro(read)).toEqual(textCommand());
  });

  it('v1 reads v2 data, skipping the fields it does not know', () => {
    const avroV1 = commandToAvro(textCommand()) as { operation: Record<string, Record<string, unknown>> };
    const text = avroV1.operation['io.smsworker.v1.TextMessage'];
    const v2Value = { ...avroV1, tenant: { string: 'acme' }, operation: { 'io.smsworker.v1.TextMessage': { ...text, priority: { string: 'high' } } } };
    const read: unknown = v1.fromBuffer(v2.toBuffer(v2Value), v1.createResolver(v2));
    expect(read).not.toHaveProperty('tenant');
    expect(commandFromAvro(read)).toEqual(textCommand());
  });

  it('an old result reader maps an outcome symbol it does not know to the enum default UNKNOWN', () => {
    const writerJson = structuredClone(resultSchema) as { fields: { name: string; type: { symbols: string[] } }[] };
    const outcome = writerJson.fields.find((f) => f.name === 'outcome');
    outcome?.type.symbols.push('THROTTLED');
    const writer = parseSchema(writerJson as unknown as avro.Schema);
    const reader = parseSchema(resultSchema);
    const value = {
      commandId: 'c-1',
      operation: 'TEXT_MESSAGE',
      outcome: 'THROTTLED',
      recipients: null,
      messageCount: null,
      totalAmount: null,
      payAmount: null,
      virtualAmount: null,
      messages: [],
      rejectedRecipients: [],
      error: null,
      providerRequestId: null,
      attempts: 1,
      metadata: {},
      source: { topic: 't', partition: 0, offset: '0' },
      completedAt: NOW,
    };
    const read: unknown = reader.fromBuffer(writer.toBuffer(value), reader.createResolver(writer));
    expect(read).toMatchObject({ outcome: 'UNKNOWN', commandId: 'c-1' });
  });

  it('a decoder without the project options yields shapes commandFromAvro refuses (pass AVRO_PARSE_OPTIONS to the registry)', () => {
    const auto = avro.Type.forSchema(commandSchema, { wrapUnions: 'auto' });
    const decoded: unknown = auto.fromBuffer(commandType.toBuffer(commandToAvro(textCommand())));
    expect(() => commandFromAvro(decoded)).toThrow(/operation\.content/);
  });
});
