/**
 * Fault injection: what, if anything, goes wrong with the next request, and how long it waits.
 * Deterministic when needed: a FIFO queue of faults for the next N requests comes before the
 * random rates, and the random source is injectable (or seeded).
 *
 * Kinds, and whether the request is processed (charged, counted as accepted) before the fault:
 *  - http500 / http502: answer 500 / 502 with a sandbox envelope. Not processed.
 *  - http503 / http429: answer 503 / 429 with Retry-After. Not processed.
 *  - reset: destroy the socket without an answer. Not processed.
 *  - hang: never answer (until the client gives up or the sandbox closes). Not processed.
 *  - reset-after / hang-after: processed, then the answer is lost (reset / never sent). These are
 *    the faults that make a retry deliver a message twice.
 *  - malformed: processed, then answered 200 with a non-JSON body.
 *  - missing-data: processed, then answered 200 `{"code":"0","message":"Success"}` without data.
 */
export const FAULT_KINDS = ['http500', 'http502', 'http503', 'http429', 'reset', 'hang', 'reset-after', 'hang-after', 'malformed', 'missing-data'] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** Faults applied after the request was processed (charged and counted). */
export const AFTER_PROCESSING: ReadonlySet<FaultKind> = new Set(['reset-after', 'hang-after', 'malformed', 'missing-data']);

export type LatencySpec =
  | { readonly kind: 'none' }
  | { readonly kind: 'fixed'; readonly ms: number }
  | { readonly kind: 'uniform'; readonly minMs: number; readonly maxMs: number }
  /** Heavy-tailed like real APIs: median and 99th percentile of a log-normal distribution. */
  | { readonly kind: 'lognormal'; readonly medianMs: number; readonly p99Ms: number };

export interface FaultSettings {
  readonly latency: LatencySpec;
  /** Probability per request of each fault kind (their sum should stay ≤ 1). */
  readonly rates: Readonly<Partial<Record<FaultKind, number>>>;
  /** When true, every request gets 503 with Retry-After until switched off. */
  readonly down: boolean;
  /** Retry-After (seconds) sent with 429 and 503. */
  readonly retryAfterSec: number;
}

export const DEFAULT_FAULTS: FaultSettings = { latency: { kind: 'none' }, rates: {}, down: false, retryAfterSec: 1 };

/** Small, fast, seedable PRNG (mulberry32) for reproducible chaos runs. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** z-score of the 99th percentile of the standard normal distribution. */
const Z99 = 2.3263478740408408;

export function sampleLatency(spec: LatencySpec, random: () => number): number {
  switch (spec.kind) {
    case 'none':
      return 0;
    case 'fixed':
      return spec.ms;
    case 'uniform':
      return spec.minMs + random() * (spec.maxMs - spec.minMs);
    case 'lognormal': {
      const mu = Math.log(spec.medianMs);
      const sigma = Math.max(0, (Math.log(spec.p99Ms) - mu) / Z99);
      // Box–Muller; 1 - random() keeps the log argument in (0, 1].
      const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
      return Math.exp(mu + sigma * normal);
    }
  }
}

/** Picks the fault of one request: "down" first, then the queue, then one draw against the rates. */
export class FaultPlan {
  #settings: FaultSettings;
  readonly #queue: FaultKind[] = [];
  readonly #random: () => number;

  constructor(settings: FaultSettings, random: () => number) {
    this.#settings = settings;
    this.#random = random;
  }

  get settings(): FaultSettings {
    return this.#settings;
  }

  get queued(): readonly FaultKind[] {
    return [...this.#queue];
  }

  update(partial: Partial<FaultSettings>): void {
    this.#settings = { ...this.#settings, ...partial };
  }

  replace(settings: FaultSettings): void {
    this.#settings = settings;
  }

  enqueue(kind: FaultKind, count = 1): void {
    for (let i = 0; i < count; i += 1) this.#queue.push(kind);
  }

  clearQueue(): void {
    this.#queue.length = 0;
  }

  next(): FaultKind | undefined {
    if (this.#settings.down) return 'http503';
    const queued = this.#queue.shift();
    if (queued !== undefined) return queued;
    const rates = this.#settings.rates;
    let draw: number | undefined;
    let cumulative = 0;
    for (const kind of FAULT_KINDS) {
      const rate = rates[kind];
      if (rate === undefined || rate <= 0) continue;
      draw ??= this.#random();
      cumulative += rate;
      if (draw < cumulative) return kind;
    }
    return undefined;
  }

  latencyMs(): number {
    return sampleLatency(this.#settings.latency, this.#random);
  }
}
