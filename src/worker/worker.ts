import type { WorkerConfig } from '../config/index.ts';
import { startHttpServer, type HealthSource } from '../metrics/http-server.ts';
import { createMetrics, type WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { ProgressMonitor } from './health.ts';
import { StallReport } from './stall-report.ts';
import { BytesInHand } from './source/bytes-in-hand.ts';
import { SendPermits } from './priority/send-permits.ts';
import type { Priority } from './priority/priority.ts';
import { SourcePipeline } from './source/source-pipeline.ts';
import { RefusalReport } from './send/refusal-report.ts';
import { PAUSE_DESCRIPTIONS, PAUSE_REASONS, type PauseReason } from './send/service-gate.ts';
import type { SharedParts } from './parts.ts';
import { connectWorker } from './wiring.ts';

export interface WorkerOptions {
  readonly config: WorkerConfig;
  readonly logger: Logger;
  readonly metrics?: WorkerMetrics;
  /** Start the /metrics, /healthz, /readyz server (default true). */
  readonly http?: boolean;
  /** How often consumer lag is re-read from the broker, so it stays true while paused or idle. @defaultValue 15000 */
  readonly lagRefreshMs?: number;
  /** How often a start still under way says so, with its step, at warn. @defaultValue 15000 */
  readonly startWarnIntervalMs?: number;
}

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

/** How often busy partitions are looked at for a wait worth a log line (stall-report.ts). */
const STALL_CHECK_MS = 250;

/** A stop arrived while the worker was starting: start() gives up (with what it was waiting on as `cause`). */
class StoppedWhileStarting extends Error {
  constructor(cause?: unknown) {
    super('worker stopped while starting', cause === undefined ? undefined : { cause });
  }
}

/**
 * The worker's lifecycle: consumes commands, sends them, publishes one result per command in the
 * same transaction as the consumed offsets. `start()` resolves once the consumer runs; `stop()` is
 * the graceful half of a two-stage shutdown (stop fetching, finish what was dispatched, commit,
 * leave the group); `kill()` is the forced half. `done` settles when the worker has stopped, and
 * rejects if it died on its own (a non-restartable consumer crash). A `stop()` during `start()`
 * wins: start gives up at its next step and releases what it built.
 */
export class Worker {
  readonly metrics: WorkerMetrics;
  readonly #config: WorkerConfig;
  readonly #log: Logger;
  readonly #withHttp: boolean;
  #state: State = 'new';
  /** The shared parts (gate, spend caps), as the first source's parts carry them. */
  #parts: SharedParts | undefined;
  #http: { port: number; close(): Promise<void> } | undefined;
  readonly #releases: { name: string; release: () => Promise<unknown> }[] = [];
  readonly #abandon = new AbortController();
  /** Aborted by a stop while starting: the start's retry waits (the registry's) give up at once. */
  readonly #startAbandoned = new AbortController();
  /** One per command source (topic at a priority), highest priority first; made once the parts are connected. */
  readonly #pipelines: SourcePipeline[] = [];
  /** A consumer crashed for good while the worker was still starting (see #stillStarting). */
  #startFailure: Error | undefined;
  #lagTimer: NodeJS.Timeout | undefined;
  #stallTimer: NodeJS.Timeout | undefined;
  readonly #stalls = new StallReport();
  readonly #lagRefreshMs: number;
  readonly #startWarnIntervalMs: number;
  /** What the start is doing now (the `still starting` warning names it). */
  #startStep = 'opening the HTTP port';
  readonly #progress: ProgressMonitor;
  readonly #refusals: RefusalReport;
  #stopping: Promise<void> | undefined;
  readonly #done: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void };

  constructor(options: WorkerOptions) {
    this.#config = options.config;
    this.#log = options.logger;
    this.metrics = options.metrics ?? createMetrics();
    this.#withHttp = options.http ?? true;
    this.#lagRefreshMs = options.lagRefreshMs ?? 15_000;
    this.#startWarnIntervalMs = options.startWarnIntervalMs ?? 15_000;
    this.#progress = new ProgressMonitor(options.config.healthStallMs);
    this.#refusals = new RefusalReport(
      this.metrics,
      this.#log,
      options.config.accounts.map((a) => a.name),
    );
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => undefined);
    this.#done = { promise, resolve, reject };
  }

  get done(): Promise<void> {
    return this.#done.promise;
  }

  get httpPort(): number | undefined {
    return this.#http?.port;
  }

  get pauseReason(): PauseReason | undefined {
    return this.#parts?.gate.reason;
  }

  /** Why all sending waits, if it does: a gate reason, or a spend cap (commands wait for the window, not stuck). */
  #pausedFor(): string | undefined {
    return this.#parts?.gate.reason ?? (this.#parts?.spend?.paused === true ? 'spend_cap' : undefined);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Throws when a stop arrived while starting, so start() releases what it built and gives up. */
  #stillStarting(): void {
    // A consumer that already runs (the first source's, while the next one connects) may have crashed for good.
    if (this.#startFailure !== undefined) throw this.#startFailure;
    if (this.#state !== 'starting') throw new StoppedWhileStarting();
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker cannot start from state ${this.#state}`);
    this.#state = 'starting';
    const c = this.#config;
    // A start can wait long without an error of its own: a group join the broker holds until every
    // member has rejoined (up to the rebalance timeout, 60 s; kafkajs's REBALANCE_IN_PROGRESS retries
    // log at info), a broker or registry that accepts connections and does not answer. An unready pod
    // then says where it waits (found by the chaos run: a worker that never became ready logged nothing).
    const startedAt = Date.now();
    const watch = setInterval(
      () => this.#log.warn({ step: this.#startStep, seconds: Math.round((Date.now() - startedAt) / 1000) }, 'still starting'),
      this.#startWarnIntervalMs,
    );
    watch.unref();
    try {
      if (this.#withHttp) {
        this.#http = await startHttpServer({ port: c.httpPort, registry: this.metrics.registry, health: this.health() });
        const http = this.#http;
        this.#releases.push({ name: 'http', release: () => http.close() });
      }
      this.#stillStarting();
      // connectWorker names each step it waits on (start-steps.ts), the first before it yields.
      const sources = await connectWorker(c, this.#log, this.metrics, {
        step: (step) => (this.#startStep = step),
        startAbandoned: this.#startAbandoned.signal,
        onGateChange: (reason) => this.#onGateChange(reason),
        onHoldsChange: (snapshot, account) => this.#refusals.holdsChanged(snapshot, account),
        onRefusal: (code, scope, footprint, account) => this.#refusals.refusal(code, scope, footprint, account),
        adopt: (release, name) => this.#releases.push({ name, release }),
        handover: async (topic, partition) => (await this.#pipelines.find((p) => p.topic === topic)?.lanes.handover(topic, partition)) ?? false,
      });
      this.#parts = sources[0];
      this.#stillStarting();
      // Shared by the sources, high priority served first (docs/priority.md); the bytes in hand are
      // each source's own, so a bulk backlog never stops the codes from being fetched.
      // Marks ahead of the free slots are paced to what the slots need (mark-pacing.ts): a crash
      // leaves few commands marked and never called.
      const permits = new SendPermits({
        maxInFlight: c.maxInFlight,
        priorities: c.sources.length === 1 ? undefined : { normalMinShare: c.normalMinShare },
        marksAhead: c.marksAhead === 'auto' ? undefined : c.marksAhead,
        onMarksAhead: (ahead) => this.metrics.marksAhead.set(ahead),
      });
      for (const parts of sources) {
        const { priority } = parts.source;
        const pools = permits.for(priority);
        this.#pipelines.push(
          new SourcePipeline({
            parts,
            config: c,
            lanes: {
              slots: pools.slots,
              markPermits: pools.markPermits,
              bytesInHand: new BytesInHand(bytesInHandOf(c, priority)),
              metrics: this.metrics,
              log: this.#log,
              abandon: this.#abandon.signal,
              onProgress: (lane) => this.#onProgress(lane),
              onBusy: (lane, busy) => (busy ? this.#progress.begin(lane) : this.#progress.end(lane)),
            },
            metrics: this.metrics,
            log: this.#log,
            onFatal: (error) => this.#failed(error),
          }),
        );
      }
      // Released before the consumers (newest first), every source at once.
      this.#releases.push({ name: 'partition lanes', release: () => Promise.all(this.#pipelines.map((p) => p.release())) });
      for (const pipeline of this.#pipelines) {
        this.#startStep = `joining the consumer group of ${pipeline.topic}`;
        await pipeline.start(() => this.#stillStarting());
        this.#stillStarting();
      }
      this.#state = 'running';
      this.#lagTimer = setInterval(() => void this.#refreshLag(), this.#lagRefreshMs);
      this.#lagTimer.unref();
      this.#stallTimer = setInterval(() => this.#reportStalls(), STALL_CHECK_MS);
      this.#stallTimer.unref();
      this.#log.info(
        {
          sources: sources.map(({ source, commandPartitions }) => ({ ...source, partitions: commandPartitions })),
          maxInFlight: c.maxInFlight,
          ledger: c.ledger.enabled ? c.sources.map((source) => source.ledgerTopic) : 'off',
          httpPort: this.#http?.port,
        },
        'worker started',
      );
    } catch (error) {
      const stopped = this.#state !== 'starting';
      if (!stopped) this.#state = 'failed';
      await this.#release();
      // A stop that ended one of the start's waits (the registry's retry) is the stop's doing, not the registry's.
      if (stopped && this.#startAbandoned.signal.aborted && !(error instanceof StoppedWhileStarting)) throw new StoppedWhileStarting(error);
      throw error;
    } finally {
      clearInterval(watch);
    }
  }

  /** A consumer crashed and will not restart: the worker stops, and `done` rejects. */
  #failed(error: unknown): void {
    if (this.#state === 'starting') {
      // Start gives up at its next step (#stillStarting) and releases what it built.
      this.#startFailure ??= error instanceof Error ? error : new Error(String(error));
      return;
    }
    if (this.#state !== 'running') return;
    this.#state = 'failed';
    void this.#release().finally(() => this.#done.reject(error));
  }

  async #refreshLag(): Promise<void> {
    if (this.#state !== 'running') return;
    await Promise.all(this.#pipelines.map((p) => p.refreshLag()));
  }

  #onGateChange(reason: PauseReason | undefined): void {
    for (const r of PAUSE_REASONS) this.metrics.paused.set({ reason: r }, r === reason ? 1 : 0);
    if (reason !== undefined) {
      // With other accounts, consumption goes on: their commands, and those failing over, keep sending.
      if (this.#config.accounts.length > 1) this.#log.warn({ reason, account: 'default' }, `account default paused (${reason}): other accounts keep sending`);
      else this.#log.warn({ reason }, PAUSE_DESCRIPTIONS[reason]);
      // Held commands cannot finish while wrapping up: let them go, unsent and uncommitted.
      if (this.#state === 'stopping') this.#abandon.abort();
    } else {
      this.#log.info('sends succeed again: consumption resumed');
      // Every source's fetching: the gate closed them all (wiring.ts, onBlock).
      for (const pipeline of this.#pipelines) pipeline.parts.fetchPauses.setGateClosed(false);
    }
  }

  /** A partition with records in hand and no progress for a second or more: what it waits on (stall-report.ts says how often). */
  #reportStalls(): void {
    if (this.#state !== 'running') return;
    for (const { lane, ms } of this.#stalls.due(this.#progress.waiting())) {
      const waitingOn = this.#pipelines.map((p) => p.lanes.waitingOn(lane)).find((w) => w !== undefined);
      this.#log.info(
        { partition: lane, waitedMs: ms, ...(waitingOn ?? { lane: 'none (its claim is being made)' }) },
        'a partition has made no progress for a second or more',
      );
    }
  }

  #onProgress(lane: string): void {
    this.#progress.progress(lane);
    this.metrics.lastProgress.set(this.#progress.lastProgress / 1000);
  }

  health(): HealthSource {
    return {
      live: () => (this.#state === 'failed' ? { ok: false, detail: 'consumer failed' } : this.#progress.live(this.#pausedFor())),
      ready: () => {
        if (this.#state !== 'running') return { ok: false, detail: `not ready: ${this.#state}` };
        const joining = this.#pipelines.find((p) => !p.joined);
        if (joining !== undefined) return { ok: false, detail: `not ready: joining consumer group (${joining.topic})` };
        const claiming = this.#pipelines.find((p) => !p.warm);
        if (claiming !== undefined) return { ok: false, detail: `not ready: claiming partitions (${claiming.topic})` };
        return { ok: true, detail: 'ready: group joined, partitions claimed' };
      },
    };
  }

  /** Graceful stop: no new records; dispatched ones finish and are committed; the group is left. */
  stop(): Promise<void> {
    if (this.#stopping !== undefined) return this.#stopping;
    this.#stopping = (async () => {
      if (this.#state === 'new' || this.#state === 'stopped') {
        this.#state = 'stopped';
        this.#done.resolve();
        return;
      }
      const wasStarting = this.#state === 'starting';
      this.#state = 'stopping';
      if (wasStarting) this.#startAbandoned.abort();
      this.metrics.paused.set({ reason: 'shutdown' }, 1);
      this.#log.info(
        wasStarting
          ? 'stopping while starting: start gives up and releases what it built'
          : 'stopping: finishing dispatched commands, committing, leaving the group',
      );
      if (this.#pausedFor() !== undefined) this.#abandon.abort();
      await this.#release();
      this.#state = 'stopped';
      this.#log.info('stopped');
      this.#done.resolve();
    })();
    return this.#stopping;
  }

  /** Forced stop: commands still waiting give up unsent; nothing more is committed. */
  kill(): void {
    this.#abandon.abort();
  }

  /** Releases what was built, newest first (the consumer before the producers it commits with). */
  async #release(): Promise<void> {
    if (this.#lagTimer !== undefined) clearInterval(this.#lagTimer);
    if (this.#stallTimer !== undefined) clearInterval(this.#stallTimer);
    for (const { name, release } of this.#releases.splice(0).reverse()) {
      try {
        await release();
      } catch (error) {
        this.#log.warn({ err: error }, `closing ${name} failed`);
      }
    }
  }
}

/**
 * MAX_BYTES_IN_HAND is the process's: with a priority topic it gets a quarter (codes are small and
 * few in hand; their own budget means a bulk backlog never stops them being fetched) and the
 * normal topic the rest, so the bound on memory stays the one configured.
 */
function bytesInHandOf(c: WorkerConfig, priority: Priority): number {
  if (c.sources.length === 1) return c.maxBytesInHand;
  return priority === 'high' ? Math.floor(c.maxBytesInHand / 4) : c.maxBytesInHand - Math.floor(c.maxBytesInHand / 4);
}
