/**
 * A copy of the sandbox's request log kept by polling `/_sandbox/requests` during a run, so
 * nothing is lost to the sandbox's ring buffer and every request keeps its arrival time and
 * correlation id (= commandId) for the chaos run's checks.
 */
import type { RequestLogSummary } from '../../src/sandbox/state.ts';
import { sleep } from './proc.ts';
import type { SandboxProcess } from './sandbox.ts';

export interface LoggedRequest {
  /** The sandbox's arrival order (assigned when the request arrived). */
  readonly seq: number;
  readonly receivedAt: number;
  readonly correlationId: string | undefined;
  readonly httpStatus: number;
  readonly answerCode: string | undefined;
  /** Processed and charged by the sandbox: a real send. */
  readonly accepted: boolean;
}

/**
 * An entry is logged when its answer goes out, so entries can appear out of seq order; each poll
 * asks again from the oldest seq still missing, unless that gap is older than `gapGiveUpMs`
 * (a request the sandbox never logged: counted in `abandonedGaps`).
 */
export class RequestLogCollector {
  readonly bySeq = new Map<number, LoggedRequest>();
  abandonedGaps = 0;
  readonly #sandbox: SandboxProcess;
  readonly #intervalMs: number;
  readonly #gapGiveUpMs: number;
  /** Seqs below this are settled (seen or given up). */
  #settledBelow = 1;
  #maxSeen = 0;
  /** When each open gap was first noticed. */
  readonly #gapsSince = new Map<number, number>();
  #running = false;
  #loop: Promise<void> = Promise.resolve();
  pollErrors = 0;

  constructor(sandbox: SandboxProcess, options: { intervalMs?: number; gapGiveUpMs?: number } = {}) {
    this.#sandbox = sandbox;
    this.#intervalMs = options.intervalMs ?? 1_000;
    this.#gapGiveUpMs = options.gapGiveUpMs ?? 15_000;
  }

  start(): void {
    this.#running = true;
    this.#loop = (async () => {
      while (this.#running) {
        await this.poll().catch(() => {
          this.pollErrors += 1;
        });
        await sleep(this.#intervalMs);
      }
    })();
  }

  /** Stops polling after one last poll. */
  async stop(): Promise<void> {
    this.#running = false;
    await this.#loop;
    await this.poll();
  }

  async poll(): Promise<void> {
    const entries: RequestLogSummary[] = await this.#sandbox.requestSummaries(this.#settledBelow - 1);
    for (const e of entries) {
      if (this.bySeq.has(e.seq)) continue;
      this.bySeq.set(e.seq, {
        seq: e.seq,
        receivedAt: e.receivedAt,
        correlationId: e.correlationId,
        httpStatus: e.httpStatus,
        answerCode: e.answerCode,
        accepted: e.accepted,
      });
      if (e.seq > this.#maxSeen) this.#maxSeen = e.seq;
    }
    const now = Date.now();
    while (this.#settledBelow <= this.#maxSeen) {
      const seq = this.#settledBelow;
      if (this.bySeq.has(seq)) {
        this.#gapsSince.delete(seq);
        this.#settledBelow += 1;
        continue;
      }
      const since = this.#gapsSince.get(seq) ?? now;
      this.#gapsSince.set(seq, since);
      if (now - since < this.#gapGiveUpMs) break;
      this.#gapsSince.delete(seq);
      this.abandonedGaps += 1;
      this.#settledBelow += 1;
    }
  }

  /** Every request, in arrival (seq) order. */
  all(): LoggedRequest[] {
    return [...this.bySeq.values()].sort((a, b) => a.seq - b.seq);
  }
}
