import { PRIORITIES, type Priority } from '../priority/priority.ts';

/** A rate limit at most (calls per second): an account's and a tenant's alike; the service's documented limits are far below. */
export const MAX_RATE_PER_SECOND = 100_000;
import { ShareScheduler } from '../priority/share-scheduler.ts';

/**
 * Commands-per-second ceiling toward the service, shared by every partition of this process: a
 * token bucket (one second's worth at most, at least one token, so a burst after idleness is bounded) with a FIFO
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
 *
 * Priorities (docs/priority.md): callers queue per priority; a token goes to a waiting high
 * caller first and to a normal one at least `minShare` of the time while both wait
 * (ShareScheduler). Each priority's consumer group rebalances on its own, so each pauses on its
 * own: a rebalance of the bulk topic does not hold the codes' tokens. The bucket stops filling
 * only while every priority is paused.
 */
export class RateLimiter {
  #perSecond: number;
  #tokens: number;
  #updatedAt: number;
  readonly #paused = new Set<Priority>();
  readonly #queues: Record<Priority, Waiter[]> = { high: [], normal: [] };
  readonly #scheduler: ShareScheduler;
  #timer: NodeJS.Timeout | undefined;
  readonly #now: () => number;

  constructor(perSecond: number, now: () => number = () => performance.now(), minShare = 0) {
    this.#perSecond = perSecond > 0 ? perSecond : 0;
    this.#tokens = this.#capacity;
    this.#now = now;
    this.#updatedAt = now();
    this.#scheduler = new ShareScheduler(minShare);
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
    this.#tokens = Math.min(this.#tokens, this.#capacity);
    this.#grant();
  }

  /** A group is rebalancing: no token is granted to its priority (every priority by default) until `resume`. */
  pause(priority?: Priority): void {
    if (!this.enabled) return;
    this.#refill();
    for (const p of priority === undefined ? PRIORITIES : [priority]) this.#paused.add(p);
    this.#grant();
  }

  /** The new assignment is in (its share set first): tokens flow again; from an empty bucket if all were paused. */
  resume(priority?: Priority): void {
    if (!this.enabled) return;
    const resumed = priority === undefined ? PRIORITIES : [priority];
    if (!resumed.some((p) => this.#paused.has(p))) return;
    if (this.#allPaused()) {
      this.#tokens = 0;
      this.#updatedAt = this.#now();
    }
    for (const p of resumed) this.#paused.delete(p);
    this.#grant();
  }

  get perSecond(): number {
    return this.#perSecond;
  }

  get enabled(): boolean {
    return this.#perSecond > 0;
  }

  /**
   * What the bucket holds at most: a second's worth, and at least one token. A share below one
   * call a second (a small account limit over many partitions: 2/s, 1 of 4 partitions owned) would
   * otherwise never fill to the one token a call takes, and its commands would wait for ever.
   */
  get #capacity(): number {
    return Math.max(1, this.#perSecond);
  }

  /** Callers waiting for a token, of every priority. */
  get waiting(): number {
    return this.#queues.high.length + this.#queues.normal.length;
  }

  /** Resolves when the caller may send; rejects (taking nothing) when `signal` aborts first. */
  take(signal?: AbortSignal, priority: Priority = 'normal'): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    this.#refill();
    if (!this.#paused.has(priority) && !this.#anyReady() && this.#tokens >= 1) {
      this.#tokens -= 1;
      return Promise.resolve();
    }
    const queue = this.#queues[priority];
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject, signal, onAbort: () => this.#leave(queue, waiter) };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      queue.push(waiter);
      this.#schedule();
    });
  }

  /** The tokens as one priority takes them (GuardedSender takes its pipeline's). */
  for(priority: Priority): TokenSource {
    return { take: (signal) => this.take(signal, priority) };
  }

  #allPaused(): boolean {
    return PRIORITIES.every((p) => this.#paused.has(p));
  }

  /** Whether a caller waits whose priority is not paused (so may be granted a token). */
  #anyReady(): boolean {
    return PRIORITIES.some((p) => !this.#paused.has(p) && this.#queues[p].length > 0);
  }

  #leave(queue: Waiter[], waiter: Waiter): void {
    const at = queue.indexOf(waiter);
    if (at < 0) return;
    queue.splice(at, 1);
    waiter.reject(waiter.signal?.reason);
    this.#schedule();
  }

  #refill(): void {
    const now = this.#now();
    if (!this.#allPaused()) this.#tokens = Math.min(this.#capacity, this.#tokens + ((now - this.#updatedAt) * this.#perSecond) / 1000);
    this.#updatedAt = now;
  }

  #grant(): void {
    this.#clearTimer();
    this.#refill();
    while (this.#tokens >= 1) {
      const ready = (p: Priority): boolean => !this.#paused.has(p) && this.#queues[p].length > 0;
      const priority = this.#scheduler.pick(ready('high'), ready('normal'));
      if (priority === undefined) break;
      const next = this.#queues[priority].shift();
      if (next === undefined) break;
      this.#tokens -= 1;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
    }
    this.#schedule();
  }

  #schedule(): void {
    if (this.#timer !== undefined || !this.#anyReady()) return;
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

/** Rate-limit tokens as a sender takes them. */
export interface TokenSource {
  take(signal?: AbortSignal): Promise<void>;
}

/**
 * A token of each, `first` first: an account's own limit, then the deployment's over all accounts.
 * In that order a command that waits for its account holds no global token meanwhile, which
 * another account's commands could use. (One given up between the two leaves its first token
 * taken: the account sends a call fewer that second, never more.)
 */
export function tokensOfBoth(first: TokenSource, second: TokenSource): TokenSource {
  return {
    take: async (signal) => {
      await first.take(signal);
      await second.take(signal);
    },
  };
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}
