/**
 * Commands-per-second ceiling toward the service, shared by every partition of this process: a
 * token bucket (one second's worth at most, so a burst after idleness is bounded) with a FIFO
 * queue of callers. A caller is granted a token when one is there and nobody queued before it.
 *
 * Why a queue rather than reserving future slots: a reservation outlived its caller. Commands given
 * up while waiting (a partition moving away at a rebalance) kept their slots reserved, and the
 * next commands waited behind them for nothing — seconds of silence at a small share. Here a
 * caller that gives up leaves the queue and takes nothing, and a new rate (`setRate`: this
 * process's share of the deployment-wide limit after a rebalance) applies to everyone still
 * waiting, not only to later callers, so shares that shrink do not add up above the limit.
 *
 * While the group rebalances (`pause`) no token is granted: the commands holding one then wait
 * for the new assignment, and a second's worth more on top of them would be a burst above the
 * share when they go. `resume` starts from an empty bucket for the same reason.
 */
export class RateLimiter {
  #perSecond: number;
  #tokens: number;
  #updatedAt: number;
  #paused = false;
  readonly #queue: Waiter[] = [];
  #timer: NodeJS.Timeout | undefined;
  readonly #now: () => number;

  constructor(perSecond: number, now: () => number = () => performance.now()) {
    this.#perSecond = perSecond > 0 ? perSecond : 0;
    this.#tokens = this.#perSecond;
    this.#now = now;
    this.#updatedAt = now();
  }

  /**
   * A new rate (> 0), for everyone waiting and every later caller. Only a limiter built with a limit
   * can change its rate (0 at construction means no limit at all, and stays so).
   */
  setRate(perSecond: number): void {
    if (!this.enabled) throw new RangeError('setRate on a limiter built without a limit (RATE_LIMIT_PER_SECOND=0)');
    if (!(perSecond > 0) || !Number.isFinite(perSecond)) throw new RangeError(`rate must be a finite number > 0 (got ${perSecond})`);
    this.#refill();
    this.#perSecond = perSecond;
    this.#tokens = Math.min(this.#tokens, perSecond);
    this.#grant();
  }

  /** The group is rebalancing: no token is granted until `resume`. */
  pause(): void {
    if (!this.enabled) return;
    this.#refill();
    this.#paused = true;
    this.#clearTimer();
  }

  /** The new assignment is in (its share set first): tokens flow again, from an empty bucket. */
  resume(): void {
    if (!this.enabled || !this.#paused) return;
    this.#paused = false;
    this.#tokens = 0;
    this.#updatedAt = this.#now();
    this.#grant();
  }

  get perSecond(): number {
    return this.#perSecond;
  }

  get enabled(): boolean {
    return this.#perSecond > 0;
  }

  /** Callers waiting for a token. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves when the caller may send; rejects (taking nothing) when `signal` aborts first. */
  take(signal?: AbortSignal): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    this.#refill();
    if (!this.#paused && this.#queue.length === 0 && this.#tokens >= 1) {
      this.#tokens -= 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: () => this.#leave(waiter) };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.#queue.push(waiter);
      this.#schedule();
    });
  }

  #leave(waiter: Waiter): void {
    const at = this.#queue.indexOf(waiter);
    if (at < 0) return;
    this.#queue.splice(at, 1);
    waiter.reject(waiter.signal?.reason);
    this.#schedule();
  }

  #refill(): void {
    const now = this.#now();
    if (!this.#paused) this.#tokens = Math.min(this.#perSecond, this.#tokens + ((now - this.#updatedAt) * this.#perSecond) / 1000);
    this.#updatedAt = now;
  }

  #grant(): void {
    this.#clearTimer();
    this.#refill();
    while (!this.#paused && this.#tokens >= 1) {
      const next = this.#queue.shift();
      if (next === undefined) break;
      this.#tokens -= 1;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#paused || this.#queue.length === 0) return;
    const waitMs = Math.max(0, ((1 - this.#tokens) * 1000) / this.#perSecond);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#grant();
    }, Math.ceil(waitMs));
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}
