import type { Admin, Consumer, Kafka } from 'kafkajs';
import type { WorkerConfig } from '../config/index.ts';
import { createKafka } from '../kafka/client.ts';
import { ensureTopics } from '../kafka/topics.ts';
import { TransactionalProducers } from '../kafka/transactional-producers.ts';
import { startHttpServer, type HealthSource } from '../metrics/http-server.ts';
import { createMetrics, type WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { createProviderClient } from '../provider/client.ts';
import type { ProviderClient } from '../provider/types.ts';
import { Codec, createRegistry } from '../schema/codec.ts';
import { GuardedSender } from './guarded-sender.ts';
import { processBatch } from './partition-batch.ts';
import { RateLimiter } from './rate-limiter.ts';
import { Semaphore } from './semaphore.ts';
import { OutageCounter, ServiceGate, type PauseReason } from './service-gate.ts';
import { FencedError } from './transaction-committer.ts';

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
 * The worker: consumes commands, sends them, publishes one result per command in the same
 * transaction as the consumed offsets. `start()` resolves once the consumer runs; `stop()` is the
 * graceful half of a two-stage shutdown (stop fetching, finish what was dispatched, commit, leave
 * the group); `kill()` is the forced half. `done` settles when the worker has stopped, and rejects
 * if it died on its own (a non-restartable consumer crash).
 */
export class Worker {
  readonly metrics: WorkerMetrics;
  readonly #config: WorkerConfig;
  readonly #log: Logger;
  readonly #withHttp: boolean;
  #state: State = 'new';
  #kafka!: Kafka;
  #admin!: Admin;
  #consumer!: Consumer;
  #producers!: TransactionalProducers;
  #client!: ProviderClient;
  #gate!: ServiceGate;
  #http: { port: number; close(): Promise<void> } | undefined;
  readonly #abandon = new AbortController();
  /** The last batch of each partition: a partition's batches never overlap, whatever kafkajs does across generations. */
  readonly #lanes = new Map<string, Promise<unknown>>();
  /** Committed offset per partition, fetched after this generation's producer fenced older owners. */
  #fenced = new Map<string, Promise<bigint>>();
  #joined = false;
  /** Partitions of the command topic assigned to this process in the current generation. */
  #assigned: number[] = [];
  #lagTimer: NodeJS.Timeout | undefined;
  readonly #lagRefreshMs: number;
  #lastProgress = Date.now();
  #stopping: Promise<void> | undefined;
  readonly #done: { promise: Promise<void>; resolve: () => void; reject: (error: unknown) => void };

  constructor(options: WorkerOptions) {
    this.#config = options.config;
    this.#log = options.logger;
    this.metrics = options.metrics ?? createMetrics();
    this.#withHttp = options.http ?? true;
    this.#lagRefreshMs = options.lagRefreshMs ?? 15_000;
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
    return this.#gate?.reason;
  }

  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`worker cannot start from state ${this.#state}`);
    this.#state = 'starting';
    const c = this.#config;
    try {
      if (this.#withHttp) this.#http = await startHttpServer({ port: c.httpPort, registry: this.metrics.registry, health: this.health() });
      this.#kafka = createKafka(c.kafka, this.#log);
      this.#admin = this.#kafka.admin();
      await this.#admin.connect();
      const { partitions, created } = await ensureTopics(this.#admin, {
        topics: [c.topics.commands, c.topics.results, c.topics.deadLetter],
        create: c.topics.create,
        partitions: c.topics.partitions,
        replicationFactor: c.topics.replicationFactor,
      });
      if (created.length > 0) this.#log.info({ topics: created }, 'created missing topics');
      const registry = createRegistry(c.registry.url, c.registry.auth);
      const codec = await Codec.create(registry, { results: c.topics.results, deadLetter: c.topics.deadLetter });
      this.#log.info({ resultSchemaId: codec.resultSchemaId, deadLetterSchemaId: codec.deadLetterSchemaId }, 'registered result and dead-letter schemas');

      this.#client = this.#createClient();
      this.#gate = new ServiceGate({
        backoff: {
          insufficient_funds: { initialMs: c.funds.probeInitialMs, maxMs: c.funds.probeMaxMs },
          circuit_open: { initialMs: c.breaker.probeInitialMs, maxMs: c.breaker.probeMaxMs },
        },
        onChange: (reason) => this.#onGateChange(reason),
        onBlock: () => this.#consumer?.pause([{ topic: c.topics.commands }]),
        // The gate needs a command to probe with: let the next one in.
        onProbeWanted: () => this.#consumer?.resume([{ topic: c.topics.commands }]),
      });
      const sender = new GuardedSender({
        client: this.#client,
        gate: this.#gate,
        outages: new OutageCounter(c.breaker.failureThreshold),
        rateLimiter: new RateLimiter(c.rateLimitPerSecond),
        fundsPolicy: c.funds.policy,
      });
      this.#producers = new TransactionalProducers(this.#kafka, c.transactionalIdPrefix);
      const slots = new Semaphore(c.maxInFlight);
      const commandPartitions = partitions.get(c.topics.commands) ?? 1;

      this.#consumer = this.#kafka.consumer({
        groupId: c.consumerGroup,
        sessionTimeout: c.sessionTimeoutMs,
        rebalanceTimeout: 60_000,
        heartbeatInterval: Math.min(3_000, Math.floor(c.sessionTimeoutMs / 3)),
        maxWaitTimeInMs: 1_000,
        maxBytesPerPartition: c.fetch.maxBytesPerPartition,
        maxBytes: c.fetch.maxBytes,
        readUncommitted: false,
        retry: { retries: 10 },
      });
      this.#watchConsumer();
      await this.#consumer.connect();
      await this.#consumer.subscribe({ topic: c.topics.commands, fromBeginning: true });
      await this.#consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: Math.min(commandPartitions, 64),
        eachBatch: (payload) => this.#inLane(`${payload.batch.topic}:${payload.batch.partition}`, async () => {
          const { topic, partition } = payload.batch;
          const committedOffset = await this.#fence(topic, partition);
          this.#log.debug({ topic, partition, committedOffset: committedOffset.toString(), firstOffset: payload.batch.firstOffset() }, 'batch');
          try {
            await processBatch(payload, {
              deps: { codec, sender, policy: c.validation, onRegistryRetry: (error) => this.#log.warn({ err: error }, 'schema registry unavailable; retrying') },
              producers: this.#producers,
              slots,
              metrics: this.metrics,
              log: this.#log,
              target: { consumerGroup: c.consumerGroup, resultTopic: c.topics.results, deadLetterTopic: c.topics.deadLetter },
              commitIntervalMs: c.commitIntervalMs,
              committedOffset,
              fetchCommittedOffset: (t, p) => this.#committedOffset(t, p),
              wrappingUp: () => this.#state !== 'running',
              abandon: this.#abandon.signal,
              onProgress: () => this.#progress(),
            });
          } catch (error) {
            // Start this partition afresh (new producer, re-read committed offset) next time.
            this.#fenced.delete(`${topic}:${partition}`);
            if (error instanceof FencedError) {
              this.#log.warn({ topic, partition }, error.message);
              return;
            }
            throw error;
          }
        }),
      });
      this.#state = 'running';
      this.#lagTimer = setInterval(() => void this.#refreshLag(), this.#lagRefreshMs);
      this.#lagTimer.unref();
      this.#log.info({ topic: c.topics.commands, group: c.consumerGroup, partitions: commandPartitions, maxInFlight: c.maxInFlight, httpPort: this.#http?.port }, 'worker started');
    } catch (error) {
      this.#state = 'failed';
      await this.#release();
      throw error;
    }
  }

  #createClient(): ProviderClient {
    const p = this.#config.provider;
    return createProviderClient({
      baseUrl: p.baseUrl,
      accessKeyId: p.accessKeyId,
      accessKeySecret: p.accessKeySecret,
      connectTimeoutMs: p.connectTimeoutMs,
      responseTimeoutMs: p.responseTimeoutMs,
      retry: p.retry,
      maxSockets: this.#config.maxInFlight,
      onAttempt: (info) => {
        this.metrics.providerRequests.inc({ operation: info.operation, outcome: info.outcome });
        this.metrics.providerLatency.observe({ operation: info.operation, outcome: info.outcome }, info.durationMs / 1000);
      },
      onRetry: (info) => {
        this.metrics.retries.inc({ operation: info.operation, class: info.failureClass });
        this.#log.debug({ operation: info.operation, attempt: info.attempt, failureClass: info.failureClass, code: info.code, delayMs: info.delayMs }, 'retrying provider call');
      },
    });
  }

  /**
   * First batch of a partition in this generation: initialise its transactional producer (which
   * fences a previous owner and completes or aborts its open transaction), then read the committed
   * offset. Records below it were already answered by that previous owner.
   */
  #fence(topic: string, partition: number): Promise<bigint> {
    const key = `${topic}:${partition}`;
    let pending = this.#fenced.get(key);
    if (pending === undefined) {
      pending = (async () => {
        await this.#producers.discard(topic, partition);
        await this.#producers.forPartition(topic, partition);
        return this.#committedOffset(topic, partition);
      })();
      this.#fenced.set(key, pending);
      pending.catch(() => this.#fenced.delete(key));
    }
    return pending;
  }

  #inLane(key: string, work: () => Promise<void>): Promise<void> {
    const run = (this.#lanes.get(key) ?? Promise.resolve()).then(work);
    const settled = run.catch(() => undefined);
    this.#lanes.set(key, settled);
    void settled.then(() => {
      if (this.#lanes.get(key) === settled) this.#lanes.delete(key);
    });
    return run;
  }

  async #committedOffset(topic: string, partition: number): Promise<bigint> {
    const offsets = await this.#admin.fetchOffsets({ groupId: this.#config.consumerGroup, topics: [topic] });
    const committed = offsets[0]?.partitions.find((p) => p.partition === partition)?.offset ?? '-1';
    return committed === '-1' ? 0n : BigInt(committed);
  }

  #watchConsumer(): void {
    const { events } = this.#consumer;
    this.#consumer.on(events.GROUP_JOIN, ({ payload }) => {
      this.#joined = true;
      // A new generation: every partition is fenced again before its first batch.
      this.#fenced = new Map();
      this.#progress();
      this.#log.info({ memberId: payload.memberId, assignment: payload.memberAssignment }, 'joined consumer group');
      // Fence at once rather than at the first batch: a previous owner's open transaction blocks
      // read_committed readers of the result topic (the last stable offset) until it is aborted,
      // and a partition with no new commands would otherwise keep it open for the transaction timeout.
      const topic = this.#config.topics.commands;
      const previous = this.#assigned;
      this.#assigned = [...(payload.memberAssignment[topic] ?? [])];
      for (const partition of previous) {
        if (!this.#assigned.includes(partition)) this.metrics.consumerLag.remove({ topic, partition: String(partition) });
      }
      for (const partition of this.#assigned) {
        this.#fence(topic, partition).catch((error: unknown) => this.#log.warn({ err: error, topic, partition }, 'fencing the previous owner failed; retrying at the first batch'));
      }
    });
    this.#consumer.on(events.FETCH, () => this.#progress());
    this.#consumer.on(events.START_BATCH_PROCESS, () => this.#progress());
    this.#consumer.on(events.STOP, () => (this.#joined = false));
    this.#consumer.on(events.CRASH, ({ payload }) => {
      this.#joined = false;
      this.#log.error({ err: payload.error, restart: payload.restart }, 'consumer crashed');
      if (!payload.restart && this.#state === 'running') {
        this.#state = 'failed';
        void this.#release().finally(() => this.#done.reject(payload.error));
      }
    });
  }

  /**
   * Lag of this process's partitions from the broker (high watermark − committed offset). Commits
   * update it as they happen; this keeps it true while consumption is paused or there is nothing
   * to commit, which is when an operator most needs it.
   */
  async #refreshLag(): Promise<void> {
    if (this.#state !== 'running' || this.#assigned.length === 0) return;
    const topic = this.#config.topics.commands;
    try {
      const [ends, committed] = await Promise.all([this.#admin.fetchTopicOffsets(topic), this.#admin.fetchOffsets({ groupId: this.#config.consumerGroup, topics: [topic] })]);
      const committedBy = new Map((committed[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
      for (const end of ends) {
        if (!this.#assigned.includes(end.partition)) continue;
        const position = committedBy.get(end.partition) ?? '-1';
        const from = position === '-1' ? BigInt(end.low) : BigInt(position);
        const lag = BigInt(end.high) - from;
        this.metrics.consumerLag.set({ topic, partition: String(end.partition) }, Number(lag > 0n ? lag : 0n));
      }
    } catch (error) {
      this.#log.debug({ err: error }, 'reading consumer lag failed');
    }
  }

  #onGateChange(reason: PauseReason | undefined): void {
    const topics = [{ topic: this.#config.topics.commands }];
    for (const r of ['insufficient_funds', 'circuit_open'] as const) this.metrics.paused.set({ reason: r }, r === reason ? 1 : 0);
    if (reason !== undefined) {
      this.#log.warn({ reason }, reason === 'insufficient_funds' ? 'account balance exhausted (105400): consumption paused; probing until a send succeeds' : 'messaging service unavailable: circuit open, consumption paused; probing');
      // Held commands cannot finish while wrapping up: let them go, unsent and uncommitted.
      if (this.#state === 'stopping') this.#abandon.abort();
    } else {
      this.#log.info('sends succeed again: consumption resumed');
      this.#consumer?.resume(topics);
    }
  }

  #progress(): void {
    this.#lastProgress = Date.now();
    this.metrics.lastProgress.set(this.#lastProgress / 1000);
  }

  health(): HealthSource {
    return {
      live: () => {
        if (this.#state === 'failed') return { ok: false, detail: 'consumer failed' };
        if (this.#gate?.reason !== undefined) return { ok: true, detail: `paused: ${this.#gate.reason}` };
        const idleMs = Date.now() - this.#lastProgress;
        return idleMs <= this.#config.healthStallMs ? { ok: true, detail: `ok: last progress ${idleMs} ms ago` } : { ok: false, detail: `stuck: no progress for ${idleMs} ms` };
      },
      ready: () => {
        if (this.#state !== 'running') return { ok: false, detail: `not ready: ${this.#state}` };
        return this.#joined ? { ok: true, detail: 'ready: group joined' } : { ok: false, detail: 'not ready: joining consumer group' };
      },
    };
  }

  /** Graceful stop: no new records; dispatched ones finish and are committed; the group is left. */
  stop(): Promise<void> {
    if (this.#stopping !== undefined) return this.#stopping;
    this.#stopping = (async () => {
      if (this.#state === 'new' || this.#state === 'stopped') {
        this.#state = 'stopped';
        return;
      }
      this.#state = 'stopping';
      this.metrics.paused.set({ reason: 'shutdown' }, 1);
      this.#log.info('stopping: finishing dispatched commands, committing, leaving the group');
      if (this.#gate?.reason !== undefined) this.#abandon.abort();
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

  async #release(): Promise<void> {
    if (this.#lagTimer !== undefined) clearInterval(this.#lagTimer);
    const steps: [string, () => Promise<unknown>][] = [
      ['consumer', async () => this.#consumer?.disconnect()],
      ['producers', async () => this.#producers?.closeAll()],
      ['admin', async () => this.#admin?.disconnect()],
      ['provider client', async () => this.#client?.close()],
      ['gate', async () => this.#gate?.close()],
      ['http', async () => this.#http?.close()],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
      } catch (error) {
        this.#log.warn({ err: error }, `closing ${name} failed`);
      }
    }
  }
}
