/**
 * How many ledger marks a process keeps ahead of its in-flight slots (issue 50). Pure: events and
 * times in, a number out; send-permits.ts applies it.
 *
 * A command's mark must commit before its call, so marks are opened ahead: when a slot frees, a
 * committed mark should be ready for it. But a command marked and not yet called is what a process
 * that dies leaves `UNKNOWN` although it never reached the service. So the marks open or committed
 * without a slot are kept within the free slots plus `ahead`, and `ahead` is what keeps the slots
 * fed (Little's law): the calls that end while one mark commits, `rate × markTime`, twice over for
 * the spread of both, plus `buffer`. `rate` is the slots given back per millisecond (the calls that
 * end: the throughput when the slots are busy, the offered load when not), smoothed over about a
 * second; `markTime` a mark's time from its permit to its commit, smoothed over the last marks. A
 * slower ledger (a fresh process's first transactions) or more traffic raises it at once; less
 * lowers it as the marks held come back (a permit is never taken back). Bounds: at least `min`, at
 * most `max` (twice the slots, the fixed number of marks ahead before the pacing); `initial` until
 * both are measured.
 */
export interface MarkPacingBounds {
  /** Marks ahead at the start, before anything was measured. */
  readonly initial: number;
  readonly min: number;
  readonly max: number;
  /** Marks ahead beyond what Little's law asks: a few ready when a slot frees. */
  readonly buffer: number;
}

/** The smoothing of the slots' release rate (an exponentially decayed count: about the last second). */
const RATE_WINDOW_MS = 1_000;
/** The weight of the newest mark time in its average. */
const MARK_TIME_WEIGHT = 0.1;
/** Little's law's answer, times this: the release rate and the mark times both vary. */
const HEADROOM = 2;

/** The bounds for MAX_IN_FLIGHT slots; `fixed` (MARKS_AHEAD set to a number) pins `ahead` there. */
export function markPacingBounds(maxInFlight: number, fixed?: number): MarkPacingBounds {
  const buffer = Math.max(1, Math.ceil(maxInFlight / 16));
  if (fixed !== undefined) return { initial: fixed, min: fixed, max: fixed, buffer };
  return { initial: Math.max(1, Math.ceil(maxInFlight / 4)), min: 1, max: 2 * maxInFlight, buffer };
}

export class MarkPacing {
  readonly bounds: MarkPacingBounds;
  #ahead: number;
  /** What Little's law asks for now (`ahead` follows it: at once up, down as permits come back). */
  #target: number;
  /** Slots given back per ms, smoothed; undefined before the first. */
  #rate: number | undefined;
  #lastRelease = 0;
  /** A mark's time from its permit to its commit (ms), averaged; undefined before the first. */
  #markTime: number | undefined;

  constructor(bounds: MarkPacingBounds) {
    if (!(bounds.min >= 1 && bounds.min <= bounds.initial && bounds.initial <= bounds.max))
      throw new RangeError(`mark pacing needs 1 ≤ min ≤ initial ≤ max (got ${bounds.min}, ${bounds.initial}, ${bounds.max})`);
    this.bounds = bounds;
    this.#ahead = bounds.initial;
    this.#target = bounds.initial;
  }

  /** Marks the process may keep open or committed beyond its free slots. */
  get ahead(): number {
    return this.#ahead;
  }

  /** What the measurements ask for now. */
  get target(): number {
    return this.#target;
  }

  /** The mark permits there are with `freeSlots` free: the free slots plus the marks ahead. */
  markPermits(freeSlots: number): number {
    return Math.max(1, freeSlots + this.#ahead);
  }

  /** A slot was given back at `now` (ms, monotonic): a call ended. */
  slotReleased(now: number): void {
    const decay = this.#rate === undefined ? 0 : Math.exp(-Math.max(0, now - this.#lastRelease) / RATE_WINDOW_MS);
    this.#rate = (this.#rate ?? 0) * decay + 1 / RATE_WINDOW_MS;
    this.#lastRelease = now;
    this.#retarget();
  }

  /** A mark committed `ms` after its permit was granted. */
  markCommitted(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return;
    this.#markTime = this.#markTime === undefined ? ms : this.#markTime + MARK_TIME_WEIGHT * (ms - this.#markTime);
    this.#retarget();
  }

  /**
   * Makes `ahead` what it should be now, as far as that leaves every permit held within the
   * permits there are: `held` permits held, `freeSlots` free. Returns whether `ahead` changed.
   */
  settle(held: number, freeSlots: number): boolean {
    const before = this.#ahead;
    if (this.#target > this.#ahead) this.#ahead = this.#target;
    else this.#ahead = Math.max(this.#target, Math.min(this.#ahead, held - freeSlots));
    return this.#ahead !== before;
  }

  /** A mark permit is about to come back (`held` counts it still): a step down waiting takes it, rather than the next record waiting. */
  giveBack(held: number, freeSlots: number): boolean {
    return this.settle(held - 1, freeSlots);
  }

  #retarget(): void {
    if (this.#rate === undefined || this.#markTime === undefined) return;
    const needed = Math.ceil(this.#rate * this.#markTime * HEADROOM) + this.bounds.buffer;
    this.#target = Math.min(this.bounds.max, Math.max(this.bounds.min, needed));
  }
}
