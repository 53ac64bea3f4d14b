/** Small statistics helpers: percentiles, the steady window of a drain, spreads. */

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

export function sortedNumbers(values: Iterable<number>): number[] {
  return [...values].sort((a, b) => a - b);
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: Iterable<number>): number {
  const sorted = sortedNumbers(values);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export interface SteadyWindow {
  /** Epoch ms of the first and last result inside the window. */
  readonly from: number;
  readonly to: number;
  /** Results completed inside the window. */
  readonly results: number;
  readonly perSecond: number;
}

/**
 * Throughput over the steady window: completion times sorted, the first and last `trim` share of
 * results excluded (start-up, group join and the tail), the rest divided by the time they took.
 */
export function steadyWindow(completionTimes: readonly number[], trim = 0.1): SteadyWindow {
  const times = sortedNumbers(completionTimes);
  const n = times.length;
  if (n < 2) return { from: times[0] ?? 0, to: times[0] ?? 0, results: n, perSecond: Number.NaN };
  const lo = Math.floor(n * trim);
  const hi = Math.max(lo + 1, Math.ceil(n * (1 - trim)) - 1);
  const from = times[lo] as number;
  const to = times[hi] as number;
  const seconds = Math.max(0.001, (to - from) / 1000);
  return { from, to, results: hi - lo, perSecond: (hi - lo) / seconds };
}

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
}

export function spread(values: readonly number[]): { min: number; max: number; mean: number } {
  const finite = values.filter(Number.isFinite);
  return { min: Math.min(...finite), max: Math.max(...finite), mean: mean(finite) };
}

/**
 * Longest time between consecutive instants of sorted `times` inside [from, to], counting the
 * edges: from `from` to the first and from the last to `to` (a window with none is all silence).
 */
export function longestGap(times: readonly number[], from: number, to: number): number {
  let last = from;
  let gap = 0;
  for (const t of times) {
    if (t < from) continue;
    if (t > to) break;
    gap = Math.max(gap, t - last);
    last = t;
  }
  return Math.max(gap, to - last);
}

/**
 * Time to send p99 per whole second of publishing from `from`, for `seconds` seconds: where in a
 * window its slow commands were (a start-up's first second, or all through it). NaN for a second
 * with no command that reached the service.
 */
export function p99BySecond(publishedAt: ReadonlyMap<string, number>, firstRequest: ReadonlyMap<string, number>, from: number, seconds: number): number[] {
  const buckets: number[][] = Array.from({ length: seconds }, () => []);
  for (const [id, at] of publishedAt) {
    const second = Math.floor((at - from) / 1000);
    const received = firstRequest.get(id);
    if (second < 0 || second >= seconds || received === undefined) continue;
    buckets[second]?.push(received - at);
  }
  return buckets.map((b) => percentile(sortedNumbers(b), 99));
}
