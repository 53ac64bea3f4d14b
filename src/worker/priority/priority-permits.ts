import type { Priority } from './priority.ts';
import { ShareScheduler } from './share-scheduler.ts';

/** A pool of permits as one priority sees it (in-flight slots, ledger mark permits). */
export interface Permits {
  /** Resolves with a permit; rejects, taking none, when `signal` aborts first. */
  acquire(signal?: AbortSignal): Promise<void>;
  release(): void;
  /** Callers of this priority waiting for a permit. */
  readonly waiting: number;
}

export interface PriorityPermitsOptions {
  /** Under contention, the share of grants the normal priority still gets (ShareScheduler). */
  readonly minShare?: number;
  /** Permits the normal priority never holds: a code always finds these free of bulk commands. */
  readonly reservedForHigh?: number;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * A counting semaphore shared by the priorities: a permit given back goes to a waiting high
 * caller first, and to a normal one at least `minShare` of the time while both wait
 * (ShareScheduler). Normal callers hold at most `permits − reservedForHigh` at once: bulk
 * commands that keep a permit while they wait for their group's new assignment (held records keep
 * their slots through a rebalance) can then never hold every permit a code needs. With one priority in use
 * (nothing reserved) this is a plain FIFO semaphore. Waiters give up through an AbortSignal.
 */
export class PriorityPermits {
  #permits: number;
  #available: number;
  #normalCap: number;
  readonly #held: Record<Priority, number> = { high: 0, normal: 0 };
  readonly #queues: Record<Priority, Waiter[]> = { high: [], normal: [] };
  readonly #scheduler: ShareScheduler;

  constructor(permits: number, options: PriorityPermitsOptions = {}) {
    const reserved = options.reservedForHigh ?? 0;
    checkReserved(reserved, permits);
    this.#permits = permits;
    this.#available = permits;
    this.#normalCap = permits - reserved;
    this.#scheduler = new ShareScheduler(options.minShare ?? 0);
  }

  /**
   * Changes how many permits there are (the mark permits follow the free slots and the pacing:
   * send-permits.ts). Fewer than are held: nobody is granted one until enough are given back.
   */
  resize(permits: number, reservedForHigh = 0): void {
    checkReserved(reservedForHigh, permits);
    this.#available += permits - this.#permits;
    this.#permits = permits;
    this.#normalCap = permits - reservedForHigh;
    this.#grant();
  }

  get permits(): number {
    return this.#permits;
  }

  /** Callers of either priority waiting for a permit. */
  get waiting(): number {
    return this.#queues.high.length + this.#queues.normal.length;
  }

  /** The permits as one priority takes them. */
  for(priority: Priority): Permits {
    const queue = this.#queues[priority];
    return {
      acquire: (signal) => this.#acquire(priority, signal),
      release: () => this.#release(priority),
      get waiting() {
        return queue.length;
      },
    };
  }

  get available(): number {
    return this.#available;
  }

  #mayTake(priority: Priority): boolean {
    return priority === 'high' || this.#held.normal < this.#normalCap;
  }

  #acquire(priority: Priority, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    const queue = this.#queues[priority];
    // Nobody of this priority waits before it (or it would have had the permit): take one at once.
    if (this.#available > 0 && queue.length === 0 && this.#mayTake(priority)) {
      this.#available -= 1;
      this.#held[priority] += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      queue.push(waiter);
    });
  }

  #release(priority: Priority): void {
    this.#held[priority] -= 1;
    this.#available += 1;
    this.#grant();
  }

  #grant(): void {
    while (this.#available > 0) {
      const high = this.#queues.high.length > 0;
      const normal = this.#queues.normal.length > 0 && this.#mayTake('normal');
      const priority = this.#scheduler.pick(high, normal);
      const next = priority === undefined ? undefined : this.#queues[priority].shift();
      if (priority === undefined || next === undefined) return;
      this.#available -= 1;
      this.#held[priority] += 1;
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
    }
  }
}

function checkReserved(reserved: number, permits: number): void {
  if (!(Number.isInteger(reserved) && reserved >= 0 && reserved < permits))
    throw new RangeError(`reservedForHigh must be an integer in [0, ${permits}) (got ${reserved})`);
}
