/**
 * An amount spent over a sliding window, in integer micro-units (BigInt: never floats), kept in
 * `buckets + 1` fixed buckets. Pure state: the caller passes the time.
 *
 * Like SlidingCount, the sum covers between `windowMs` and `windowMs + windowMs / buckets` of
 * history: spend is never forgotten early, only up to one bucket late, so a cap on it can make
 * sending wait up to one bucket longer than the exact window would, never let more through.
 */
export class SpendWindow {
  readonly #bucketMs: number;
  readonly #sums: bigint[];
  #newest: number;

  constructor(windowMs: number, buckets: number, nowMs: number) {
    this.#bucketMs = windowMs / buckets;
    this.#sums = Array.from({ length: buckets + 1 }, () => 0n);
    this.#newest = Math.floor(nowMs / this.#bucketMs);
  }

  get windowMs(): number {
    return this.#bucketMs * (this.#sums.length - 1);
  }

  total(nowMs: number): bigint {
    this.#advance(nowMs);
    return this.#sums.reduce((a, b) => a + b, 0n);
  }

  add(nowMs: number, micros: bigint): void {
    this.#advance(nowMs);
    const slot = this.#newest % this.#sums.length;
    this.#sums[slot] = (this.#sums[slot] ?? 0n) + micros;
  }

  /**
   * The earliest time at which the sum is at most `room` (now when it already is): the oldest
   * buckets leave the window one by one. Never later than one window and a bucket from now.
   */
  timeWhenAtMost(room: bigint, nowMs: number): number {
    let total = this.total(nowMs);
    if (total <= room) return nowMs;
    const size = this.#sums.length;
    for (let age = size - 1; age >= 0; age -= 1) {
      const n = this.#newest - age;
      total -= this.#sums[((n % size) + size) % size] ?? 0n;
      // Bucket n is in the sum until the newest bucket is n + size.
      if (total <= room) return (n + size) * this.#bucketMs;
    }
    return (this.#newest + size) * this.#bucketMs;
  }

  #advance(nowMs: number): void {
    const target = Math.floor(nowMs / this.#bucketMs);
    if (target <= this.#newest) return;
    const size = this.#sums.length;
    const steps = Math.min(target - this.#newest, size);
    for (let i = 1; i <= steps; i += 1) this.#sums[(this.#newest + i) % size] = 0n;
    this.#newest = target;
  }
}
