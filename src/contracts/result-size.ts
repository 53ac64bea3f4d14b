/**
 * The largest Avro value (schemas/result.avsc, binary encoding) of a result the worker can build
 * for a command it did not send: REJECTED, EXPIRED, COMMAND_UNUSABLE and FAILED. Derived from the
 * fixed limits alone, so it holds whatever the command held and however the limits are
 * configured; docs/contracts.md states the number and a property test checks it against real encodings.
 * SENT results are not covered: they carry the service's per-recipient reports (about 150 bytes
 * each) and, under `send-valid`, the rejected recipients (each at most 32 characters and a
 * fixed problem text), so they grow with MAX_RECIPIENTS.
 */
import { FIXED_LIMITS } from './limits.ts';

/** Bytes of an Avro int/long: zig-zag, then 7 bits per byte. */
function varintBytes(value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  let bytes = 1;
  while (zigzag >= 128) {
    zigzag = Math.floor(zigzag / 128);
    bytes += 1;
  }
  return bytes;
}

/** An Avro string or bytes value of at most `maxBytes` bytes. */
function avroString(maxBytes: number): number {
  return varintBytes(maxBytes) + maxBytes;
}

/** UTF-16 code units to UTF-8 bytes, at worst: a BMP unit takes up to 3 bytes, a surrogate pair 4 for 2 units. */
const UTF8_PER_UNIT = 3;
/** Code points to UTF-8 bytes, at worst. */
const UTF8_PER_CODE_POINT = 4;
/** The longest code the worker writes itself or passes through from the service (truncated to 200 units, see result.ts). */
const CODE_UNITS = 200;
const REQUEST_ID_UNITS = 200;
/** Avro long, at most. */
const LONG = 10;
/** Avro int, at most. */
const INT = 5;
/** Count of one array or map block, and its optional byte size (avsc writes one block and a 0 end marker). */
const BLOCK = LONG + LONG + 1;

/** Upper bound in bytes of the Avro binary value of any REJECTED, EXPIRED, COMMAND_UNUSABLE or FAILED result (add 5 for Confluent framing). */
export function maxEncodedResultBytes(): number {
  const commandId = avroString(FIXED_LIMITS.commandIdChars * UTF8_PER_CODE_POINT);
  const enums = 2 * INT; // operation, outcome
  const nullUnions = 5; // recipients, messageCount, totalAmount, payAmount, virtualAmount: branch index only
  const emptyArrays = 2; // messages, rejectedRecipients
  const detail = avroString(FIXED_LIMITS.detailFieldChars * UTF8_PER_UNIT) + avroString(FIXED_LIMITS.detailProblemChars * UTF8_PER_UNIT);
  const error =
    1 + // union branch
    avroString(CODE_UNITS * UTF8_PER_UNIT) +
    avroString(FIXED_LIMITS.errorMessageChars * UTF8_PER_UNIT) +
    INT + // stage
    1 + // retryable
    BLOCK +
    FIXED_LIMITS.details * detail;
  const providerRequestId = 1 + avroString(REQUEST_ID_UNITS * UTF8_PER_UNIT);
  const attempts = INT;
  // Keys and values together at most metadataBytes; each string adds its own length prefix.
  const metadata = BLOCK + FIXED_LIMITS.metadataBytes + FIXED_LIMITS.metadataEntries * 2 * varintBytes(FIXED_LIMITS.metadataBytes);
  // Topic names are ASCII (Kafka's rule); offsets are decimal int64.
  const source = avroString(FIXED_LIMITS.topicChars) + INT + avroString(FIXED_LIMITS.offsetChars);
  const completedAt = LONG;
  return commandId + enums + nullUnions + emptyArrays + error + providerRequestId + attempts + metadata + source + completedAt;
}
