import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Commands-per-second ceiling toward the service, shared by every partition of this process.
 * Each caller reserves the next free slot, so waits are fair (FIFO) and no timer storm forms.
 * A burst of up to one second's worth is allowed after idleness. The rate can change while
 * running (`setRate`: this process's share of the deployment-wide limit after a rebalance).
 */
export class RateLimiter {
  #intervalMs: number;
  #perSecond: number;
  readonly #burstMs: number;
  readonly #now: () => number;
  #nextSlot = 0;

  constructor(perSecond: number, now: () => number = () => performance.now()) {
    this.#intervalMs = perSecond > 0 ? 1000 / perSecond : 0;
    this.#perSecond = perSecond > 0 ? perSecond : 0;
    this.#burstMs = perSecond > 0 ? 1000 : 0;
    this.#now = now;
  }

  /**
   * A new rate (> 0) for the reservations from now on. Slots already handed out stay as they
   * are; the next one comes one new interval after the last one, and the burst after idleness
   * is one second's worth at the new rate. Only a limiter built with a limit can change its rate
   * (0 at construction means no limit at all, and stays so).
   */
  setRate(perSecond: number): void {
    if (!this.enabled) throw new RangeError('setRate on a limiter built without a limit (RATE_LIMIT_PER_SECOND=0)');
    if (!(perSecond > 0) || !Number.isFinite(perSecond)) throw new RangeError(`rate must be a finite number > 0 (got ${perSecond})`);
    const interval = 1000 / perSecond;
    this.#nextSlot = this.#nextSlot - this.#intervalMs + interval;
    this.#intervalMs = interval;
    this.#perSecond = perSecond;
  }

  get perSecond(): number {
    return this.#perSecond;
  }

  get enabled(): boolean {
    return this.#intervalMs > 0;
  }

  /** Milliseconds the caller must wait for its slot (0 = go now); reserves the slot. */
  reserve(): number {
    if (this.#intervalMs === 0) return 0;
    const now = this.#now();
    const slot = Math.max(this.#nextSlot, now - this.#burstMs + this.#intervalMs);
    this.#nextSlot = slot + this.#intervalMs;
    return Math.max(0, slot - now);
  }

  async take(signal?: AbortSignal): Promise<void> {
    const wait = this.reserve();
    if (wait > 0) await sleep(wait, undefined, signal === undefined ? undefined : { signal });
  }
}
