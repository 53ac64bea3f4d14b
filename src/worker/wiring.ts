import type { WorkerConfig } from '../config/index.ts';
import { createKafka } from '../kafka/client.ts';
import { checkBrokerCertificate } from '../kafka/tls-check.ts';
import { START_STEPS } from './start-steps.ts';
import { PartitionReader } from '../kafka/partition-reader.ts';
import { ensureTopics, maxMessageBytes } from '../kafka/topics.ts';

/** The admin client, as the topic helpers take it. */
type TopicAdmin = Parameters<typeof ensureTopics>[0];
import { TransactionalProducers, transactionalKafka } from '../kafka/transactional-producers.ts';
import { KafkaKeyedProducer } from '../kafka/keyed-producer.ts';
import { HANDOVER_SEND_TIMEOUT_MS } from './ownership/handovers.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { CommandTracer } from '../observability/command-span.ts';
import { startTracing } from '../observability/tracing.ts';
import { createProviderClient } from '../provider/client.ts';
import type { AccountSettings } from '../accounts/accounts.ts';
import { MAX_VELOCITY_TENANTS, TenantLimits } from './tenants/tenant-limits.ts';
import type { ProviderClient } from '../provider/types.ts';
import { Codec, createRegistry, withRegistryRetry } from '../schema/codec.ts';
import { SmsWorkerError } from '../errors.ts';
import { retry } from '../retry.ts';
import { warmSchemas } from './source/warm-up.ts';
import type { FetchPauses } from './source/fetch-pauses.ts';
import type { SharedParts, WorkerParts } from './parts.ts';
import { connectSource } from './source/source-wiring.ts';
import type { DestinationGuard } from './guard/destination-guard.ts';
import type { SpendHolds } from './guard/spend-holds.ts';
import { RateLimiter } from './send/rate-limiter.ts';
import { rateShare } from './send/rate-share.ts';
import { OutageCounter, PAUSE_REASONS, ServiceGate, type PauseReason } from './send/service-gate.ts';
import { RefusalHolds, type HoldsSnapshot } from './send/refusal-holds.ts';
import type { RefusalScope } from './send/refusal-scopes.ts';
import type { SendFootprint } from '../contracts/validate.ts';
import { guardsOf } from './guard/guard-wiring.ts';
import { velocityReport } from './guard/velocity-report.ts';

/** Settings of the ledger topic when the worker creates it: compacted, small segments so compaction keeps up. */
// min.compaction.lag.ms: a handover (handover-record.ts) stays readable for a minute whatever the
// segments do; its next owner needs it for HANDOVER_GRACE (a response timeout and a commit) at most.
const LEDGER_TOPIC_CONFIG = {
  'cleanup.policy': 'compact',
  'segment.ms': '600000',
  'min.cleanable.dirty.ratio': '0.1',
  'delete.retention.ms': '3600000',
  'min.compaction.lag.ms': '60000',
};
/** Headroom below max.message.bytes for the record batch's own header. */
const BATCH_HEADROOM = 16_384;

export interface WiringHooks {
  readonly onGateChange: (reason: PauseReason | undefined) => void;
  /** The paused routes or the cost ceiling changed (metrics). */
  readonly onHoldsChange: (snapshot: HoldsSnapshot, account: string) => void;
  /** The service refused a send; `scope` is what was paused in answer (metrics, logs). */
  readonly onRefusal: (code: string, scope: RefusalScope, footprint: SendFootprint, account: string) => void;
  /** Builds on what was made so far, so a failed start releases it (see Worker.start). */
  readonly adopt: (release: () => Promise<unknown>, name: string) => void;
  /** Waits for this process's earlier lane of a partition to end before it is claimed again (see LaneRouter). */
  readonly handover: (topic: string, partition: number) => Promise<boolean>;
  /** Names the step the start waits on from now (the `still starting` warning says it). */
  readonly step: (step: string) => void;
  /** Aborted by a stop while starting: the start's retry waits end at once. */
  readonly startAbandoned: AbortSignal;
}

/** Checks or creates the topics (each command topic's ledger with its partition count) and reads the record size limit. */
async function setUpTopics(admin: TopicAdmin, c: WorkerConfig, log: Logger): Promise<{ partitions: Map<string, number>; maxRecordBytes: number }> {
  const commandTopics = c.sources.map((s) => s.topic);
  const { partitions, created, singleReplica } = await ensureTopics(admin, {
    topics: [...commandTopics, c.topics.results, c.topics.deadLetter],
    create: c.topics.create,
    partitions: c.topics.partitions,
    replicationFactor: c.topics.replicationFactor,
  });
  const counts = new Map(commandTopics.map((t) => [t, partitions.get(t) ?? 1]));
  const ledgers = c.ledger.enabled ? c.sources.map((s) => s.ledgerTopic) : [];
  for (const { topic, ledgerTopic } of c.ledger.enabled ? c.sources : []) {
    // Partition n of the ledger belongs to partition n of its command topic.
    const needed = counts.get(topic) ?? 1;
    const ledger = await ensureTopics(admin, {
      topics: [ledgerTopic],
      create: c.topics.create,
      partitions: needed,
      replicationFactor: c.topics.replicationFactor,
      configs: { [ledgerTopic]: LEDGER_TOPIC_CONFIG },
    });
    created.push(...ledger.created);
    singleReplica.push(...ledger.singleReplica);
    const ledgerPartitions = ledger.partitions.get(ledgerTopic) ?? 0;
    if (ledgerPartitions < needed) {
      throw new SmsWorkerError(
        'LEDGER_TOPIC_TOO_SMALL',
        `the ledger topic ${ledgerTopic} has ${ledgerPartitions} partitions; it needs at least as many as ${topic} (${needed}): partition n of the ledger belongs to command partition n`,
      );
    }
  }
  if (created.length > 0) log.info({ topics: created }, 'created missing topics');
  if (singleReplica.length > 0)
    log.warn(
      { topics: singleReplica },
      'topics with a partition of a single replica: a broker that crashes can lose Kafka transaction markers for them, and a command may then get a second result (docs/operations.md); use a replication factor of 3 in production',
    );
  const maxRecordBytes = (await maxMessageBytes(admin, [c.topics.results, c.topics.deadLetter, ...ledgers])) - BATCH_HEADROOM;
  return { partitions: counts, maxRecordBytes };
}

/**
 * The composition root: connects to Kafka and the registry, checks or creates the topics,
 * registers the schemas, and builds the collaborators with their settings from the config: the
 * shared ones once, and for each command source (a topic at a priority) its own consumer,
 * claims and sender (source-wiring.ts). Returns the parts of each source, highest priority first.
 */
export async function connectWorker(config: WorkerConfig, log: Logger, metrics: WorkerMetrics, hooks: WiringHooks): Promise<WorkerParts[]> {
  const c = config;
  const { step } = hooks;
  // A broker certificate the client refuses fails start-up now, not after kafkajs's retries.
  // (Without TLS it returns at once, as tracing does when off: no warning can name their steps then.)
  step(START_STEPS.certificate);
  await checkBrokerCertificate(c.kafka);
  // Adopted first, so released last: the spans of the final commits are exported at shutdown.
  step(START_STEPS.tracing);
  const tracing = await startTracing(c.tracing, log, 'sms-worker');
  if (tracing !== undefined) hooks.adopt(() => tracing.shutdown(), 'tracing');
  const tracer =
    tracing === undefined
      ? undefined
      : new CommandTracer({
          tracer: tracing.tracer,
          consumerGroup: c.consumerGroup,
          providerBaseUrl: c.provider.baseUrl,
          signed: c.provider.accessKeySecret !== undefined,
        });
  const kafka = createKafka(c.kafka, log);
  const admin = kafka.admin();
  hooks.adopt(() => admin.disconnect(), 'admin');
  step(START_STEPS.admin);
  await admin.connect();
  step(START_STEPS.topics);
  // Replicas start together: a topic another replica just created may not be in every broker's
  // metadata yet ("This server does not host this topic-partition"). Those steps are retried.
  const { partitions, maxRecordBytes } = await retry(() => setUpTopics(admin, c, log), {
    attempts: 6,
    backoff: { initialMs: 250, maxMs: 4_000, jitter: 0.5 },
    retryable: isTransientKafkaError,
    onRetry: (error) => log.warn({ err: error }, 'topic set-up failed; retrying'),
  });

  step(START_STEPS.schemas);
  const registryRetry = {
    signal: hooks.startAbandoned,
    onRetry: (error: unknown, retryNumber: number, delayMs: number) =>
      log.warn({ err: error, retryNumber, delayMs }, 'schema registry call failed while starting; retrying'),
  };
  const registry = createRegistry(c.registry.url, c.registry.auth);
  const codec = await withRegistryRetry(() => Codec.create(registry, { results: c.topics.results, deadLetter: c.topics.deadLetter }), registryRetry);
  log.info({ resultSchemaId: codec.resultSchemaId, deadLetterSchemaId: codec.deadLetterSchemaId }, 'registered result and dead-letter schemas');
  // Before the group is joined (Worker.start joins after this returns): the first records must not wait for the registry.
  for (const { topic } of c.sources) {
    step(START_STEPS.commandSchema(topic));
    const warm = await withRegistryRetry(() => warmSchemas(codec, topic), registryRetry);
    log.info({ topic, commandSchemaId: warm.commandSchemaId, ms: warm.ms }, 'warmed up: schemas resolved');
  }

  const pausesRef: { current: FetchPauses[] } = { current: [] };
  const rateLimiter = new RateLimiter(c.rateLimitPerSecond, undefined, c.normalMinShare);
  const { destinations, spend } = guardsOf(c.guard, metrics, log);
  if (spend !== undefined) hooks.adopt(async () => spend.close(), 'spend caps');
  // One client, gate, set of refusal holds and breaker per account (src/accounts/): a pause or a
  // refusal on one account holds only what goes through it. Fetching pauses when every account's
  // gate is closed (with one account: when its gate is), and resumes when any wants a probe.
  const gates: ServiceGate[] = [];
  const accountSenders = c.accounts.map((account, index) => {
    const first = index === 0;
    const client = countInFlight(createClient(config, account, metrics, log), metrics);
    hooks.adopt(async () => client.close(), first ? 'provider client' : `provider client (${account.name})`);
    // The first account's pauses are the Worker's (its pause reason, gauge and log); the others' are logged here.
    const onChange = first
      ? hooks.onGateChange
      : (reason: PauseReason | undefined): void => {
          if (reason === undefined) pausesRef.current.forEach((p) => p.setGateClosed(false));
          log.info(
            { account: account.name, reason: reason ?? null },
            reason === undefined ? `account ${account.name}: sends succeed again` : `account ${account.name} paused (${reason})`,
          );
        };
    const gate = new ServiceGate({
      backoff: {
        insufficient_funds: { initialMs: c.funds.probeInitialMs, maxMs: c.funds.probeMaxMs },
        circuit_open: { initialMs: c.breaker.probeInitialMs, maxMs: c.breaker.probeMaxMs },
      },
      onChange: (reason) => {
        for (const r of PAUSE_REASONS) metrics.accountPaused.set({ account: account.name, reason: r }, r === reason ? 1 : 0);
        onChange(reason);
      },
      onBlock: () => {
        if (gates.every((g) => g.reason !== undefined)) pausesRef.current.forEach((p) => p.setGateClosed(true));
      },
      // The gate needs a command to probe with: let the next one in.
      onProbeWanted: () => pausesRef.current.forEach((p) => p.setGateClosed(false)),
    });
    gates.push(gate);
    hooks.adopt(async () => gate.close(), first ? 'gate' : `gate (${account.name})`);
    const holds = new RefusalHolds({ settings: c.refusals, onChange: (snapshot) => hooks.onHoldsChange(snapshot, account.name) });
    hooks.adopt(async () => holds.close(), first ? 'refusal holds' : `refusal holds (${account.name})`);
    const options = {
      client,
      gate,
      holds,
      onRefusal: (code: string, scope: RefusalScope, footprint: SendFootprint) => hooks.onRefusal(code, scope, footprint, account.name),
      outages: new OutageCounter(c.breaker.failureThreshold),
      destinations,
      spend,
      fundsPolicy: c.funds.policy,
      fundsPauseMaxMs: c.funds.pauseMaxMs,
      // Why the service made the worker pause (its code, status and message; never a secret).
      onPause: (reason: PauseReason, why: string) =>
        log.warn(
          { reason, why, account: account.name },
          first ? `sending paused (${reason}): ${why}` : `sending through account ${account.name} paused (${reason}): ${why}`,
        ),
    };
    // ACCOUNT_<NAME>_RATE_LIMIT_PER_SECOND (PROVIDER_RATE_LIMIT_PER_SECOND for `default`): shared like RATE_LIMIT_PER_SECOND.
    const rate = new RateLimiter(account.ratePerSecond, undefined, c.normalMinShare);
    return { name: account.name, client, gate, options, rate, ratePerSecond: account.ratePerSecond };
  });
  const { client, gate } = accountSenders[0] as (typeof accountSenders)[number];
  // TENANT_LIMITS: one set of limits per tenant, shared by the sources like the global ones.
  // A tenant's velocity refusals are counted and logged as the global ones (naming the tenant);
  // the blocked-keys gauge stays the global guard's.
  const tenantVelocity = velocityReport(metrics, log);
  const tenantLimits = new TenantLimits(c.tenants, {
    velocity: c.guard.velocity,
    velocityObserver: { onRefusals: tenantVelocity.onRefusals, onBlocked: () => undefined },
    onVelocityUntracked: (tenant) =>
      log.warn(
        { tenant },
        `tenant ${tenant} and the tenants after it get the global velocity limits alone: at most ${MAX_VELOCITY_TENANTS} tenants under "*" in TENANT_LIMITS have velocity counts of their own`,
      ),
    onCapPause: (tenant) => {
      metrics.tenantCapPauses.inc({ tenant: metrics.tenantLabel(tenant) });
      log.warn({ tenant }, `tenant ${tenant} reached its spend cap (TENANT_LIMITS): its commands wait for room; other tenants keep sending`);
    },
  });
  const tenants = tenantLimits.enabled ? tenantLimits : undefined;
  if (tenants !== undefined) hooks.adopt(async () => tenants.close(), 'tenant limits');
  // Each command partition's ledger partition (ledger on): a claim reads it to its end after fencing.
  const ledgerOf = new Map(c.ledger.enabled ? c.sources.map((s) => [s.topic, s.ledgerTopic] as const) : []);
  const producers = new TransactionalProducers(
    transactionalKafka(c.kafka, log),
    c.transactionalIdPrefix,
    (topic, partition) => {
      const ledger = ledgerOf.get(topic);
      return ledger === undefined ? undefined : { topic: ledger, partition };
    },
    // What every partition's transactions write, and whose offsets they commit: each producer
    // connected ahead learns where they are when it connects.
    { topics: [...ledgerOf.values(), c.topics.results, c.topics.deadLetter], groupIds: c.sources.map((s) => s.consumerGroup) },
  );
  hooks.adopt(() => producers.closeAll(), 'producers');
  const reader = new PartitionReader(kafka);
  hooks.adopt(() => reader.close(), 'partition reader');
  // Connected now: a retiring claim's handovers are written while its partition's next owner waits.
  const handoverProducer = c.ledger.enabled ? new KafkaKeyedProducer(kafka, { sendTimeoutMs: HANDOVER_SEND_TIMEOUT_MS }) : undefined;
  if (handoverProducer !== undefined) {
    step(START_STEPS.handoverProducer);
    await handoverProducer.connect();
    hooks.adopt(() => handoverProducer.disconnect(), 'handover producer');
  }
  const shared: SharedParts = { admin, codec, client, gate, spend, producers, handoverProducer, reader, maxRecordBytes, tracer };

  const sources = c.sources.map((source) =>
    connectSource(source, { kafka, admin, config: c, shared, accountSenders, tenants, rateLimiter, partitions, handover: hooks.handover, log, metrics }),
  );
  for (const parts of sources) hooks.adopt(() => parts.consumer.disconnect(), `consumer of ${parts.source.topic}`);
  // Before the group is joined, like the schemas: a claim's reads walked once, their clients connected.
  for (const parts of sources) {
    step(START_STEPS.claimReads(parts.source.topic));
    log.info({ topic: parts.source.topic, stepMs: await parts.warmClaimReads() }, 'warmed up: claim reads');
  }
  pausesRef.current = sources.map((parts) => parts.fetchPauses);
  const rates = [
    { name: undefined, limiter: rateLimiter, limitPerSecond: c.rateLimitPerSecond },
    ...accountSenders.map((a) => ({ name: a.name, limiter: a.rate, limitPerSecond: a.ratePerSecond })),
  ].filter((r) => r.limiter.enabled);
  shareLimits(sources, { rates, destinations, spend, tenants }, metrics, log);
  return sources;
}

/** A deployment-wide rate limit and this process's limiter of it: RATE_LIMIT_PER_SECOND (no name) or an account's. */
interface SharedRate {
  readonly name: string | undefined;
  readonly limiter: RateLimiter;
  readonly limitPerSecond: number;
}

/**
 * RATE_LIMIT_PER_SECOND, the accounts' own rate limits, the velocity limits and the spend caps are
 * the deployment's: this process takes the share of the command partitions it owns, over every
 * source, anew at every rebalance of either group. No token is granted to a source while its group
 * rebalances (rate-limiter.ts says why).
 */
function shareLimits(
  sources: readonly WorkerParts[],
  limits: { rates: readonly SharedRate[]; destinations: DestinationGuard | undefined; spend: SpendHolds | undefined; tenants: TenantLimits | undefined },
  metrics: WorkerMetrics,
  log: Logger,
): void {
  const { rates, destinations, spend, tenants } = limits;
  const owned = new Map<string, number>();
  const total = sources.reduce((sum, parts) => sum + parts.commandPartitions, 0);
  // Nothing before the first share is known: a fresh process would otherwise start with a full
  // second of the whole deployment's limit on top of what the others send.
  for (const { limiter } of rates) limiter.pause();
  for (const { source, consumer } of sources) {
    if (rates.length > 0) consumer.onRebalancing(() => rates.forEach(({ limiter }) => limiter.pause(source.priority)));
    consumer.onGroupJoin(({ memberAssignment }) => {
      owned.set(source.topic, memberAssignment[source.topic]?.length ?? 0);
      const ownedPartitions = [...owned.values()].reduce((a, b) => a + b, 0);
      destinations?.setShare(ownedPartitions, total);
      spend?.setShare(ownedPartitions, total);
      tenants?.setShare(ownedPartitions, total);
      for (const { name, limiter, limitPerSecond } of rates) {
        limiter.setRate(rateShare({ limitPerSecond, ownedPartitions, totalPartitions: total }));
        limiter.resume(source.priority);
        if (name === undefined) metrics.rateLimitShare.set(limiter.perSecond);
        log.info(
          { topic: source.topic, ownedPartitions, totalPartitions: total, perSecond: limiter.perSecond, ...(name !== undefined && { account: name }) },
          name === undefined ? 'rate limit share' : `rate limit share of account ${name}`,
        );
      }
    });
  }
}

function createClient(config: WorkerConfig, account: AccountSettings, metrics: WorkerMetrics, log: Logger): ProviderClient {
  const p = config.provider;
  return createProviderClient({
    baseUrl: account.baseUrl,
    accessKeyId: account.accessKeyId,
    accessKeySecret: account.accessKeySecret,
    connectTimeoutMs: p.connectTimeoutMs,
    responseTimeoutMs: p.responseTimeoutMs,
    maxResponseBytes: p.maxResponseBytes,
    retry: p.retry,
    maxSockets: config.maxInFlight,
    onAttempt: (info) => {
      const labels = { account: account.name, operation: info.operation, outcome: info.outcome };
      metrics.providerRequests.inc(labels);
      metrics.providerLatency.observe(labels, info.durationMs / 1000);
    },
    onRetry: (info) => {
      metrics.retries.inc({ account: account.name, operation: info.operation, class: info.failureClass });
      log.debug(
        { account: account.name, operation: info.operation, attempt: info.attempt, failureClass: info.failureClass, code: info.code, delayMs: info.delayMs },
        'retrying provider call',
      );
    },
  });
}

/** `sms_worker_in_flight_sends`: calls to the service under way (retries included). */
function countInFlight(client: ProviderClient, metrics: WorkerMetrics): ProviderClient {
  return {
    send: async (request, options) => {
      metrics.inFlight.inc();
      try {
        return await client.send(request, options);
      } finally {
        metrics.inFlight.dec();
      }
    },
    close: () => client.close(),
  };
}

/** kafkajs errors that say "not yet" (metadata still propagating, a leader moving), not "wrong". */
function isTransientKafkaError(error: unknown): boolean {
  if (error instanceof SmsWorkerError) return error.retryable;
  return typeof error === 'object' && error !== null && (error as { retriable?: unknown }).retriable === true;
}
