/**
 * The worker's record codec over the real Avro types, behind Confluent framing with fixed schema
 * ids instead of a registry (1 commands, 2 results, 3 dead letters): for the simulations and the
 * tests that run the record handler without a registry.
 */
import { commandType, deadLetterType, resultType } from '../../src/contracts/avro.ts';
import { DEAD_LETTER_CODES } from '../../src/contracts/dead-letter.ts';
import type { RecordCodec } from '../../src/worker/lane/record-outcomes.ts';

/** Confluent framing (magic byte, schema id) around Avro bytes, as the registry client writes it. */
export function framed(schemaId: number, avro: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(schemaId, 1);
  return Buffer.concat([header, avro]);
}

/** The codec's three functions over the real Avro types, with fixed schema ids instead of a registry. */
export const registryFreeCodec: RecordCodec = {
  decode: async (value) => {
    if (value === null || value.length < 5 || value[0] !== 0) return { ok: false, code: DEAD_LETTER_CODES.notConfluentFraming, message: 'not framed' };
    return { ok: true, value: commandType.fromBuffer(value.subarray(5)) as unknown, schemaId: value.readInt32BE(1) };
  },
  encodeResult: async (value) => framed(2, resultType.toBuffer(value)),
  encodeDeadLetter: async (value) => framed(3, deadLetterType.toBuffer(value)),
};
