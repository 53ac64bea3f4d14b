/**
 * How many ledger marks a process keeps ahead of its in-flight slots (issue 50). Pure: counts in,
 * a number out; send-permits.ts applies it.
 *
 * A command's mark must commit before its call, and a mark's transaction takes a round trip or two,
 * so marks are opened ahead: when a slot frees, a committed mark should be waiting for it. But a
 * command marked and not yet called is what a process that dies leaves behind as `UNKNOWN`
 * although it never reached the service. So the marks open or committed without a slot are kept
 * within the free slots plus `ahead`, and `ahead` follows what the slots need:
 * - one more when a slot is free while commands wait for a mark permit (the marks are too few to
 *   keep the slots busy);
 * - one fewer for every `shrinkAfterMs` that `buffer` or more committed marks stayed queued for a
 *   slot (the marks run ahead of the slots). Only an excess that lasts counts: each partition's
 *   marks commit in batches, and a batch that queues for a moment is what keeps the slots fed.
 * It settles where marks just keep up: about the calls that finish during one mark's transaction,
 * and now and then a few ready when a slot frees. Bounds: at least `min`, at most `max`, which is
 * twice the slots (the fixed number of marks ahead before the pacing).
 */
export interface MarkPacingBounds {
  /** Marks ahead at the start, before anything was measured. */
  readonly initial: number;
  readonly min: number;
  readonly max: number;
  /** Committed marks that may wait for a slot before `ahead` shrinks. */
  readonly buffer: number;
  /** How long `buffer` or more must stay queued for each shrink. */
  readonly shrinkAfterMs: number;
}

/** How long an excess of committed marks must last for each step down: a few mark transactions. */
const SHRINK_AFTER_MS = 100;

/** The bounds for MAX_IN_FLIGHT slots; `fixed` (MARKS_AHEAD set to a number) pins `ahead` there. */
export function markPacingBounds(maxInFlight: number, fixed?: number): MarkPacingBounds {
  const buffer = Math.max(1, Math.ceil(maxInFlight / 16));
  if (fixed !== undefined) return { initial: fixed, min: fixed, max: fixed, buffer, shrinkAfterMs: SHRINK_AFTER_MS };
  return { initial: Math.max(1, Math.ceil(maxInFlight / 4)), min: 1, max: 2 * maxInFlight, buffer, shrinkAfterMs: SHRINK_AFTER_MS };
}

export class MarkPacing {
  readonly bounds: MarkPacingBounds;
  #ahead: number;
  /** Shrinks asked for and not yet made: each waits until a mark permit comes back (never below what is held). */
  #shrinks = 0;
  /** Since when `buffer` or more committed marks have been queued for a slot, as last seen. */
  #queuedSince: number | undefined;

  constructor(bounds: MarkPacingBounds) {
    if (!(bounds.min >= 1 && bounds.min <= bounds.initial && bounds.initial <= bounds.max))
      throw new RangeError(`mark pacing needs 1 ≤ min ≤ initial ≤ max (got ${bounds.min}, ${bounds.initial}, ${bounds.max})`);
    this.bounds = bounds;
    this.#ahead = bounds.initial;
  }

  /** Marks the process may keep open or committed beyond its free slots. */
  get ahead(): number {
    return this.#ahead;
  }

  /** The mark permits there are with `freeSlots` free: the free slots plus the marks ahead. */
  markPermits(freeSlots: number): number {
    return Math.max(1, freeSlots + this.#ahead);
  }

  /**
   * After a slot was freed or a record asked for a mark permit: a slot is free while records wait
   * for a permit, so the marks are too few to keep the slots busy. Returns whether `ahead` changed.
   */
  check(freeSlots: number, markWaiters: number): boolean {
    if (freeSlots <= 0 || markWaiters <= 0) return false;
    this.#shrinks = 0;
    if (this.#ahead >= this.bounds.max) return false;
    this.#ahead += 1;
    return true;
  }

  /**
   * The records queued for a slot now (with the ledger on, each holds a committed mark), seen at
   * every slot taken or given back, at `now` (ms). For every `shrinkAfterMs` that `buffer` or more
   * stayed queued, one fewer mark ahead is wanted; it is made as soon as that leaves every permit
   * held within the permits there are (`settle`, `giveBack`): a permit is never taken back.
   */
  slotQueue(waiting: number, now: number): void {
    if (waiting < this.bounds.buffer) {
      this.#queuedSince = undefined;
      return;
    }
    if (this.#queuedSince === undefined) {
      this.#queuedSince = now;
      return;
    }
    if (now - this.#queuedSince < this.bounds.shrinkAfterMs) return;
    this.#queuedSince = now;
    if (this.#ahead - this.#shrinks > this.bounds.min) this.#shrinks += 1;
  }

  /** Makes the shrinks that fit now: `held` permits held, `freeSlots` free. Returns whether `ahead` changed. */
  settle(held: number, freeSlots: number): boolean {
    let changed = false;
    while (this.#shrinks > 0 && held <= freeSlots + this.#ahead - 1) {
      this.#ahead -= 1;
      this.#shrinks -= 1;
      changed = true;
    }
    return changed;
  }

  /**
   * A mark permit is about to come back (`held` counts it still): a shrink waiting takes it, rather
   * than the next record waiting. Returns whether `ahead` changed.
   */
  giveBack(held: number, freeSlots: number): boolean {
    return this.settle(held - 1, freeSlots);
  }
}
