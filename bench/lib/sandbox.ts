/**
 * The messaging-service sandbox in its own process (`sms-worker sandbox`), steered over its
 * /_sandbox/ admin routes, so its CPU is charged to nobody in the measurement.
 */
import type { RequestLogSummary, RequestLogView, SandboxStats } from '../../src/sandbox/state.ts';
import type { FaultUpdate } from '../../src/sandbox/admin.ts';
import type { LatencySpec } from '../../src/sandbox/faults.ts';
import { eventually, PollAbort } from '../../tools/poll.ts';
import { CLI_MAIN, startNode, stopChild, type Child } from './proc.ts';

export class SandboxProcess {
  readonly url: string;
  readonly child: Child;

  private constructor(child: Child, url: string) {
    this.child = child;
    this.url = url;
  }

  static async start(args: readonly string[]): Promise<SandboxProcess> {
    const child = startNode(CLI_MAIN, ['sandbox', '--port', '0', ...args]);
    const url = await eventually(
      () => {
        if (child.process.exitCode !== null) throw new PollAbort(`sandbox exited at start-up:\n${child.output()}`);
        const line = child.lines.find((l) => l.includes('sandbox listening on'));
        return line === undefined ? undefined : /listening on (http:\/\/\S+)/.exec(line)?.[1];
      },
      30_000,
      () => `the sandbox to start:\n${child.output()}`,
    );
    return new SandboxProcess(child, url);
  }

  async #admin<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.url}/_sandbox/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    if (!response.ok) throw new Error(`sandbox admin ${method} ${path}: HTTP ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  async faults(update: FaultUpdate): Promise<void> {
    await this.#admin('POST', 'faults', update);
  }

  /** 0 means no added latency. */
  async setLatency(ms: number): Promise<void> {
    await this.faults({ latency: ms > 0 ? { kind: 'fixed', ms } : { kind: 'none' } });
  }

  /** Any latency distribution, e.g. log-normal `{ kind: 'lognormal', medianMs: 50, p99Ms: 500 }`. */
  async setLatencySpec(latency: LatencySpec): Promise<void> {
    await this.faults({ latency });
  }

  stats(): Promise<SandboxStats> {
    return this.#admin('GET', 'stats');
  }

  /** Correlation ids (command ids) with at least `min` accepted sends. */
  async correlations(min = 2): Promise<Record<string, number>> {
    return (await this.#admin<{ counts: Record<string, number> }>('GET', `correlations?min=${min}`)).counts;
  }

  /**
   * Logged requests with seq > `since`, oldest first (at most `limit`, the newest kept). An entry
   * is logged when its answer goes out, so a slow request can appear after a higher seq.
   */
  async requests(since: number, limit = 100_000): Promise<RequestLogView[]> {
    return (await this.#admin<{ entries: RequestLogView[] }>('GET', `requests?since=${since}&limit=${limit}`)).entries;
  }

  /** The same without the bodies: cheap enough to poll while measuring (see RequestLogCollector). */
  async requestSummaries(since: number, limit = 100_000): Promise<RequestLogSummary[]> {
    return (await this.#admin<{ entries: RequestLogSummary[] }>('GET', `requests?since=${since}&limit=${limit}&bodies=false`)).entries;
  }

  /** Sets the account balance (a decimal string): "0" makes every send a 105400 InsufficientFunds. */
  async setBalance(balance: string): Promise<void> {
    await this.#admin('POST', 'balance', { balance });
  }

  async reset(): Promise<void> {
    await this.#admin('POST', 'reset');
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 5_000);
  }
}
