/**
 * When a partition's next transaction is due (pure; monotonic milliseconds). Marks wait for it (a
 * send waits for its mark), so they ask for it at once; results alone commit at most once per
 * interval: at once when the last transaction ended longer ago than that, else when the interval
 * since it is up (a busy partition batches them, a quiet one shows a result without waiting).
 */
export class CommitClock {
  readonly #intervalMs: number;
  readonly #markLingerMs: number;
  #lastEnded = Number.NEGATIVE_INFINITY;
  /** When the armed commit is due, if one is armed. */
  #dueAt: number | undefined;

  constructor(intervalMs: number, markLingerMs = 0) {
    this.#intervalMs = intervalMs;
    this.#markLingerMs = markLingerMs;
  }

  /** The delay to arm the commit with, or undefined when one already armed is due as soon. */
  arm(urgent: boolean, clock: number): number | undefined {
    const wait = (urgent ? this.#markLingerMs : this.#intervalMs) - (clock - this.#lastEnded);
    const delayMs = wait <= 0 ? 0 : wait;
    const dueAt = clock + delayMs;
    if (this.#dueAt !== undefined && this.#dueAt <= dueAt) return undefined;
    this.#dueAt = dueAt;
    return delayMs;
  }

  /** The armed commit fired, or was cancelled. */
  disarm(): void {
    this.#dueAt = undefined;
  }

  /** A transaction ended (or there was nothing to commit): the interval counts from here. */
  ended(clock: number): void {
    this.#lastEnded = clock;
  }
}
