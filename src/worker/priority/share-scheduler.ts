import type { Priority } from './priority.ts';

/**
 * Which priority the next free slot, mark permit or token goes to (pure, no I/O).
 *
 * High goes first; normal is never starved: while both wait, normal gets every grant that keeps
 * its count of this stretch of contention at `minShare` of the grants (0.1: the 10th, 20th, …),
 * high the rest. The count starts afresh whenever normal stops waiting, so a quiet spell banks
 * nothing that would later hold high back.
 */
export class ShareScheduler {
  readonly #minShare: number;
  /** Grants made while both priorities waited, and how many of them went to normal. */
  #contended = 0;
  #toNormal = 0;

  constructor(minShare: number) {
    if (!(minShare >= 0 && minShare <= 0.5)) throw new RangeError(`minShare must be within 0–0.5 (got ${minShare})`);
    this.#minShare = minShare;
  }

  /** The priority to serve among those waiting, or undefined when none waits. */
  pick(highWaiting: boolean, normalWaiting: boolean): Priority | undefined {
    if (!normalWaiting) {
      this.#contended = 0;
      this.#toNormal = 0;
      return highWaiting ? 'high' : undefined;
    }
    if (!highWaiting) return 'normal';
    this.#contended += 1;
    // The epsilon absorbs float error (0.1 × 10 must count as 1).
    if (this.#toNormal + 1 <= this.#minShare * this.#contended + 1e-9) {
      this.#toNormal += 1;
      return 'normal';
    }
    return 'high';
  }
}
