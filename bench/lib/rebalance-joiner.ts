/**
 * Two rebalances under load for the memory check (issue 23, item 6: peak RSS "at full throughput
 * and through a rebalance"): when a share of the drain is done, a second worker joins the group,
 * and once it is ready it is stopped (SIGTERM) and leaves. The worker measured gives up partitions,
 * claims them back (fence, ledger checkpoint, dedup window read again), with its backlog flowing.
 */
import { waitReady } from '../pipelines/worker.ts';
import { stopChild, type Child } from './proc.ts';

export interface RebalanceFigures {
  /** When the joiner was started, was ready, and had exited (epoch ms). */
  readonly startedAt: number;
  readonly readyAt: number;
  readonly leftAt: number;
}

/** Starts the joiner when `due()` first holds (call `tick` from the run's poll); `finished` waits for it to be gone. */
export class RebalanceJoiner {
  readonly #due: () => boolean;
  readonly #start: () => Promise<{ child: Child; httpPort: number }>;
  #run: Promise<RebalanceFigures> | undefined;

  constructor(due: () => boolean, start: () => Promise<{ child: Child; httpPort: number }>) {
    this.#due = due;
    this.#start = start;
  }

  tick(): void {
    if (this.#run === undefined && this.#due()) this.#run = this.#joinAndLeave();
  }

  async #joinAndLeave(): Promise<RebalanceFigures> {
    const startedAt = Date.now();
    const { child, httpPort } = await this.#start();
    try {
      await waitReady(httpPort, child, 120_000);
      const readyAt = Date.now();
      await stopChild(child, 60_000);
      return { startedAt, readyAt, leftAt: Date.now() };
    } finally {
      await stopChild(child, 5_000);
    }
  }

  /** Undefined when it never started (the drain ended first). */
  async finished(): Promise<RebalanceFigures | undefined> {
    return this.#run;
  }
}
