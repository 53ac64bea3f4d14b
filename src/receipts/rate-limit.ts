/**
 * Per-source rate limiting of report posts: a token bucket per remote address, in a map bounded
 * to `maxSources` entries (least recently seen evicted first), so a flood from many addresses
 * costs at most that many small entries. Pure apart from the clock passed in.
 */
export interface SourceLimitSettings {
  /** Sustained posts per second per source. */
  readonly perSecond: number;
  /** Posts a source may make at once after being idle. */
  readonly burst: number;
  /** Sources remembered; beyond this the least recently seen one is forgotten (it starts full again). */
  readonly maxSources: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class SourceRateLimiter {
  readonly #settings: SourceLimitSettings;
  readonly #buckets = new Map<string, Bucket>();

  constructor(settings: SourceLimitSettings) {
    this.#settings = settings;
  }

  /** Takes one token for `source`; false when its bucket is empty (answer 429). */
  take(source: string, nowMs: number): boolean {
    const { perSecond, burst, maxSources } = this.#settings;
    const found = this.#buckets.get(source);
    let bucket: Bucket;
    if (found === undefined) {
      bucket = { tokens: burst, at: nowMs };
      if (this.#buckets.size >= maxSources) {
        const oldest = this.#buckets.keys().next();
        if (oldest.done !== true) this.#buckets.delete(oldest.value);
      }
    } else {
      bucket = found;
      this.#buckets.delete(source);
      bucket.tokens = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.at) / 1000) * perSecond);
      bucket.at = nowMs;
    }
    // Re-inserted last: Map iteration order is then least recently seen first.
    this.#buckets.set(source, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Seconds until `source` has a token again (for Retry-After), at least 1. */
  retryAfterSeconds(source: string): number {
    const bucket = this.#buckets.get(source);
    if (bucket === undefined) return 1;
    return Math.max(1, Math.ceil((1 - bucket.tokens) / this.#settings.perSecond));
  }

  get size(): number {
    return this.#buckets.size;
  }
}

/**
 * The source address of a request: the socket's peer, or — behind `trustedHops` proxies that
 * append to X-Forwarded-For (an Ingress controller) — the entry those proxies appended for the
 * client. Entries further left are client-supplied and never trusted.
 */
export function sourceAddress(remoteAddress: string | undefined, forwardedFor: string | undefined, trustedHops: number): string {
  const peer = remoteAddress ?? 'unknown';
  if (trustedHops === 0 || forwardedFor === undefined) return peer;
  const hops = forwardedFor
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  return hops[hops.length - trustedHops] ?? peer;
}
