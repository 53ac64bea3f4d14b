/** A counting semaphore whose waiters can give up (shutdown, rebalance) through an AbortSignal. */
export class Semaphore {
  #available: number;
  readonly #waiters: { resolve: () => void; reject: (reason: unknown) => void }[] = [];

  constructor(permits: number) {
    this.#available = permits;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.#available > 0) {
      this.#available -= 1;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject,
      };
      const onAbort = (): void => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        reject(signal?.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next !== undefined) next.resolve();
    else this.#available += 1;
  }
}
