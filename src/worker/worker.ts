import type { WorkerConfig } from '../config/index.ts';
import { startHttpServer, type HealthSource } from '../metrics/http-server.ts';
import { createMetrics, type WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { ProgressMonitor } from './health.ts';
import { refreshConsumerLag } from './lag.ts';
import { BytesInHand } from './bytes-in-hand.ts';
import { LaneRouter } from './lane-router.ts';
import { Semaphore } from './semaphore.ts';
import { RefusalReport } from './refusal-report.ts';
import { PAUSE_DESCRIPTIONS, PAUSE_REASONS, type PauseReason } from './service-gate.ts';
import type { WorkerParts } from './parts.ts';
import { connectWorker } from './wiring.ts';

export interface WorkerOptions {
  readonly config: WorkerConfig;
  readonly logger: Logger;
  readonly metrics?: WorkerMetrics;
  /** Start the /metrics, /healthz, /readyz server (default true). */
  readonly http?: boolean;
  /** How often consumer lag is re-read from the broker, so it stays true while paused or idle. @defaultValue 15000 */
  readonly lagRefreshMs?: number;
}

type State = 'new' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';

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
  #parts: WorkerParts | undefined;
  #http: { port: number; close(): Promise<void> } | undefined;
  readonly #releases: { name: string; release: () => Promise<unknown> }[] = [];
  readonly #abandon = new AbortController();
  /** One lane per partition being worked on (see LaneRouter); made once the parts are connected. */
  #lanes: LaneRouter | undefined;
  #joined = false;
  /** The first generation's partitions are claimed: from then on the process works at full speed (see health()). */
  #warm = false;
  #startedAt = 0;
  #lagTimer: NodeJS.Timeout | undefined;
  readonly #lagRefreshMs: number;
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
    this.#progress = new ProgressMonitor(options.config.healthStallMs);
    this.#refusals = new RefusalReport(this.metrics, this.#log);
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
    if (this.#state !== 'starting') throw new Error('worker stopped while starting');
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker cannot start from state ${this.#state}`);
    this.#state = 'starting';
    this.#startedAt = Date.now();
    const c = this.#config;
    try {
      if (this.#withHttp) {
        this.#http = await startHttpServer({ port: c.httpPort, registry: this.metrics.registry, health: this.health() });
        const http = this.#http;
        this.#releases.push({ name: 'http', release: () => http.close() });
      }
      this.#stillStarting();
      const parts = await connectWorker(c, this.#log, this.metrics, {
        onGateChange: (reason) => this.#onGateChange(reason),
        onHoldsChange: (snapshot) => this.#refusals.holdsChanged(snapshot),
        onRefusal: (code, scope, footprint) => this.#refusals.refusal(code, scope, footprint),
        adopt: (release, name) => this.#releases.push({ name, release }),
        handover: async (topic, partition) => (await this.#lanes?.handover(topic, partition)) ?? false,
      });
      this.#parts = parts;
      this.#stillStarting();
      const lanes = new LaneRouter({
        parts,
        config: c,
        slots: new Semaphore(c.maxInFlight),
        // Two waves of marks ahead of the calls: one keeps the pipeline full when transactions are
        // slow (measured: MAX_IN_FLIGHT alone drained at 79% of the ledger-off rate at 50 ms).
        markPermits: new Semaphore(2 * c.maxInFlight),
        bytesInHand: new BytesInHand(c.maxBytesInHand),
        metrics: this.metrics,
        log: this.#log,
        abandon: this.#abandon.signal,
        onProgress: (lane) => this.#onProgress(lane),
        onBusy: (lane, busy) => (busy ? this.#progress.begin(lane) : this.#progress.end(lane)),
      });
      this.#lanes = lanes;
      parts.assignerHints.callsUnderWay = (topic, partition) => lanes.callsUnderWay(topic, partition);
      // Released before the consumer (newest first). With the ledger on, the group is left as soon
      // as every lane has retired, so the partitions move while the calls under way finish: a new
      // owner waits for their marks to settle before it fences (partition-ownership.ts), and
      // commits them as their own results or, past that wait, UNKNOWN. With the ledger off nothing
      // tells a new owner a call is under way: every lane ends, its calls finished and committed,
      // before the group is left.
      this.#releases.push({
        name: 'partition lanes',
        release: async () => {
          parts.ownership.stop();
          const drained = lanes.drain();
          if (c.ledger.enabled) await parts.consumer.disconnect().catch((error: unknown) => this.#log.warn({ err: error }, 'leaving the group failed'));
          await drained;
        },
      });
      this.#watchConsumer(parts, lanes);
      await parts.consumer.connect();
      this.#stillStarting();
      await parts.consumer.subscribe(c.topics.commands);
      await parts.consumer.run({
        partitionsConsumedConcurrently: Math.min(parts.commandPartitions, 64),
        eachBatch: (batch) => lanes.accept(batch),
      });
      this.#stillStarting();
      this.#state = 'running';
      this.#lagTimer = setInterval(() => void this.#refreshLag(), this.#lagRefreshMs);
      this.#lagTimer.unref();
      this.#log.info(
        {
          topic: c.topics.commands,
          group: c.consumerGroup,
          partitions: parts.commandPartitions,
          maxInFlight: c.maxInFlight,
          ledger: c.ledger.enabled ? c.topics.ledger : 'off',
          httpPort: this.#http?.port,
        },
        'worker started',
      );
    } catch (error) {
      if (this.#state === 'starting') this.#state = 'failed';
      await this.#release();
      throw error;
    }
  }

  #watchConsumer(parts: WorkerParts, lanes: LaneRouter): void {
    const { consumer, ownership } = parts;
    // Partitions may stay or move: until the new assignment says which, no call starts and no claim
    // fences; marks and calls under way go on (partition-protocol.md, "Keeping a partition").
    consumer.onRebalancing(() => {
      parts.membership.rebalancing();
      ownership.rebalancing();
      lanes.holdAll();
    });
    const topic = this.#config.topics.commands;
    consumer.onGroupJoin((payload) => {
      this.#joined = true;
      const previous = ownership.assigned;
      const assigned = [...(payload.memberAssignment[topic] ?? [])];
      for (const partition of previous) {
        if (!assigned.includes(partition)) this.metrics.consumerLag.remove({ topic, partition: String(partition) });
      }
      this.#log.info({ memberId: payload.memberId, assignment: payload.memberAssignment }, 'joined consumer group');
      const next = parts.membership.joined(payload.memberId);
      parts.fetchPauses.assign(assigned);
      // Kept claims go on; every other lane retires (commands not yet sending give up unsent, calls
      // under way finish and commit; a new claim of the partition, here or elsewhere, waits for that).
      // The others are fenced and recovered at once rather than at the first batch: a previous
      // owner's open transaction blocks read_committed readers of the result topic until it is aborted.
      const kept = ownership.joined(topic, assigned, next, lanes.holding());
      lanes.afterJoin(kept, new Error('a new group generation'));
      if (kept.size > 0) this.#log.info({ kept: [...kept].map((claim) => claim.partition) }, 'partitions kept across the rebalance');
      if (!this.#warm) this.#warmWhenClaimed(ownership, topic, assigned);
    });
    consumer.onHeartbeat(() => ownership.confirm());
    consumer.onStop(() => (this.#joined = false));
    consumer.onCrash((payload) => {
      this.#joined = false;
      this.#log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
      if (!payload.restart && this.#state === 'running') {
        this.#state = 'failed';
        void this.#release().finally(() => this.#done.reject(payload.error));
      }
    });
  }

  /**
   * Ready only once the first generation's partitions are claimed (fenced, ledger and dedup window
   * read): a join alone left a fresh pod's first records waiting for those reads after /readyz,
   * and a rolling update SIGTERMing the next old pod meanwhile. The claims are the ones joined()
   * started (claim() returns them); a failed one is retried at its partition's first batch, so it
   * does not hold readiness. A newer generation before they settle waits again, with its own.
   */
  #warmWhenClaimed(ownership: WorkerParts['ownership'], topic: string, partitions: readonly number[]): void {
    const generation = ownership.generation;
    void Promise.allSettled(partitions.map((partition) => ownership.claim(topic, partition))).then(() => {
      if (ownership.generation !== generation || this.#warm) return;
      this.#warm = true;
      this.#log.info({ partitions: partitions.length, msSinceStart: Date.now() - this.#startedAt }, 'ready: first partitions claimed');
    });
  }

  #refreshLag(): Promise<void> {
    const parts = this.#parts;
    if (this.#state !== 'running' || parts === undefined) return Promise.resolve();
    return refreshConsumerLag({
      admin: parts.admin,
      group: this.#config.consumerGroup,
      topic: this.#config.topics.commands,
      assigned: parts.ownership.assigned,
      metrics: this.metrics,
      log: this.#log,
    });
  }

  #onGateChange(reason: PauseReason | undefined): void {
    for (const r of PAUSE_REASONS) this.metrics.paused.set({ reason: r }, r === reason ? 1 : 0);
    if (reason !== undefined) {
      this.#log.warn({ reason }, PAUSE_DESCRIPTIONS[reason]);
      // Held commands cannot finish while wrapping up: let them go, unsent and uncommitted.
      if (this.#state === 'stopping') this.#abandon.abort();
    } else {
      this.#log.info('sends succeed again: consumption resumed');
      this.#parts?.fetchPauses.setGateClosed(false);
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
        if (!this.#joined) return { ok: false, detail: 'not ready: joining consumer group' };
        return this.#warm ? { ok: true, detail: 'ready: group joined, partitions claimed' } : { ok: false, detail: 'not ready: claiming partitions' };
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
    for (const { name, release } of this.#releases.splice(0).reverse()) {
      try {
        await release();
      } catch (error) {
        this.#log.warn({ err: error }, `closing ${name} failed`);
      }
    }
  }
}
