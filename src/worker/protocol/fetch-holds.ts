import type { Effect } from './effects.ts';

type Reason = 'run-ahead' | 'bytes';

/**
 * Why a partition is not fetched: the run-ahead bound (until half of it is committed, so it does
 * not flap) or the process's bytes budget. Emits `hold-fetching` whenever the answer changes.
 */
export class FetchHolds {
  readonly #reasons = new Set<Reason>();
  readonly #emit: (effect: Effect<never>) => void;
  #held = false;

  constructor(emit: (effect: Effect<never>) => void) {
    this.#emit = emit;
  }

  has(reason: Reason): boolean {
    return this.#reasons.has(reason);
  }

  /** Sets or clears one reason (`accepting`: the claim still takes records; a retired one is never held). */
  set(reason: Reason, on: boolean, accepting: boolean): void {
    if (on) this.#reasons.add(reason);
    else this.#reasons.delete(reason);
    this.#sync(accepting);
  }

  /** The claim takes no more records: no reason holds it, and a wait for bytes is cancelled. */
  clear(accepting: boolean): void {
    this.#emit({ type: 'cancel-bytes-wait' });
    this.#reasons.clear();
    this.#sync(accepting);
  }

  #sync(accepting: boolean): void {
    const held = accepting && this.#reasons.size > 0;
    if (held === this.#held) return;
    this.#held = held;
    this.#emit({ type: 'hold-fetching', held });
  }
}
