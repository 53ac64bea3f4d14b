import { moveRecord } from './assertions.ts';
import type { RecordEvent, RecordState } from './table.ts';

/** What the machine knows of one record it took. */
export interface RecordEntry<O> {
  readonly offset: bigint;
  readonly key: string;
  state: RecordState;
  commandId?: string;
  outcome?: O;
  /** The account its next mark names (wantSend's): where its call goes. */
  account?: string;
  /** Holds a mark permit (between asking to mark and getting a slot). */
  permitHeld: boolean;
  /** Holds an in-flight slot (from its first call until it ends, across kept calls). */
  slotHeld: boolean;
  /** An earlier call of this record may have reached the service (it was kept after an ambiguous answer): its mark stays whatever later calls do. */
  mayHaveReached: boolean;
  /** A repeat of an earlier record's commandId: it has no result of its own, so it is never listed as the command's answer. */
  repeat: boolean;
  /**
   * A repeat identified after a *later* record with its commandId (another key, decoded first):
   * that record carries the command's result, so the offset must not pass this one before it.
   */
  repeatOf?: bigint;
}

function finished<O>(entry: RecordEntry<O>): boolean {
  return entry.state === 'done' || entry.state === 'published';
}

/** States in which a record is still in hand (not done, not given up). */
const IN_HAND: ReadonlySet<RecordState> = new Set(['queued', 'handling', 'awaiting-permit', 'marking', 'awaiting-slot', 'held', 'calling']);

/**
 * A partition claim's records in offset order, with their per-key queues and the contiguous done
 * prefix (pure bookkeeping, no decisions).
 */
export class RecordBook<O> {
  /**
   * Whether a record this claim has not taken has its outcome committed: an earlier owner answered
   * it ahead (the checkpoint listed it). A repeat's carrier outside the book is either that, or a
   * record not taken yet (an inherited mark in doubt), whose result is still to come.
   */
  readonly #answeredEarlier: (offset: bigint) => boolean;
  constructor(answeredEarlier: (offset: bigint) => boolean = () => false) {
    this.#answeredEarlier = answeredEarlier;
  }
  /** Insertion order is offset order (records are taken in offset order). */
  readonly #records = new Map<bigint, RecordEntry<O>>();
  /** Per key, the offsets of its records not yet ended, oldest first. */
  readonly #queues = new Map<string, bigint[]>();
  #inHand = 0;
  /** Records moved or looked up (to be changed) since the last takeTouched: what the machine's next check looks at. */
  #touched = new Set<RecordEntry<O>>();

  get(offset: bigint): RecordEntry<O> {
    const entry = this.#records.get(offset);
    if (entry === undefined) throw new Error(`the partition protocol has no record at offset ${offset}`);
    this.#touched.add(entry);
    return entry;
  }

  /** Moves a record as table.ts allows (assertions.ts, moveRecord), to be checked at the next drain. */
  move(entry: RecordEntry<O>, event: RecordEvent, to: RecordState): void {
    moveRecord(entry, event, to);
    this.#touched.add(entry);
  }

  /** The record (if in the book) is checked at the next drain: something it depends on changed. */
  touch(offset: bigint): void {
    const entry = this.#records.get(offset);
    if (entry !== undefined) this.#touched.add(entry);
  }

  /** The records moved or looked up since the last call. */
  takeTouched(): RecordEntry<O>[] {
    const touched = [...this.#touched];
    this.#touched.clear();
    return touched;
  }

  stateOf(offset: bigint): RecordState | undefined {
    return this.#records.get(offset)?.state;
  }

  has(offset: bigint): boolean {
    return this.#records.has(offset);
  }

  /** Registers a record; true when it is first of its key (it may be handled at once). */
  add(offset: bigint, key: string): RecordEntry<O> {
    const entry: RecordEntry<O> = { offset, key, state: 'queued', permitHeld: false, slotHeld: false, mayHaveReached: false, repeat: false };
    this.#records.set(offset, entry);
    this.#touched.add(entry);
    const queue = this.#queues.get(key);
    if (queue === undefined) this.#queues.set(key, [offset]);
    else queue.push(offset);
    this.#inHand += 1;
    return entry;
  }

  isFirstOfKey(entry: { readonly key: string; readonly offset: bigint }): boolean {
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
   * one, removed; cut short before a repeat whose carrier's result would not be committed with it.
   */
  takePrefix(aheadPublished = false): RecordEntry<O>[] {
    const candidates = this.finishedPrefix();
    // A repeat whose carrier's result would not be committed with (or before) it cuts the prefix
    // there; a cut can strand a carrier an earlier repeat counted on, so look again until stable.
    let end = candidates.length;
    for (let cut = true; cut;) {
      cut = false;
      for (let i = 0; i < end; i++) {
        const carrier = candidates[i]?.repeatOf;
        if (carrier !== undefined && !this.#carrierSettles(carrier, candidates[end - 1]?.offset ?? -1n, aheadPublished)) {
          end = i;
          cut = true;
          break;
        }
      }
    }
    const taken = candidates.slice(0, end);
    for (const entry of taken) this.#records.delete(entry.offset);
    return taken;
  }

  /** The finished records from the oldest up to the first unfinished one. */
  protected finishedPrefix(): RecordEntry<O>[] {
    const prefix: RecordEntry<O>[] = [];
    for (const entry of this.#records.values()) {
      if (!finished(entry)) break;
      prefix.push(entry);
    }
    return prefix;
  }

  /**
   * Whether the record carrying a repeat's result (at a later offset) has it committed by the time
   * the offset passes the repeat: committed already, or done and published in the same transaction
   * (ahead of the offset when the ledger is on; else within the same prefix, up to `last`).
   */
  #carrierSettles(carrierOffset: bigint, last: bigint, aheadPublished: boolean): boolean {
    if (this.carrierCommitted(carrierOffset)) return true;
    return this.#records.get(carrierOffset)?.state === 'done' && (aheadPublished || carrierOffset <= last);
  }

  /**
   * Whether a repeat's carrier has its result committed already: published ahead, or answered by an
   * earlier owner. Outside the book it may also be a record not taken yet (an inherited mark in
   * doubt, whose outcome is still to come). Taken for settled, the offset passed the repeat; the
   * carrier's mark could then be withdrawn, and a later claim's window would take the repeat for
   * the original and answer the carrier as its repeat: no result at all (the simulation, seed 9405).
   */
  protected carrierCommitted(carrierOffset: bigint): boolean {
    const carrier = this.#records.get(carrierOffset);
    if (carrier === undefined) return this.#answeredEarlier(carrierOffset);
    return carrier.state === 'published';
  }

  /**
   * Records done (not yet published) that wait behind an unfinished one, in offset order; a repeat
   * only once its carrier's result is committed (listed as answered, it would let a later owner pass
   * it while the carrier has no result). A repeat is listed without its commandId (transaction-plan.ts),
   * so a later owner never takes it for its command's original.
   */
  doneAhead(): RecordEntry<O>[] {
    return this.inState('done').filter((entry) => entry.repeatOf === undefined || this.carrierCommitted(entry.repeatOf));
  }

  /**
   * The highest offset of a repeat's carrier not taken yet (an inherited mark in doubt after the
   * repeat), or -1: the offset cannot pass the repeat before that record is taken and answered, so
   * the claim takes records up to it even past the run-ahead bound (else a bound lower than the
   * earlier owner's would wedge the partition).
   */
  untakenCarrier(): bigint {
    let highest = -1n;
    for (const entry of this.#records.values()) {
      const carrier = entry.repeatOf;
      if (carrier !== undefined && carrier > highest && !this.#records.has(carrier) && !this.#answeredEarlier(carrier)) highest = carrier;
    }
    return highest;
  }

  /** Records taken and not yet committed (in hand, done or given up): the run-ahead count. */
  get pending(): number {
    return this.#records.size;
  }

  /** Records still in hand: the lane ends only at zero. */
  get inHand(): number {
    return this.#inHand;
  }

  /** Every record in the book, in offset order. */
  entries(): Iterable<RecordEntry<O>> {
    return this.#records.values();
  }

  inState(...states: RecordState[]): RecordEntry<O>[] {
    const wanted = new Set(states);
    return [...this.#records.values()].filter((entry) => wanted.has(entry.state));
  }

  static inHand(state: RecordState): boolean {
    return IN_HAND.has(state);
  }
}
