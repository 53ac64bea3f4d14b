/**
 * The limits that are not configuration: they bound what the worker itself writes (results and
 * dead letters), so the largest record it can produce is a fixed, stated number whatever a
 * command holds. The configurable limits on a command (recipients, content, template, metadata)
 * live in ValidationPolicy (validate.ts), with their defaults in src/config/schema.ts; their
 * upper bounds are the hard caps below. Also the small text helpers every bound is measured with.
 */

/**
 * Fixed limits, documented in the "Limits" list of docs/contracts.md. Counted in UTF-16 code units unless the
 * name says otherwise: a unit is at most 3 bytes in UTF-8, so `n` units are at most `3n` bytes.
 */
export const FIXED_LIMITS = {
  /** commandId, in Unicode code points: it is the result's key and is echoed into the result. */
  commandIdChars: 256,
  /**
   * One entry of a text message's `to`. E.164 is at most 15 digits and '+'; national forms with
   * trunk or international prefixes stay well below 32. Bounded because `send-valid` echoes
   * invalid entries into `rejectedRecipients`.
   */
  recipientChars: 32,
  /** `error.details` entries of one result, the final "… and K more problems" entry included. */
  details: 20,
  /** `error.details[].field` (a field path; map keys and indexes make it grow). */
  detailFieldChars: 200,
  /** `error.details[].problem`. */
  detailProblemChars: 500,
  /** `error.message` of a result, and of a dead letter. */
  errorMessageChars: 2_000,
  /** Hard cap of MAX_METADATA_ENTRIES: metadata with more entries is not echoed into a result. */
  metadataEntries: 256,
  /** Hard cap of MAX_METADATA_BYTES: metadata larger than this (UTF-8) is not echoed into a result. */
  metadataBytes: 65_536,
  /** A Kafka topic name (Kafka's own limit). */
  topicChars: 249,
  /** A result's `source.offset`: a decimal int64. */
  offsetChars: 20,
} as const;

/** Code points, not UTF-16 units: a Chinese signature of 16 characters is 16, an emoji is 1. */
export function codePoints(value: string): number {
  let count = 0;
  // for…of walks code points; cheaper than spreading a possibly large string into an array.
  for (const _ of value) count += 1;
  return count;
}

/** UTF-8 bytes of a string, as Avro and Kafka count them. */
export function utf8Bytes(value: string): number {
  return Buffer.byteLength(value, 'utf8');
}

/**
 * `value` cut to at most `maxUnits` UTF-16 code units, ending in '…' when cut, and never in the
 * middle of a surrogate pair (that would be an unpaired surrogate, encoded as U+FFFD).
 */
export function truncate(value: string, maxUnits: number): string {
  if (value.length <= maxUnits) return value;
  let end = Math.max(0, maxUnits - 1);
  const last = value.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${value.slice(0, end)}…`;
}

/** Size of a string-to-string map in UTF-8 bytes, keys and values together. */
export function mapBytes(map: Readonly<Record<string, string>>): number {
  let bytes = 0;
  for (const [key, value] of Object.entries(map)) bytes += utf8Bytes(key) + utf8Bytes(value);
  return bytes;
}

/** Code points of `value` when it may be longer than `max`; the UTF-16 length is an upper bound, so short strings are not walked. */
export function overLimit(value: string, max: number): number | undefined {
  if (value.length <= max) return undefined;
  const length = codePoints(value);
  return length > max ? length : undefined;
}
