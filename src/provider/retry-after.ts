/** Longest wait a Retry-After can ask for (one day); a longer one (or 400 digits) is cut to this. */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3), in ms from `nowMs`, at most
 * MAX_RETRY_AFTER_MS. A date in the past gives 0. Anything unparsable gives undefined (fall back to backoff).
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Math.min(MAX_RETRY_AFTER_MS, Number(trimmed) * 1000);
  // An HTTP date is 29 characters; nothing longer is worth handing to Date.parse.
  if (trimmed.length > 64) return undefined;
  // Only something shaped like an HTTP date: V8's Date.parse also accepts bare numbers like "-1".
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - nowMs));
}
