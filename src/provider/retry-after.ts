/**
 * `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3), in ms from `nowMs`.
 * A date in the past gives 0. Anything unparsable gives undefined (fall back to backoff).
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (trimmed === '') return undefined;
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Only something shaped like an HTTP date: V8's Date.parse also accepts bare numbers like "-1".
  if (!/[a-z]/i.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
