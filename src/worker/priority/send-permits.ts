import { MarkPacing, markPacingBounds } from './mark-pacing.ts';
import type { Priority } from './priority.ts';
import { PriorityPermits, type Permits, type PriorityPermitsOptions } from './priority-permits.ts';

export interface SendPermitsOptions {
  /** MAX_IN_FLIGHT: calls under way at once, process-wide. */
  readonly maxInFlight: number;
  /** With a priority topic beside the bulk one: the bulk topic's least share under contention (an eighth of each pool is the codes' alone). */
  readonly priorities?: { readonly normalMinShare: number } | undefined;
  /** MARKS_AHEAD as a number: that many marks ahead, not paced; undefined: paced (mark-pacing.ts). */
  readonly marksAhead?: number | undefined;
  /** Told whenever the marks ahead change (the `sms_worker_marks_ahead` gauge). */
  readonly onMarksAhead?: (ahead: number) => void;
  /** A monotonic clock in ms (the pacing's windows); performance.now by default. */
  readonly now?: () => number;
}

/** Ledger mark permits, and where a lane reports how long a mark took to commit (the pacing's measure). */
export interface MarkPermits extends Permits {
  /** A mark committed `ms` after its permit was granted (optional: a plain pool of permits has no pacing to tell). */
  readonly committed?: (ms: number) => void;
}

/** One priority's view: its in-flight slots and its ledger mark permits. */
export interface PriorityPools {
  readonly slots: Permits;
  readonly markPermits: MarkPermits;
}

/**
 * The process's in-flight slots (MAX_IN_FLIGHT) and ledger mark permits, shared by the command
 * sources (high priority first: priority-permits.ts). A record holds a mark permit from its mark's
 * opening until it gets a slot, so the permits bound the commands marked and not yet calling: what
 * a process that dies leaves `UNKNOWN` although never sent. There are as many as the free slots
 * plus the marks the pacing keeps ahead (mark-pacing.ts: the calls that end while a mark commits,
 * from the slots given back and the marks' commit times the lanes report): when the slots are all
 * busy, only `ahead` commands wait marked, about what the slots need to stay busy.
 */
export class SendPermits {
  readonly #slots: PriorityPermits;
  readonly #marks: PriorityPermits;
  readonly #pacing: MarkPacing;
  readonly #o: SendPermitsOptions;
  readonly #now: () => number;

  constructor(options: SendPermitsOptions) {
    this.#o = options;
    this.#now = options.now ?? (() => performance.now());
    this.#pacing = new MarkPacing(markPacingBounds(options.maxInFlight, options.marksAhead));
    this.#slots = new PriorityPermits(options.maxInFlight, this.#sharing(options.maxInFlight));
    const marks = options.maxInFlight + this.#pacing.ahead;
    this.#marks = new PriorityPermits(marks, this.#sharing(marks));
    options.onMarksAhead?.(this.#pacing.ahead);
  }

  /** Marks kept ahead of the free slots now. */
  get marksAhead(): number {
    return this.#pacing.ahead;
  }

  /** Mark permits now (the free slots plus the marks ahead). */
  get markPermits(): number {
    return this.#marks.permits;
  }

  for(priority: Priority): PriorityPools {
    const slots = this.#slots.for(priority);
    const marks = this.#marks.for(priority);
    return {
      slots: {
        acquire: (signal) => {
          const granted = slots.acquire(signal);
          this.#fit();
          return granted;
        },
        release: () => {
          slots.release();
          this.#pacing.slotReleased(this.#now());
          this.#fit();
        },
        get waiting() {
          return slots.waiting;
        },
      },
      markPermits: {
        acquire: (signal) => marks.acquire(signal),
        release: () => {
          if (this.#pacing.giveBack(this.#heldMarks, this.#slots.available)) this.#paced();
          marks.release();
        },
        committed: (ms) => {
          this.#pacing.markCommitted(ms);
          this.#fit();
        },
        get waiting() {
          return marks.waiting;
        },
      },
    };
  }

  #paced(): void {
    this.#fit();
    this.#o.onMarksAhead?.(this.#pacing.ahead);
  }

  get #heldMarks(): number {
    return this.#marks.permits - this.#marks.available;
  }

  /** The mark permits: the free slots plus the marks ahead (a step down is made once it fits). */
  #fit(): void {
    if (this.#pacing.settle(this.#heldMarks, this.#slots.available)) this.#o.onMarksAhead?.(this.#pacing.ahead);
    const permits = this.#pacing.markPermits(this.#slots.available);
    if (permits !== this.#marks.permits) this.#marks.resize(permits, this.#sharing(permits).reservedForHigh ?? 0);
  }

  /**
   * One priority: a plain FIFO pool. Two: the normal priority's least share, and an eighth of each
   * pool (at least one) the codes' alone: while the bulk group rebalances, its records about to
   * call are held with their slots and its records waiting for a slot keep their permits
   * (partition-protocol.md), and as its calls finish every freed slot could go to a bulk record
   * that is then held too; a code arriving then would wait out the bulk group's rebalance.
   */
  #sharing(permits: number): PriorityPermitsOptions {
    const priorities = this.#o.priorities;
    if (priorities === undefined) return {};
    return { minShare: priorities.normalMinShare, reservedForHigh: Math.min(permits - 1, Math.max(1, Math.ceil(permits / 8))) };
  }
}
