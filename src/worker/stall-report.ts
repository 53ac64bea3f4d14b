/**
 * When a partition that waits gets a log line (pure): a partition with records in hand and no
 * progress (a record dispatched or a transaction committed) for a second is logged with what it
 * waits on, then again each time its wait doubles (2, 4, 8 s …), so a long wait costs a few lines,
 * not one a second. Progress starts its count afresh.
 */
export const FIRST_STALL_REPORT_MS = 1_000;

export class StallReport {
  /** Per partition: the wait at which its next line is due. */
  readonly #nextAt = new Map<string, number>();
  /** Per partition: the wait seen last (a shorter one means it progressed meanwhile). */
  readonly #lastSeen = new Map<string, number>();

  /** The partitions to log now, of those waiting (`ms` without progress each); forgets those no longer waiting. */
  due(waiting: readonly { readonly lane: string; readonly ms: number }[]): { lane: string; ms: number }[] {
    const now = new Set<string>();
    const out: { lane: string; ms: number }[] = [];
    for (const { lane, ms } of waiting) {
      now.add(lane);
      if (ms < (this.#lastSeen.get(lane) ?? 0)) this.#nextAt.delete(lane);
      this.#lastSeen.set(lane, ms);
      const next = this.#nextAt.get(lane) ?? FIRST_STALL_REPORT_MS;
      if (ms < next) continue;
      out.push({ lane, ms });
      let after = next;
      while (after <= ms) after *= 2;
      this.#nextAt.set(lane, after);
    }
    for (const lane of [...this.#lastSeen.keys()])
      if (!now.has(lane)) {
        this.#lastSeen.delete(lane);
        this.#nextAt.delete(lane);
      }
    return out;
  }
}
