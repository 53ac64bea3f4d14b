import type { Logger } from '../../observability/logger.ts';
import type { Handover, HandoverSettlement } from './handover-record.ts';
import type { OpenMark } from '../lane/ledger-checkpoint.ts';

/** What the lookout reads with: one look at ledger partition n from an offset (what is readable now), and where to start. */
export interface HandoverSource {
  /** The first offset of the ledger partition written at or after `timestamp` (epoch ms), or its end. */
  startAt(timestamp: number): Promise<bigint>;
  /** The handovers readable now from `from` (other records skipped), and where to look next. */
  readFrom(from: bigint): Promise<{ handovers: Handover[]; next: bigint }>;
}

export interface HandoverLookoutOptions {
  readonly source: HandoverSource;
  /** The claim's in-doubt marks: only their handovers are looked for (and kept). */
  readonly marks: Iterable<OpenMark>;
  /**
   * How long its handover may still come after a mark was made, or after this claim began if that
   * is later (the longest call, and a write): a mark is stamped before its transaction, its slot
   * and perhaps a rebalance's hold, so its call may have started long after it, but never after
   * this claim's fence (the earlier owner had retired by then, or lost its lease).
   */
  readonly graceMs: number;
  /** What this process itself handed over for a mark (its own earlier claim of the partition), if it did: taken at once. */
  readonly own?: (mark: OpenMark) => HandoverSettlement | undefined;
  /** When this claim began (epoch ms): the grace counts from here at the earliest. */
  readonly claimedAt?: number;
  /** How often the ledger partition is looked at while a mark waits. */
  readonly pollMs: number;
  /**
   * How far before the oldest mark the look starts: handovers are written by the mark's own process
   * after it, so this only covers that process's clock stepping back.
   */
  readonly clockMarginMs?: number;
  /**
   * Which of these marks (their grace passed with no handover) already have their record's result
   * in the result topic, by offset: an earlier owner's transaction Kafka committed while the
   * ledger partition lost its marker (src/kafka/result-search.ts). Asked once per look for the
   * marks whose grace passed in it; one that fails counts as none found (UNKNOWN, as without it).
   */
  readonly published?: (marks: readonly OpenMark[]) => Promise<ReadonlySet<bigint>>;
  readonly now?: () => number;
  readonly log: Logger;
}

/**
 * What became of an inherited mark: its earlier owner's handover, or `published` (its result is
 * in the result topic already: nothing is published again).
 */
export type InDoubtSettlement = HandoverSettlement | { readonly kind: 'published' };

/** Fetches in one look at most (each up to the reader's fetch size). */
const MAX_FETCHES_PER_LOOK = 16;

interface Waiter {
  readonly mark: OpenMark;
  readonly resolve: (settlement: InDoubtSettlement | undefined) => void;
  readonly deadline: number;
}

/**
 * Watches one claim's ledger partition for the handovers of the marks it inherited in doubt: a
 * record whose mark an earlier owner settles (its result, or withdrawn) need not be reported
 * UNKNOWN. One look every `pollMs` while any mark waits, from just before the oldest mark onward;
 * a mark whose grace has passed gets one full look first, then `undefined` (UNKNOWN). Bounded: it
 * keeps only handovers of the claim's in-doubt marks (at most the run-ahead bound of them).
 */
export class HandoverLookout {
  readonly #o: HandoverLookoutOptions;
  readonly #now: () => number;
  /** In-doubt marks by name (`by`): the only handovers looked for. */
  readonly #marks = new Map<string, OpenMark>();
  readonly #found = new Map<string, InDoubtSettlement>();
  /**
   * Marks a transaction with its ledger marker lost answered (`OpenMark.answered`): their results
   * are looked for in the result topic first, once, before any handover is taken (the handover's
   * result would be that same result again). Emptied by that first search.
   */
  #answered: OpenMark[] = [];
  readonly #waiters = new Set<Waiter>();
  #next: bigint | undefined;
  #looking = false;

  constructor(options: HandoverLookoutOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    for (const mark of options.marks) if (mark.by !== undefined) this.#marks.set(mark.by, mark);
    if (options.published !== undefined) this.#answered = [...this.#marks.values()].filter((mark) => mark.answered === true);
  }

  /**
   * What the earlier owner handed over for `mark`: its settlement, or undefined once its grace has
   * passed without one (or the mark has no name: a version before handovers made it), or when
   * `signal` aborts.
   */
  settlementOf(mark: OpenMark, signal: AbortSignal): Promise<InDoubtSettlement | undefined> {
    const by = mark.by;
    if (by === undefined || this.#marks.get(by)?.offset !== mark.offset || signal.aborted) return Promise.resolve(undefined);
    const known = this.#known(mark);
    if (known !== undefined) return Promise.resolve(known);
    // Never called (withHangingMarks: answered without a call), with no result to look for: handled as new.
    if (mark.uncalled === true && this.#o.published === undefined) return Promise.resolve({ kind: 'withdrawn' });
    return new Promise((resolve) => {
      const waiter: Waiter = {
        mark,
        deadline: Math.max(mark.at, this.#o.claimedAt ?? 0) + this.#o.graceMs,
        resolve: (settlement) => {
          signal.removeEventListener('abort', onAbort);
          this.#waiters.delete(waiter);
          resolve(settlement);
        },
      };
      const onAbort = (): void => waiter.resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
      if (!this.#looking) void this.#look();
    });
  }

  async #look(): Promise<void> {
    this.#looking = true;
    try {
      while (this.#waiters.size > 0) {
        const lookStarted = this.#now();
        if (this.#answered.length > 0) {
          // Emptied only once the search has answered: until then no handover is taken for any mark.
          const answered = this.#answered;
          const published = await this.#published(answered);
          this.#answered = [];
          // Not found, a record answered without a call is handled as new at once (no call to wait for).
          for (const mark of answered) {
            if (mark.by === undefined) continue;
            if (published.has(mark.offset)) this.#found.set(mark.by, { kind: 'published' });
            else if (mark.uncalled === true) this.#found.set(mark.by, { kind: 'withdrawn' });
          }
        }
        try {
          await this.#readOnce();
        } catch (error) {
          this.#o.log.debug({ err: error }, 'looking for handovers failed; looking again');
        }
        // A waiter past its grace got one full look that started after its deadline: nothing came.
        const expired: Waiter[] = [];
        for (const waiter of [...this.#waiters]) {
          const found = this.#known(waiter.mark);
          if (found !== undefined) waiter.resolve(found);
          else if (lookStarted >= waiter.deadline) expired.push(waiter);
        }
        if (expired.length > 0) {
          const published = await this.#published(expired.map((waiter) => waiter.mark));
          for (const waiter of expired) waiter.resolve(published.has(waiter.mark.offset) ? { kind: 'published' } : undefined);
        }
        if (this.#waiters.size === 0) return;
        // A poll, not an event: a handover is written by another process to the ledger partition, which tells no reader when.
        await new Promise((resolve) => setTimeout(resolve, this.#o.pollMs));
      }
    } finally {
      this.#looking = false;
    }
  }

  /**
   * What is known of a mark now: found (a handover read, or the result search), else this
   * process's own handover, once no result search of `answered` marks is still due (its result
   * would be that same result again).
   */
  #known(mark: OpenMark): InDoubtSettlement | undefined {
    if (mark.by === undefined) return undefined;
    return this.#found.get(mark.by) ?? (this.#answered.length > 0 ? undefined : this.#o.own?.(mark));
  }

  /** The offsets of `marks` whose results the result topic has (`published`); none when it cannot tell. */
  async #published(marks: readonly OpenMark[]): Promise<ReadonlySet<bigint>> {
    if (this.#o.published === undefined) return new Set();
    try {
      return await this.#o.published(marks);
    } catch (error) {
      this.#o.log.warn(
        { err: error, marks: marks.length },
        'could not search the result topic for the results of commands in doubt: going on without (UNKNOWN, a handover, or handled again if never called)',
      );
      return new Set();
    }
  }

  /**
   * The in-doubt mark (of `marks`, by name) a handover settles, if any: the mark it names, at the
   * offset it names. A handover of the same record under another mark (an earlier claim's, whose
   * call this claim's mark came after) says nothing of this one.
   */
  protected settles(handover: Handover, marks: ReadonlyMap<string, OpenMark>): string | undefined {
    return marks.get(handover.by)?.offset === handover.offset ? handover.by : undefined;
  }

  async #readOnce(): Promise<void> {
    const source = this.#o.source;
    if (this.#next === undefined) {
      let oldest = Number.POSITIVE_INFINITY;
      // (A record answered without a call has no handover to look for: its `at` is only its result search's.)
      for (const mark of this.#marks.values()) if (mark.uncalled !== true) oldest = Math.min(oldest, mark.at);
      this.#next = await source.startAt((Number.isFinite(oldest) ? oldest : this.#now()) - (this.#o.clockMarginMs ?? 5_000));
    }
    // Up to what is readable now, a bounded number of fetches per look (the next look goes on from there).
    for (let fetches = 0; fetches < MAX_FETCHES_PER_LOOK; fetches++) {
      const { handovers, next } = await source.readFrom(this.#next);
      for (const handover of handovers) {
        const by = this.settles(handover, this.#marks);
        // A result found in the result topic stays found: the handover's result would be published twice.
        if (by !== undefined && this.#found.get(by)?.kind !== 'published') this.#found.set(by, handover.settlement);
      }
      const advanced = next > this.#next;
      this.#next = next;
      if (!advanced) return;
    }
  }
}
