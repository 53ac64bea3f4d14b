/**
 * Bytes of command records the process holds: dispatched to a lane and not yet done. Fetching no
 * longer waits for sending, so without this bound every assigned partition could hold
 * `MAX_RUN_AHEAD` records of up to `MAX_COMMAND_BYTES` each. A lane that would go over it stops
 * fetching its partition and is told when bytes are freed. One record is always let in when none
 * is held, so a record larger than the whole budget still goes (alone).
 */
export class BytesInHand {
  readonly #limit: number;
  #used = 0;
  readonly #waiting = new Set<() => void>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  get used(): number {
    return this.#used;
  }

  /** Takes `bytes` if they fit (or nothing is held); false: over the budget, nothing taken. */
  tryTake(bytes: number): boolean {
    if (this.#used > 0 && this.#used + bytes > this.#limit) return false;
    this.#used += bytes;
    return true;
  }

  free(bytes: number): void {
    this.#used = Math.max(0, this.#used - bytes);
    if (this.#waiting.size === 0 || this.#used > this.#limit / 2) return;
    // Half the budget free again: everyone waiting may fetch again (hysteresis, so they do not flap).
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const wake of waiting) wake();
  }

  /** Calls `wake` once, when at least half the budget is free. */
  whenFree(wake: () => void): void {
    this.#waiting.add(wake);
  }

  /** Stops waiting (a lane that ended). */
  cancel(wake: () => void): void {
    this.#waiting.delete(wake);
  }
}
