import type { RecordState } from './table.ts';

/** What the machine knows of one record it took. */
export interface RecordEntry<O> {
  readonly offset: bigint;
  readonly key: string;
  state: RecordState;
  commandId?: string;
  outcome?: O;
  /** Holds a mark permit (between asking to mark and getting a slot). */
  permitHeld: boolean;
  /** Holds an in-flight slot (from its first call until it ends, across kept calls). */
  slotHeld: boolean;
  /** A call was started: the service may have the command. */
  called: boolean;
}

/** States in which a record is still in hand (not done, not given up). */
const IN_HAND: ReadonlySet<RecordState> = new Set(['queued', 'handling', 'awaiting-permit', 'marking', 'awaiting-slot', 'calling']);

/**
 * A partition claim's records in offset order, with their per-key queues and the contiguous done
 * prefix (pure bookkeeping, no decisions).
 */
export class RecordBook<O> {
  /** Insertion order is offset order (records are taken in offset order). */
  readonly #records = new Map<bigint, RecordEntry<O>>();
  /** Per key, the offsets of its records not yet ended, oldest first. */
  readonly #queues = new Map<string, bigint[]>();
  #inHand = 0;

  get(offset: bigint): RecordEntry<O> {
    const entry = this.#records.get(offset);
    if (entry === undefined) throw new Error(`the partition protocol has no record at offset ${offset}`);
    return entry;
  }

  has(offset: bigint): boolean {
    return this.#records.has(offset);
  }

  /** Registers a record; true when it is first of its key (it may be handled at once). */
  add(offset: bigint, key: string): RecordEntry<O> {
    const entry: RecordEntry<O> = { offset, key, state: 'queued', permitHeld: false, slotHeld: false, called: false };
    this.#records.set(offset, entry);
    const queue = this.#queues.get(key);
    if (queue === undefined) this.#queues.set(key, [offset]);
    else queue.push(offset);
    this.#inHand += 1;
    return entry;
  }

  isFirstOfKey(entry: RecordEntry<O>): boolean {
    return this.#queues.get(entry.key)?.[0] === entry.offset;
  }

  /** The record left the in-hand states: the next record of its key, if any, may be handled. */
  ended(entry: RecordEntry<O>): RecordEntry<O> | undefined {
    this.#inHand -= 1;
    const queue = this.#queues.get(entry.key);
    if (queue === undefined) return undefined;
    const at = queue.indexOf(entry.offset);
    if (at >= 0) queue.splice(at, 1);
    if (queue.length === 0) {
      this.#queues.delete(entry.key);
      return undefined;
    }
    return at === 0 ? this.#records.get(queue[0] as bigint) : undefined;
  }

  /**
   * The finished records (done, or published ahead) from the oldest up to the first unfinished
   * one, removed. With `skipUnfinished` (a known-bad variant, for the simulation) every finished
   * record, past unfinished ones too.
   */
  takePrefix(skipUnfinished = false): RecordEntry<O>[] {
    const taken: RecordEntry<O>[] = [];
    for (const entry of this.#records.values()) {
      if (entry.state !== 'done' && entry.state !== 'published') {
        if (skipUnfinished) continue;
        break;
      }
      taken.push(entry);
    }
    for (const entry of taken) this.#records.delete(entry.offset);
    return taken;
  }

  /** Records done (not yet published) that wait behind an unfinished one, in offset order. */
  doneAhead(): RecordEntry<O>[] {
    return this.inState('done');
  }

  /** Records taken and not yet committed (in hand, done or given up): the run-ahead count. */
  get pending(): number {
    return this.#records.size;
  }

  /** Records still in hand: the lane ends only at zero. */
  get inHand(): number {
    return this.#inHand;
  }

  inState(...states: RecordState[]): RecordEntry<O>[] {
    const wanted = new Set(states);
    return [...this.#records.values()].filter((entry) => wanted.has(entry.state));
  }

  static inHand(state: RecordState): boolean {
    return IN_HAND.has(state);
  }
}
