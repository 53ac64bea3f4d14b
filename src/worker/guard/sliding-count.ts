/**
 * A count over a sliding window, kept in fixed buckets, with a trailing mean of it. Pure state:
 * the caller passes the time. Bounded: `buckets + 1` numbers and the mean, whatever the traffic.
 *
 * The window is approximated by whole buckets: the count covers the last `buckets` buckets and
 * the current one, so between `windowMs` and `windowMs + bucketMs` of history. It can only count
 * an event for up to one bucket too long, never forget one too early: a limit on it holds at
 * least as strictly as the exact sliding window (e.g. per minute with 10 s buckets: the last 60–70 s).
 *
 * The trailing mean is an exponential moving average of the window's count, sampled at every
 * bucket boundary with weight `bucketMs / trailingMs`: the mean over roughly the last `trailingMs`
 * (an hour for a per-minute window, a week for a per-day one), at one number per window.
 */
export interface SlidingShape {
  /** Length of the window (e.g. 60 000 for "per minute"). */
  readonly windowMs: number;
  /** Buckets the window is split into: the approximation is one bucket (windowMs / buckets). */
  readonly buckets: number;
  /** How far back the trailing mean reaches. */
  readonly trailingMs: number;
}

export class SlidingCount {
  readonly #bucketMs: number;
  readonly #counts: Uint32Array;
  readonly #alpha: number;
  /** Number of the newest bucket (time ÷ bucketMs). */
  #newest: number;
  #mean = 0;

  constructor(shape: SlidingShape, nowMs: number) {
    this.#bucketMs = shape.windowMs / shape.buckets;
    this.#counts = new Uint32Array(shape.buckets + 1);
    this.#alpha = Math.min(1, this.#bucketMs / shape.trailingMs);
    this.#newest = Math.floor(nowMs / this.#bucketMs);
  }

  /** Events in the window ending now. */
  count(nowMs: number): number {
    this.#advance(nowMs);
    let sum = 0;
    for (const c of this.#counts) sum += c;
    return sum;
  }

  /** The trailing mean of the window's count (0 until a bucket boundary has passed). */
  mean(nowMs: number): number {
    this.#advance(nowMs);
    return this.#mean;
  }

  add(nowMs: number, n = 1): void {
    this.#advance(nowMs);
    const slot = this.#newest % this.#counts.length;
    this.#counts[slot] = (this.#counts[slot] ?? 0) + n;
  }

  /** Moves to the bucket of `nowMs`: each boundary crossed samples the mean and frees the oldest bucket. */
  #advance(nowMs: number): void {
    const target = Math.floor(nowMs / this.#bucketMs);
    // A clock that steps back keeps the newest bucket: counts are never dropped early.
    if (target <= this.#newest) return;
    const steps = target - this.#newest;
    const size = this.#counts.length;
    const walked = Math.min(steps, size);
    for (let i = 0; i < walked; i += 1) {
      let sum = 0;
      for (const c of this.#counts) sum += c;
      this.#mean += this.#alpha * (sum - this.#mean);
      this.#newest += 1;
      this.#counts[this.#newest % size] = 0;
    }
    // Idle for longer than the window: the count is 0 for the remaining samples.
    if (steps > walked) this.#mean *= (1 - this.#alpha) ** (steps - walked);
    this.#newest = target;
  }
}
