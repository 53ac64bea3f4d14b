/**
 * A process-wide pool (in-flight slots, mark permits): a grant is handed to `deliver`, which the
 * lane turns into a (possibly late) event; a cut wait leaves the queue.
 */
interface Waiter {
  readonly holder: object;
  readonly offset: number;
  readonly deliver: () => void;
}

export class Pool {
  readonly name: string;
  readonly capacity: number;
  #free: number;
  readonly #waiters: Waiter[] = [];

  constructor(name: string, capacity: number) {
    this.name = name;
    this.capacity = capacity;
    this.#free = capacity;
  }

  acquire(holder: object, offset: number, deliver: () => void): void {
    if (this.#free > 0) {
      this.#free -= 1;
      deliver();
    } else this.#waiters.push({ holder, offset, deliver });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next !== undefined) return next.deliver();
    this.#free += 1;
    if (this.#free > this.capacity) throw new Error(`the ${this.name} pool was given back more than it gave`);
  }

  /** Cuts every wait of `holder`: the offsets that were waiting. */
  cancel(holder: object): number[] {
    const cut: number[] = [];
    for (let i = this.#waiters.length - 1; i >= 0; i--) {
      const waiter = this.#waiters[i] as Waiter;
      if (waiter.holder !== holder) continue;
      cut.push(waiter.offset);
      this.#waiters.splice(i, 1);
    }
    return cut.reverse();
  }
}
