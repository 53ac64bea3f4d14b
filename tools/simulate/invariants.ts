import { Violation, type CommandRecord, type SimOutcome } from './model.ts';

/** A request that may have reached the service. */
export interface RequestInfo {
  readonly partition: number;
  readonly offset: number;
  readonly key: string;
  readonly commandId: string;
  readonly process: number;
  readonly time: number;
  /** Sent again by the same handler after an ambiguous answer (PROVIDER_RETRY_AMBIGUOUS: the operator's trade). */
  readonly retry: boolean;
}

const where = (r: RequestInfo): string => `p${r.partition}@${r.offset} by P${r.process} at t=${r.time}`;

/**
 * The invariants of table.ts's INVARIANTS, checked as the world changes (a violation throws at
 * once, so a schedule stops where it went wrong) and once more after healing (`final`).
 * at-most-one-send is checked with the ledger on only: with it off, a send whose result was not
 * committed when its owner died is sent again by design (docs/guarantees.md).
 */
export class Checks {
  readonly #ledger: boolean;
  /** The first request of each commandId (retries of an ambiguous answer aside). */
  readonly #firstSend = new Map<string, RequestInfo>();
  /** commandIds with any request that may have reached the service. */
  readonly #requested = new Set<string>();
  /** Per key: the highest offset requested so far, and every offset requested. */
  readonly #keys = new Map<string, { max: RequestInfo; offsets: Set<number> }>();
  readonly #results = new Map<string, number>();
  /** Per partition, the repeats answered whose offset the group has not passed yet. */
  readonly #repeats = new Map<number, SimOutcome[]>();
  /** UNKNOWN results of commands no request of which may have reached the service (marked, never called). */
  #unknownUnrequested = 0;
  /** What the deaths so far allow of those: each adds what one owner can hold marked and not yet called. */
  #unknownAllowance = 0;
  readonly #deaths: string[] = [];

  /**
   * commandIds published under more than one key of a partition: a repeat under another key is
   * recognised (no second send or result), but its keys' order relative to it is not kept
   * (docs/guarantees.md, "A repeated command record"), so key order skips them.
   */
  readonly #crossKey: ReadonlySet<string>;

  constructor(ledger: boolean, crossKey: ReadonlySet<string> = new Set()) {
    this.#ledger = ledger;
    this.#crossKey = crossKey;
  }

  /**
   * A call starts. `reached`: it may reach the service (at-most-one-send, unknown-is-honest); key
   * order counts every call, reached or not (a call that surely did not arrive still started).
   */
  request(r: RequestInfo, reached: boolean): void {
    if (reached) {
      this.#requested.add(r.commandId);
      if (!r.retry) {
        const first = this.#firstSend.get(r.commandId);
        if (first === undefined) this.#firstSend.set(r.commandId, r);
        else if (this.#ledger) throw new Violation('at-most-one-send', `${r.commandId} was requested twice: ${where(first)}, then ${where(r)}`);
      }
    }
    if (this.#crossKey.has(r.commandId)) return;
    const key = this.#keys.get(r.key);
    if (key === undefined) {
      this.#keys.set(r.key, { max: r, offsets: new Set([r.offset]) });
      return;
    }
    // A command called again (its earlier call came first, in order) is not out of order.
    if (r.offset < key.max.offset && !key.offsets.has(r.offset))
      throw new Violation('key-order', `key ${r.key}: ${r.commandId} first called (${where(r)}) after a later record of its key (${where(key.max)})`);
    key.offsets.add(r.offset);
    if (r.offset > key.max.offset) key.max = r;
  }

  /** A transaction is applied at the broker. */
  applied(partition: number, txnEpoch: number, epoch: number): void {
    if (txnEpoch !== epoch)
      throw new Violation('fenced-never-commits', `a transaction of p${partition} from producer epoch ${txnEpoch} was applied at epoch ${epoch}`);
  }

  /** A committed outcome; `marked`: a checkpoint committed earlier listed the record's mark. */
  result(partition: number, outcome: SimOutcome, marked: boolean): void {
    if (outcome.kind === 'duplicate') return;
    const count = (this.#results.get(outcome.commandId) ?? 0) + 1;
    this.#results.set(outcome.commandId, count);
    if (count > 1) throw new Violation('exactly-one-result', `${outcome.commandId} (p${partition}@${outcome.offset}) got a second result (${outcome.kind})`);
    if (outcome.kind !== 'UNKNOWN' || this.#requested.has(outcome.commandId)) return;
    if (!marked)
      throw new Violation('unknown-is-honest', `${outcome.commandId} (p${partition}@${outcome.offset}) reported UNKNOWN with no committed mark and no request`);
    this.#unknownUnrequested += 1;
  }

  /** A repeat's answer committed: the group offset must not pass it before its command has a result (`offsetCommitted`). */
  repeat(partition: number, outcome: SimOutcome): void {
    const waiting = this.#repeats.get(partition) ?? [];
    waiting.push(outcome);
    this.#repeats.set(partition, waiting);
  }

  /**
   * The partition's group offset moved to `next` (after the transaction's outcomes): every answered
   * repeat below it must have its command's result committed by now, or a later claim's window
   * takes the repeat for the original and answers the command's own record as its repeat.
   */
  offsetCommitted(partition: number, next: number): void {
    const waiting = this.#repeats.get(partition);
    if (waiting === undefined) return;
    for (const outcome of waiting.filter((o) => o.offset < next))
      if (!this.#results.has(outcome.commandId))
        throw new Violation(
          'repeat-after-result',
          `${outcome.commandId}: the offset of p${partition} passed its repeat at ${outcome.offset} (to ${next}) before the command had a result`,
        );
    this.#repeats.set(
      partition,
      waiting.filter((o) => o.offset >= next),
    );
  }

  /**
   * An owner died without handing over (a crash, a freeze, a claim that failed): its committed
   * marks of commands it had not yet called may come back as UNKNOWN. `allowance` is what it can
   * hold so (docs/guarantees.md step 5: the mark permits and the in-flight slots).
   */
  died(allowance: number, who: string): void {
    this.#unknownAllowance += allowance;
    this.#deaths.push(who);
  }

  /** UNKNOWN for commands never requested, and what the owners' deaths allowed of them. */
  get unknownBound(): { readonly unrequested: number; readonly allowance: number; readonly deaths: number } {
    return { unrequested: this.#unknownUnrequested, allowance: this.#unknownAllowance, deaths: this.#deaths.length };
  }

  /**
   * unknown-is-bounded, checked once every result is in (a new owner may report UNKNOWN before a
   * fenced zombie learns it died).
   */
  #unknownBounded(): void {
    if (this.#unknownUnrequested <= this.#unknownAllowance) return;
    throw new Violation(
      'unknown-is-bounded',
      `${this.#unknownUnrequested} UNKNOWN for commands never requested, more than the ${this.#unknownAllowance} that ${this.#deaths.length} owner deaths allow (${this.#deaths.join(', ') || 'none'})`,
    );
  }

  /**
   * After healing: every commandId answered, and nothing left for a next owner: every record below
   * the committed offset, or past it and listed as answered in the newest checkpoint (a record
   * published ahead at the end of the log keeps the offset behind it until another record comes).
   */
  final(logs: readonly (readonly CommandRecord[])[], committed: readonly number[], answered: readonly ReadonlySet<number>[]): void {
    for (const [partition, records] of logs.entries()) {
      const next = committed[partition] ?? 0;
      for (let offset = next; offset < records.length; offset++)
        if (answered[partition]?.has(offset) !== true)
          throw new Violation(
            'nothing-lost',
            `p${partition} settled with its offset committed up to ${next} of ${records.length} (offset ${offset} not answered)`,
          );
      for (const record of records)
        if (!this.#results.has(record.commandId))
          throw new Violation('nothing-lost', `${record.commandId} (p${partition}@${record.offset}) has no committed result after healing`);
    }
    this.#unknownBounded();
  }
}
