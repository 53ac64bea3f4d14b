import type { HealthSource } from '../metrics/http-server.ts';

/**
 * Liveness from real progress, not a timer: a partition with work in hand (its lane has records
 * dispatched and not yet committed) must dispatch a record or commit a transaction at least every
 * `stallMs`; a worker with nothing to do is live. A wedged lane — a send that never returns, a
 * commit that never ends — fails liveness, so the kubelet restarts the pod and the partition
 * moves on. The lanes report through the `Worker` (`onBusy`, `onProgress`).
 */
export class ProgressMonitor {
  readonly #stallMs: number;
  readonly #now: () => number;
  /** Partitions with records in hand, and when each last made progress. */
  readonly #busy = new Map<string, number>();
  #last: number;

  constructor(stallMs: number, now: () => number = Date.now) {
    this.#stallMs = stallMs;
    this.#now = now;
    this.#last = now();
  }

  begin(lane: string): void {
    this.#busy.set(lane, this.#now());
  }

  progress(lane: string): void {
    const at = this.#now();
    this.#last = at;
    if (this.#busy.has(lane)) this.#busy.set(lane, at);
  }

  end(lane: string): void {
    this.#busy.delete(lane);
    this.#last = this.#now();
  }

  get lastProgress(): number {
    return this.#last;
  }

  /** The longest time a busy partition has gone without progress, or undefined when none is busy. */
  stalledFor(): { lane: string; ms: number } | undefined {
    let worst: { lane: string; ms: number } | undefined;
    const now = this.#now();
    for (const [lane, at] of this.#busy) if (worst === undefined || now - at > worst.ms) worst = { lane, ms: now - at };
    return worst;
  }

  /** Every busy partition and how long it has gone without progress. */
  waiting(): { lane: string; ms: number }[] {
    const now = this.#now();
    return [...this.#busy].map(([lane, at]) => ({ lane, ms: now - at }));
  }

  live(paused: string | undefined): { ok: boolean; detail: string } {
    if (paused !== undefined) return { ok: true, detail: `paused: ${paused}` };
    const stalled = this.stalledFor();
    if (stalled === undefined) return { ok: true, detail: 'ok: no batch in hand' };
    return stalled.ms <= this.#stallMs
      ? { ok: true, detail: `ok: slowest partition progressed ${stalled.ms} ms ago` }
      : { ok: false, detail: `stuck: ${stalled.lane} made no progress for ${stalled.ms} ms` };
  }
}

export type { HealthSource };
