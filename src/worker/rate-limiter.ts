import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Commands-per-second ceiling toward the service, shared by every partition of this process.
 * Each caller reserves the next free slot, so waits are fair (FIFO) and no timer storm forms.
 * A burst of up to one second's worth is allowed after idleness.
 */
export class RateLimiter {
  readonly #intervalMs: number;
  readonly #burstMs: number;
  readonly #now: () => number;
  #nextSlot = 0;

  constructor(perSecond: number, now: () => number = () => performance.now()) {
    this.#intervalMs = perSecond > 0 ? 1000 / perSecond : 0;
    this.#burstMs = perSecond > 0 ? 1000 : 0;
    this.#now = now;
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
