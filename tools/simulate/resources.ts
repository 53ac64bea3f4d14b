import { MarkPacing } from '../../src/worker/priority/mark-pacing.ts';

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
  #capacity: number;
  #free: number;
  readonly #waiters: Waiter[] = [];

  constructor(name: string, capacity: number) {
    this.name = name;
    this.#capacity = capacity;
    this.#free = capacity;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Free now (below zero after a resize below what is held). */
  get free(): number {
    return this.#free;
  }

  get held(): number {
    return this.#capacity - this.#free;
  }

  get waiting(): number {
    return this.#waiters.length;
  }

  acquire(holder: object, offset: number, deliver: () => void): void {
    if (this.#free > 0) {
      this.#free -= 1;
      deliver();
    } else this.#waiters.push({ holder, offset, deliver });
  }

  release(): void {
    this.#free += 1;
    if (this.#free > this.#capacity) throw new Error(`the ${this.name} pool was given back more than it gave`);
    this.#grant();
  }

  /** A new capacity (the mark permits follow the free slots and the pacing); growing grants waiters. */
  resize(capacity: number): void {
    this.#free += capacity - this.#capacity;
    this.#capacity = capacity;
    this.#grant();
  }

  #grant(): void {
    while (this.#free > 0) {
      const next = this.#waiters.shift();
      if (next === undefined) return;
      this.#free -= 1;
      next.deliver();
    }
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

/**
 * A process's in-flight slots and mark permits, coupled as src/worker/priority/send-permits.ts
 * couples them (the pure decisions are the shipped MarkPacing's): the mark permits are the free
 * slots plus the marks ahead, paced. `fixed` (the known-bad `marks-ahead-fixed`): a pool of twice
 * the slots whatever they need, the design before issue 50; the pacing still runs, for the bound.
 */
export class SendPools {
  readonly slots: Pool;
  readonly permits: Pool;
  readonly pacing: MarkPacing;
  readonly #fixed: boolean;
  readonly #now: () => number;

  constructor(slots: number, ahead: number, fixed: boolean, now: () => number) {
    this.pacing = new MarkPacing({ initial: Math.min(ahead, 2 * slots), min: 1, max: 2 * slots, buffer: 1 });
    this.slots = new Pool('slot', slots);
    this.#fixed = fixed;
    this.#now = now;
    this.permits = new Pool('permit', fixed ? 2 * slots : this.pacing.markPermits(slots));
  }

  acquireSlot(holder: object, offset: number, deliver: () => void): void {
    this.slots.acquire(holder, offset, deliver);
    this.#fit();
  }

  releaseSlot(): void {
    this.slots.release();
    this.pacing.slotReleased(this.#now());
    this.#fit();
  }

  acquirePermit(holder: object, offset: number, deliver: () => void): void {
    this.permits.acquire(holder, offset, deliver);
  }

  releasePermit(): void {
    if (!this.#fixed && this.pacing.giveBack(this.permits.held, this.slots.free)) this.#fit();
    this.permits.release();
  }

  /** A mark committed `ms` (virtual) after its permit was granted, as a lane reports it. */
  markCommitted(ms: number): void {
    this.pacing.markCommitted(ms);
    this.#fit();
  }

  /**
   * What a process that dies now may leave marked and never called (unknown-is-bounded): the mark
   * permits it may hold (the free slots plus the marks ahead) and the slots held by records not
   * calling (held for a rebalance, granted and not yet delivered): the marks ahead plus the slots
   * less the calls under way.
   */
  allowance(calling: number): number {
    return this.pacing.ahead + this.slots.capacity - calling;
  }

  #fit(): void {
    if (this.#fixed) return;
    this.pacing.settle(this.permits.held, this.slots.free);
    this.permits.resize(this.pacing.markPermits(this.slots.free));
  }
}
