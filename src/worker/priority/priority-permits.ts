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

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * A counting semaphore shared by the priorities: a permit given back goes to a waiting high
 * caller first, and to a normal one at least `minShare` of the time while both wait
 * (ShareScheduler). A permit is never held back for a priority that is not waiting: with one
 * priority in use this is a plain FIFO semaphore. Waiters give up through an AbortSignal.
 */
export class PriorityPermits {
  #available: number;
  readonly #queues: Record<Priority, Waiter[]> = { high: [], normal: [] };
  readonly #scheduler: ShareScheduler;

  constructor(permits: number, minShare = 0) {
    this.#available = permits;
    this.#scheduler = new ShareScheduler(minShare);
  }

  /** The permits as one priority takes them. */
  for(priority: Priority): Permits {
    const queue = this.#queues[priority];
    return {
      acquire: (signal) => this.#acquire(priority, signal),
      release: () => this.#release(),
      get waiting() {
        return queue.length;
      },
    };
  }

  get available(): number {
    return this.#available;
  }

  #acquire(priority: Priority, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    // Nobody waits (or there would be no permit left): take one at once.
    if (this.#available > 0) {
      this.#available -= 1;
      return Promise.resolve();
    }
    const queue = this.#queues[priority];
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

  #release(): void {
    const priority = this.#scheduler.pick(this.#queues.high.length > 0, this.#queues.normal.length > 0);
    const next = priority === undefined ? undefined : this.#queues[priority].shift();
    if (next === undefined) {
      this.#available += 1;
      return;
    }
    next.signal?.removeEventListener('abort', next.onAbort);
    next.resolve();
  }
}
