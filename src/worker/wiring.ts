import type { WorkerConfig } from '../config/index.ts';
import { commandFromAvro } from '../contracts/command.ts';
import { createKafka } from '../kafka/client.ts';
import { checkBrokerCertificate } from '../kafka/tls-check.ts';
import { KafkaCommandConsumer } from '../kafka/command-consumer.ts';
import { workerAssigners } from '../kafka/sticky-assigner.ts';
import { GroupMembership } from './group-membership.ts';
import { readLatestCheckpoint } from '../kafka/ledger-store.ts';
import { groupOffset } from '../kafka/offsets.ts';
import { PartitionReader } from '../kafka/partition-reader.ts';
import { ensureTopics, maxMessageBytes } from '../kafka/topics.ts';

/** The admin client, as the topic helpers take it. */
type TopicAdmin = Parameters<typeof ensureTopics>[0];
import { TransactionalProducers } from '../kafka/transactional-producers.ts';
import type { WorkerMetrics } from '../metrics/metrics.ts';
import type { Logger } from '../observability/logger.ts';
import { CommandTracer } from '../observability/command-span.ts';
import { startTracing } from '../observability/tracing.ts';
import { createProviderClient } from '../provider/client.ts';
import type { ProviderClient } from '../provider/types.ts';
import { Codec, createRegistry } from '../schema/codec.ts';
import { SmsWorkerError } from '../errors.ts';
import { retry } from '../retry.ts';
import { GuardedSender } from './guarded-sender.ts';
import { warmSchemas } from './warm-up.ts';
import { checkpointKey, decodeCheckpoint } from './ledger-checkpoint.ts';
import { PartitionOwnership, type OwnershipEffects } from './partition-ownership.ts';
import { FetchPauses } from './fetch-pauses.ts';
import type { WorkerParts } from './parts.ts';
import { RateLimiter } from './rate-limiter.ts';
import { rateShare } from './rate-share.ts';
import { OutageCounter, ServiceGate, type PauseReason } from './service-gate.ts';
import { RefusalHolds, type HoldsSnapshot } from './refusal-holds.ts';
import type { RefusalScope } from './refusal-scopes.ts';
import type { SendFootprint } from '../contracts/validate.ts';
import { guardsOf } from './guard/guard-wiring.ts';

/** Settings of the ledger topic when the worker creates it: compacted, small segments so compaction keeps up. */
const LEDGER_TOPIC_CONFIG = { 'cleanup.policy': 'compact', 'segment.ms': '600000', 'min.cleanable.dirty.ratio': '0.1', 'delete.retention.ms': '3600000' };
/** Time allowed for an earlier owner to commit the results of its last calls (see PartitionOwnership). */
const HANDOVER_COMMIT_MARGIN_MS = 2_000;
/** Headroom below max.message.bytes for the record batch's own header. */
const BATCH_HEADROOM = 16_384;

export interface WiringHooks {
  readonly onGateChange: (reason: PauseReason | undefined) => void;
  /** The paused routes or the cost ceiling changed (metrics). */
  readonly onHoldsChange: (snapshot: HoldsSnapshot) => void;
  /** The service refused a send; `scope` is what was paused in answer (metrics, logs). */
  readonly onRefusal: (code: string, scope: RefusalScope, footprint: SendFootprint) => void;
  /** Builds on what was made so far, so a failed start releases it (see Worker.start). */
  readonly adopt: (release: () => Promise<unknown>, name: string) => void;
  /** Waits for this process's earlier lane of a partition to end before it is claimed again (see LaneRouter). */
  readonly handover: (topic: string, partition: number) => Promise<boolean>;
}

/** The hold a partition lost to fencing keeps on its fetching, until the next generation. */
const LOST = Symbol('lost to fencing');

/** Checks or creates the topics (the ledger with the command topic's partition count) and reads the record size limit. */
async function setUpTopics(admin: TopicAdmin, c: WorkerConfig, log: Logger): Promise<{ commandPartitions: number; maxRecordBytes: number }> {
  const ledgerTopic = c.ledger.enabled ? c.topics.ledger : undefined;
  const { partitions, created } = await ensureTopics(admin, {
    topics: [c.topics.commands, c.topics.results, c.topics.deadLetter],
    create: c.topics.create,
    partitions: c.topics.partitions,
    replicationFactor: c.topics.replicationFactor,
  });
  const commandPartitions = partitions.get(c.topics.commands) ?? 1;
  if (ledgerTopic !== undefined) {
    // Partition n of the ledger belongs to command partition n.
    const ledger = await ensureTopics(admin, {
      topics: [ledgerTopic],
      create: c.topics.create,
      partitions: commandPartitions,
      replicationFactor: c.topics.replicationFactor,
      configs: { [ledgerTopic]: LEDGER_TOPIC_CONFIG },
    });
    created.push(...ledger.created);
    const ledgerPartitions = ledger.partitions.get(ledgerTopic) ?? 0;
    if (ledgerPartitions < commandPartitions) {
      throw new SmsWorkerError(
        'LEDGER_TOPIC_TOO_SMALL',
        `the ledger topic ${ledgerTopic} has ${ledgerPartitions} partitions; it needs at least as many as ${c.topics.commands} (${commandPartitions}): partition n of the ledger belongs to command partition n`,
      );
    }
  }
  if (created.length > 0) log.info({ topics: created }, 'created missing topics');
  const maxRecordBytes =
    (await maxMessageBytes(admin, [c.topics.results, c.topics.deadLetter, ...(ledgerTopic === undefined ? [] : [ledgerTopic])])) - BATCH_HEADROOM;
  return { commandPartitions, maxRecordBytes };
}

/**
 * The composition root: connects to Kafka and the registry, checks or creates the topics,
 * registers the schemas, and builds the collaborators with their settings from the config.
 */
export async function connectWorker(config: WorkerConfig, log: Logger, metrics: WorkerMetrics, hooks: WiringHooks): Promise<WorkerParts> {
  const c = config;
  // A broker certificate the client refuses fails start-up now, not after kafkajs's retries.
  await checkBrokerCertificate(c.kafka);
  // Adopted first, so released last: the spans of the final commits are exported at shutdown.
  const tracing = startTracing(c.tracing, log, 'sms-worker');
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
  await admin.connect();
  const ledgerTopic = c.ledger.enabled ? c.topics.ledger : undefined;
  // Replicas start together: a topic another replica just created may not be in every broker's
  // metadata yet ("This server does not host this topic-partition"). Those steps are retried.
  const { commandPartitions, maxRecordBytes } = await retry(() => setUpTopics(admin, c, log), {
    attempts: 6,
    backoff: { initialMs: 250, maxMs: 4_000, jitter: 0.5 },
    retryable: isTransientKafkaError,
    onRetry: (error) => log.warn({ err: error }, 'topic set-up failed; retrying'),
  });

  const codec = await Codec.create(createRegistry(c.registry.url, c.registry.auth), { results: c.topics.results, deadLetter: c.topics.deadLetter });
  log.info({ resultSchemaId: codec.resultSchemaId, deadLetterSchemaId: codec.deadLetterSchemaId }, 'registered result and dead-letter schemas');
  // Before the group is joined (Worker.start joins after this returns): the first records must not wait for the registry.
  const warm = await warmSchemas(codec, c.topics.commands);
  log.info({ commandSchemaId: warm.commandSchemaId, ms: warm.ms }, 'warmed up: schemas resolved');

  const client = countInFlight(createClient(config, metrics, log), metrics);
  hooks.adopt(async () => client.close(), 'provider client');
  const pausesRef: { current: FetchPauses | undefined } = { current: undefined };
  const gate = new ServiceGate({
    backoff: {
      insufficient_funds: { initialMs: c.funds.probeInitialMs, maxMs: c.funds.probeMaxMs },
      circuit_open: { initialMs: c.breaker.probeInitialMs, maxMs: c.breaker.probeMaxMs },
    },
    onChange: hooks.onGateChange,
    onBlock: () => pausesRef.current?.setGateClosed(true),
    // The gate needs a command to probe with: let the next one in.
    onProbeWanted: () => pausesRef.current?.setGateClosed(false),
  });
  hooks.adopt(async () => gate.close(), 'gate');
  const rateLimiter = new RateLimiter(c.rateLimitPerSecond);
  const { destinations, spend } = guardsOf(c.guard, metrics, log);
  if (spend !== undefined) hooks.adopt(async () => spend.close(), 'spend caps');
  const holds = new RefusalHolds({ settings: c.refusals, onChange: hooks.onHoldsChange });
  hooks.adopt(async () => holds.close(), 'refusal holds');
  const sender = new GuardedSender({
    client,
    gate,
    holds,
    onRefusal: hooks.onRefusal,
    outages: new OutageCounter(c.breaker.failureThreshold),
    rateLimiter,
    destinations,
    spend,
    fundsPolicy: c.funds.policy,
    // Why the service made the worker pause (its code, status and message; never a secret).
    onPause: (reason, why) => log.warn({ reason, why }, `sending paused (${reason}): ${why}`),
  });
  const producers = new TransactionalProducers(kafka, c.transactionalIdPrefix);
  hooks.adopt(() => producers.closeAll(), 'producers');
  const reader = new PartitionReader(kafka);
  hooks.adopt(() => reader.close(), 'partition reader');

  // Keeping partitions where they are across rebalances (sticky-assigner.ts): each member reports
  // what it holds; continuity of membership decides whether a claim may be kept.
  const membership = new GroupMembership();
  const ownershipRef: { current: PartitionOwnership | undefined } = { current: undefined };
  // Busiest first (calls under way, from the lanes once the worker has them): a member over its
  // share gives up its idlest partitions, whose new owner has the least to wait for.
  const assignerHints: WorkerParts['assignerHints'] = {};
  const owned = (): Record<string, number[]> => {
    const o = ownershipRef.current;
    if (o === undefined) return {};
    const topic = c.topics.commands;
    const calls = (p: number): number => assignerHints.callsUnderWay?.(topic, p) ?? 0;
    return { [topic]: o.assigned.filter((p) => !o.isLost(topic, p)).sort((a, b) => calls(b) - calls(a) || a - b) };
  };
  const consumer = new KafkaCommandConsumer(kafka, {
    groupId: c.consumerGroup,
    partitionAssigners: workerAssigners({ owned, joining: () => membership.joining() }),
    sessionTimeout: c.sessionTimeoutMs,
    rebalanceTimeout: 60_000,
    // A member learns of a rebalance only at its next heartbeat, and until the slowest member has,
    // every partition of the group holds: every 300 ms (one small request per member, about 3 a
    // second), so a rolling update's rebalances start within a third of a second rather than three.
    heartbeatInterval: Math.min(300, Math.floor(c.sessionTimeoutMs / 3)),
    maxWaitTimeInMs: 1_000,
    maxBytesPerPartition: c.fetch.maxBytesPerPartition,
    maxBytes: c.fetch.maxBytes,
    readUncommitted: false,
    retry: { retries: 10 },
  });
  const fetchPauses = new FetchPauses(consumer, c.topics.commands);
  pausesRef.current = fetchPauses;
  hooks.adopt(() => consumer.disconnect(), 'consumer');
  // RATE_LIMIT_PER_SECOND is the deployment's: this process takes its partitions' share, anew at
  // every rebalance; none is granted while the group rebalances (rate-limiter.ts says why).
  if (rateLimiter.enabled) {
    // Nothing before the first share is known: a fresh process would otherwise start with a full
    // second of the whole deployment's limit on top of what the others send.
    rateLimiter.pause();
    consumer.onRebalancing(() => rateLimiter.pause());
    consumer.onGroupJoin(({ memberAssignment }) => {
      const owned = memberAssignment[c.topics.commands]?.length ?? 0;
      rateLimiter.setRate(rateShare({ limitPerSecond: c.rateLimitPerSecond, ownedPartitions: owned, totalPartitions: commandPartitions }));
      rateLimiter.resume();
      metrics.rateLimitShare.set(rateLimiter.perSecond);
      log.info({ ownedPartitions: owned, totalPartitions: commandPartitions, perSecond: rateLimiter.perSecond }, 'rate limit share');
    });
  }
  // The velocity limits and spend caps are the deployment's too: the same share, at every rebalance.
  if (destinations !== undefined || spend !== undefined) {
    consumer.onGroupJoin(({ memberAssignment }) => {
      const owned = memberAssignment[c.topics.commands]?.length ?? 0;
      destinations?.setShare(owned, commandPartitions);
      spend?.setShare(owned, commandPartitions);
    });
  }

  // The key of this group's checkpoints in the ledger.
  const ledgerKey = checkpointKey(c.consumerGroup, c.topics.commands);
  const effects: OwnershipEffects = {
    handover: hooks.handover,
    fence: async (topic, partition, generation) => {
      await producers.discard(topic, partition);
      await producers.forPartition(topic, partition, generation);
    },
    groupOffset: (topic, partition) => groupOffset(admin, c.consumerGroup, topic, partition),
    checkpoint: async (partition, upTo) =>
      ledgerTopic === undefined
        ? undefined
        : readLatestCheckpoint(admin, reader, ledgerTopic, partition, (key, value) => decodeCheckpoint(key, value, ledgerKey), upTo),
    recentCommandIds: async (topic, partition, start, count) => {
      const ends = (await admin.fetchTopicOffsets(topic)).find((o) => o.partition === partition);
      const low = BigInt(ends?.low ?? '0');
      const from = start - BigInt(count) > low ? start - BigInt(count) : low;
      if (from >= start) return [];
      // One fetch at a time: only the commandIds are kept, never the records (up to MAX_COMMAND_BYTES each).
      const out: { offset: bigint; commandId: string }[] = [];
      await reader.forEach(topic, partition, from, start, async (record) => {
        try {
          const decoded = await codec.decode(record.value);
          if (decoded.ok) out.push({ offset: record.offset, commandId: commandFromAvro(decoded.value).commandId });
        } catch {
          // Not a readable command: it had a dead letter or a REJECTED result keyed otherwise.
        }
      });
      return out;
    },
    carry: (topic, partition, from, to) => producers.carry(topic, partition, from, to),
    pauseLost: (_topic, partition) => fetchPauses.hold(partition, LOST),
    resumeAll: (_topic, partitions) => {
      for (const partition of partitions) fetchPauses.release(partition, LOST);
    },
  };
  const ownership = new PartitionOwnership({
    effects,
    dedupWindow: c.ledger.dedupWindow,
    sessionTimeoutMs: c.sessionTimeoutMs,
    // How long a call of an earlier owner may still be under way (one attempt), plus its commit:
    // a call retried for longer is cut off and reported UNKNOWN rather than holding the partition.
    handoverGraceMs: ledgerTopic === undefined ? 0 : c.provider.responseTimeoutMs + HANDOVER_COMMIT_MARGIN_MS,
    // The moved partition waits for the earlier owner's last results: look every 50 ms (a read of
    // the ledger partition's tail), so it is taken within 50 ms of them rather than 200.
    handoverPollMs: 50,
    log,
    metrics,
  });
  ownershipRef.current = ownership;
  return {
    admin,
    consumer,
    codec,
    client,
    gate,
    spend,
    sender,
    producers,
    reader,
    ownership,
    membership,
    fetchPauses,
    commandPartitions,
    maxRecordBytes,
    tracer,
    assignerHints,
  };
}

function createClient(config: WorkerConfig, metrics: WorkerMetrics, log: Logger): ProviderClient {
  const p = config.provider;
  return createProviderClient({
    baseUrl: p.baseUrl,
    accessKeyId: p.accessKeyId,
    accessKeySecret: p.accessKeySecret,
    connectTimeoutMs: p.connectTimeoutMs,
    responseTimeoutMs: p.responseTimeoutMs,
    maxResponseBytes: p.maxResponseBytes,
    retry: p.retry,
    maxSockets: config.maxInFlight,
    onAttempt: (info) => {
      metrics.providerRequests.inc({ operation: info.operation, outcome: info.outcome });
      metrics.providerLatency.observe({ operation: info.operation, outcome: info.outcome }, info.durationMs / 1000);
    },
    onRetry: (info) => {
      metrics.retries.inc({ operation: info.operation, class: info.failureClass });
      log.debug(
        { operation: info.operation, attempt: info.attempt, failureClass: info.failureClass, code: info.code, delayMs: info.delayMs },
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
