/**
 * The four public Avro schemas (schemas/*.avsc) and the one set of avsc parse options the whole
 * project uses for them.
 *
 * Choices, made once here so every decode in the project sees the same shapes:
 * - `wrapUnions: 'always'`: every union value is an object with one key, the branch name
 *   (`{ "string": "hi" }`, `{ "io.smsworker.v1.TextMessage": {...} }`), or `null`. This is the Avro
 *   JSON encoding, so it is what the Confluent console producer/consumer print and accept, and
 *   the decoded shape depends only on the schema. With avsc's default (`'auto'`) a nullable field
 *   is unwrapped but the operation union is wrapped, and adding a branch to a union later can flip
 *   a field from unwrapped to wrapped.
 * - `timestamp-millis` is not mapped to a LogicalType: timestamps stay plain epoch-millisecond
 *   numbers (avsc reads the underlying long; exact up to 2^53 ms, year 287396).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import type { Schema, Type } from 'avsc';

/**
 * Parse options for avsc. Pass the same object to `@kafkajs/confluent-schema-registry` as
 * `new SchemaRegistry(args, { [SchemaType.AVRO]: AVRO_PARSE_OPTIONS })` so the registry decodes
 * into the shapes `commandFromAvro` expects. Frozen and without a `registry`: avsc writes the
 * named types it parses into `opts.registry`, so a shared mutable object would make a second
 * parse of the same schema fail with "duplicate type name". Always spread it (`{ ...AVRO_PARSE_OPTIONS }`),
 * as the registry client does.
 */
export const AVRO_PARSE_OPTIONS: Readonly<{ wrapUnions: 'always' }> = Object.freeze({ wrapUnions: 'always' });

/** Repository root `schemas/` folder (this file is src/contracts/avro.ts). */
export const SCHEMAS_DIR: string = join(import.meta.dirname, '..', '..', 'schemas');

export type SchemaName = 'command' | 'result' | 'dead-letter' | 'delivery-receipt';

/** Reads and parses one schema file as JSON, for registering it or building a variant in tests. */
export function loadSchemaJson(name: SchemaName): Schema {
  const text = readFileSync(join(SCHEMAS_DIR, `${name}.avsc`), 'utf8');
  return JSON.parse(text) as Schema;
}

/** Parses any schema with the project's options (fresh options object each time, see above). */
export function parseSchema(schema: Schema): Type {
  return avro.Type.forSchema(schema, { ...AVRO_PARSE_OPTIONS });
}

/** Schema JSON to register: subject `<command topic>-value`. */
export const commandSchema: Schema = loadSchemaJson('command');
/** Schema JSON to register: subject `<result topic>-value`. */
export const resultSchema: Schema = loadSchemaJson('result');
/** Schema JSON to register: subject `<dead-letter topic>-value`. */
export const deadLetterSchema: Schema = loadSchemaJson('dead-letter');
/** Schema JSON to register: subject `<receipts topic>-value` (written by `sms-worker receipts`). */
export const deliveryReceiptSchema: Schema = loadSchemaJson('delivery-receipt');

export const commandType: Type = parseSchema(commandSchema);
export const resultType: Type = parseSchema(resultSchema);
export const deadLetterType: Type = parseSchema(deadLetterSchema);
export const deliveryReceiptType: Type = parseSchema(deliveryReceiptSchema);

/** Fully qualified branch names, the keys of wrapped union values. */
export const BRANCH = {
  textMessage: 'io.smsworker.v1.TextMessage',
  voiceVerification: 'io.smsworker.v1.VoiceVerification',
  resultError: 'io.smsworker.v1.ResultError',
} as const;
