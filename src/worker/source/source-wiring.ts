import type { CommandSource, WorkerConfig } from '../../config/index.ts';
import { commandFromAvro } from '../../contracts/command.ts';
import { KafkaCommandConsumer } from '../../kafka/command-consumer.ts';
import { readLatestCheckpoint } from '../../kafka/ledger-store.ts';
import { publishedResults } from '../../kafka/result-search.ts';
import { resultFromAvro } from '../../contracts/result-avro.ts';
import { groupOffset } from '../../kafka/offsets.ts';
import { coalescedOffsets } from '../../kafka/coalesced-admin.ts';
import { workerAssigners } from '../../kafka/sticky-assigner.ts';
import type { createKafka } from '../../kafka/client.ts';

type Kafka = ReturnType<typeof createKafka>;
type Admin = ReturnType<Kafka['admin']>;
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import { CoordinatorOutage } from './coordinator-outage.ts';
import { FetchPauses, lostPartitionFetching } from './fetch-pauses.ts';
import { GroupMembership } from '../ownership/group-membership.ts';
import { GuardedSender, type GuardedSenderOptions } from '../send/guarded-sender.ts';
import { FailoverSender } from '../send/failover-sender.ts';
import type { TenantLimits } from '../tenants/tenant-limits.ts';
import { checkpointKey, decodeCheckpoint, encodeCheckpoint, withHangingMarks } from '../lane/ledger-checkpoint.ts';
import { handoverKey } from '../ownership/handover-record.ts';
import { ledgerHandovers } from '../ownership/handovers.ts';
import { PartitionOwnership, type OwnershipEffects } from '../ownership/partition-ownership.ts';
import { warmSteps } from './warm-up.ts';
import type { SharedParts, WorkerParts } from '../parts.ts';
import { tokensOfBoth, type RateLimiter, type TokenSource } from '../send/rate-limiter.ts';

/** Time allowed, past an earlier owner's longest call, for its handover to be written and read (handovers.ts). */
const HANDOVER_COMMIT_MARGIN_MS = 2_000;

/**
 * Partitions whose transactional producers a process connects, and whose repeat windows it reads,
 * ahead of being given them (TransactionalProducers.prepareAhead, PartitionOwnership.readWindowsAhead):
 * all of them on topics up to this size (the chart's 12 with room), none ahead beyond it (a claim
 * then does its own, as before).
 */
const PREPARE_AHEAD_MAX_PARTITIONS = 64;

/** How long a claim's read waits for the other claims of the same join to share it (coalesced-admin.ts). */
const CLAIM_READ_COALESCE_MS = 2;

/**
 * How soon a member learns of a rebalance: until the slowest member has, every partition of the
 * group holds. It learns at its next heartbeat: every 100 ms (at most a third of the session
 * timeout; one small request per member, about 10 a second), so a rolling update's rebalances
 * start within a tenth of a second. kafkajs sends heartbeats only between fetches, and a fetch of
 * partitions with nothing new waits `maxWaitTimeInMs` for data (a consumer whose partitions are
 * all paused, such as a joiner whose claims are under way, sleeps that long): at 1 s an idle or
 * claiming member learned of a rebalance up to 1 s late. So a fetch waits no longer than the
 * heartbeat interval. The price, measured (one idle worker, 12 partitions, local broker, 30 s):
 * 3.5–3.9 % of a core at 100 ms, 2.9 % at the 300 ms heartbeat and 250 ms fetch wait before; at
 * 300 ms a rebalance of the rolling-update bench held every partition 90–345 ms, at 100 ms 90–135 ms.
 */
export function groupTiming(sessionTimeoutMs: number): { heartbeatInterval: number; maxWaitTimeInMs: number } {
  const heartbeatInterval = Math.min(100, Math.floor(sessionTimeoutMs / 3));
  return { heartbeatInterval, maxWaitTimeInMs: Math.min(100, heartbeatInterval) };
}

export interface SourceWiring {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly config: WorkerConfig;
  readonly shared: SharedParts;
  /** Each account's sender options, in ACCOUNTS order (default first); the rate-limit tokens are taken at the source's priority. */
  /** Each account's sender options and its own rate limiter (disabled when it has no limit). */
  readonly accountSenders: readonly { readonly name: string; readonly options: Omit<GuardedSenderOptions, 'rateLimiter'>; readonly rate: RateLimiter }[];
  /** TENANT_LIMITS, shared by every source; undefined: no tenant has a limit. */
  readonly tenants: TenantLimits | undefined;
  readonly rateLimiter: RateLimiter;
  /** Partitions of each command topic (its ledger has at least as many). */
  readonly partitions: ReadonlyMap<string, number>;
  readonly handover: (topic: string, partition: number) => Promise<boolean>;
  readonly log: Logger;
  readonly metrics: WorkerMetrics;
}

/**
 * How far back the result search looks for a record a lost transaction answered without a call
 * when no mark tells when that transaction began (withHangingMarks' fallbackAt).
 */
const UNCALLED_LOOKBACK_MS = 10 * 60_000;

/** How far before the oldest in-doubt mark the result search starts: a result is written after its mark, by a clock that may step back. */
const RESULT_SEARCH_CLOCK_MARGIN_MS = 5_000;

/**
 * The parts of one command source (a topic at a priority, in its own consumer group): its
 * consumer, ownership and claims, fetch pauses, and a sender that takes rate-limit tokens at its
 * priority. Everything else (the service client, gate, holds, producers, codec) is shared.
 */
export function connectSource(source: CommandSource, w: SourceWiring): WorkerParts {
  const { config: c, shared, log, metrics } = w;
  const { topic, consumerGroup } = source;
  const ledgerTopic = c.ledger.enabled ? source.ledgerTopic : undefined;
  const commandPartitions = w.partitions.get(topic) ?? 1;
  // Keeping partitions where they are across rebalances (sticky-assigner.ts): each member reports
  // what it holds; continuity of membership decides whether a claim may be kept.
  const membership = new GroupMembership();
  const outage = new CoordinatorOutage();
  const ownershipRef: { current: PartitionOwnership | undefined } = { current: undefined };
  // Busiest first (calls under way, from the lanes once the worker has them): a member over its
  // share gives up its idlest partitions, whose new owner has the least to wait for.
  const assignerHints: WorkerParts['assignerHints'] = {};
  const owned = (): Record<string, number[]> => {
    const o = ownershipRef.current;
    if (o === undefined) return {};
    const calls = (p: number): number => assignerHints.callsUnderWay?.(topic, p) ?? 0;
    return { [topic]: o.assigned.filter((p) => !o.isLost(topic, p)).sort((a, b) => calls(b) - calls(a) || a - b) };
  };
  const consumer = new KafkaCommandConsumer(w.kafka, {
    groupId: consumerGroup,
    // A member shutting down asks for nothing, so a rebalance that catches it before it has left
    // moves its partitions at once (their calls under way are handed over). Only with the ledger
    // on: with it off nothing tells the next owner a call is under way, and the partitions stay
    // until its lanes have ended (SourcePipeline.release).
    partitionAssigners: workerAssigners({
      owned,
      joining: () => membership.joining(),
      leaving: () => ledgerTopic !== undefined && (ownershipRef.current?.isStopping ?? false),
    }),
    sessionTimeout: c.sessionTimeoutMs,
    rebalanceTimeout: 60_000,
    ...groupTiming(c.sessionTimeoutMs),
    maxBytesPerPartition: c.fetch.maxBytesPerPartition,
    maxBytes: c.fetch.maxBytes,
    readUncommitted: false,
    retry: {
      retries: 10,
      // A coordinator lookup no broker answered restarts the consumer too, for a while (coordinator-outage.ts).
      restartOnFailure: (error) => {
        const restart = outage.mayRestart(error);
        if (!restart) log.error({ topic, outageMs: outage.outageMs }, "no broker has answered this group's coordinator lookup for too long; the worker exits");
        return Promise.resolve(restart);
      },
    },
  });
  consumer.onGroupJoin(() => outage.joined());
  const fetchPauses = new FetchPauses(consumer, topic);
  // The key of this group's checkpoints in the source's own ledger (config: one ledger per topic).
  const ledgerKey = checkpointKey(consumerGroup, topic);
  const { reader, codec, producers } = shared;
  // The source a result record names (the result search's one decode), or undefined for a value it cannot read.
  const sourceOf = async (value: Buffer) => {
    try {
      return resultFromAvro(await codec.registry.decode(value)).source;
    } catch {
      return undefined;
    }
  };
  const { admin } = w;
  // The claims of one join read together: one request per thing read (coalesced-admin.ts).
  const reads = coalescedOffsets(admin, CLAIM_READ_COALESCE_MS);
  const effects: OwnershipEffects = {
    handover: w.handover,
    prepareFence: (t, partition) => producers.prepare(t, partition),
    fence: async (t, partition, generation) => {
      await producers.discard(t, partition);
      await producers.forPartition(t, partition, generation);
    },
    groupOffset: (t, partition) => groupOffset(reads, consumerGroup, t, partition),
    checkpoint: async (partition, upTo, fencedIn) =>
      ledgerTopic === undefined
        ? undefined
        : readLatestCheckpoint(
            reads,
            reader,
            ledgerTopic,
            partition,
            (key, value) => decodeCheckpoint(key, value, ledgerKey),
            upTo,
            undefined,
            fencedIn === undefined
              ? undefined
              : {
                  transactionalId: producers.transactionalId(topic, partition),
                  settle: async (kept, hanging) => {
                    const settled = await producers.settle(
                      topic,
                      partition,
                      fencedIn,
                      kept === undefined ? undefined : { key: ledgerKey, value: encodeCheckpoint(kept) },
                    );
                    if (settled && hanging)
                      log.warn(
                        { topic, partition, ledgerTopic },
                        'a transaction was open in the ledger partition after the fence: ended it (a hanging transaction)',
                      );
                    return settled;
                  },
                  keep: (committed, unsure) => {
                    const kept = withHangingMarks(committed, unsure, { uncalled: true, fallbackAt: Date.now() - UNCALLED_LOOKBACK_MS });
                    const uncalled = kept?.open.filter((mark) => mark.uncalled === true).length ?? 0;
                    const added = (kept?.open.length ?? 0) - uncalled - (committed?.open.length ?? 0);
                    if (uncalled > 0)
                      log.warn(
                        { topic, partition, ledgerTopic, records: uncalled },
                        'the ledger partition holds records answered without a call by transactions whose fate it cannot tell: their results are looked for before they are handled again',
                      );
                    if (added > 0)
                      log.warn(
                        { topic, partition, ledgerTopic, marks: added },
                        'the ledger partition holds marks of transactions whose fate it cannot tell (their markers lost): kept in doubt, their commands may have been called',
                      );
                    return kept;
                  },
                },
          ),
    recentCommandIds: async (t, partition, start, count) => {
      const ends = (await reads.fetchTopicOffsets(t)).find((o) => o.partition === partition);
      const low = BigInt(ends?.low ?? '0');
      const from = start - BigInt(count) > low ? start - BigInt(count) : low;
      if (from >= start) return [];
      // One fetch at a time: only the commandIds are kept, never the records (up to MAX_COMMAND_BYTES each).
      const out: { offset: bigint; commandId: string }[] = [];
      await reader.forEach(t, partition, from, start, async (record) => {
        try {
          const decoded = await codec.decode(record.value);
          if (decoded.ok) out.push({ offset: record.offset, commandId: commandFromAvro(decoded.value).commandId });
        } catch {
          // Not a readable command: it had a dead letter or a REJECTED result keyed otherwise.
        }
      });
      return out;
    },
    carry: (t, partition, from, to) => producers.carry(t, partition, from, to),
    ...lostPartitionFetching(fetchPauses, consumer),
  };
  // Producers connected for the partitions that may move here, before the group hands any over.
  consumer.onRebalancing(() => void producers.prepareAhead(topic, commandPartitions, PREPARE_AHEAD_MAX_PARTITIONS));
  const ownership = new PartitionOwnership({
    effects,
    dedupWindow: c.ledger.dedupWindow,
    sessionTimeoutMs: c.sessionTimeoutMs,
    log,
    metrics,
  });
  const handovers =
    ledgerTopic === undefined || shared.handoverProducer === undefined
      ? undefined
      : ledgerHandovers({
          ledgerTopic,
          key: handoverKey(consumerGroup, topic),
          producer: shared.handoverProducer,
          reader,
          admin,
          maxRecordBytes: shared.maxRecordBytes,
          // How long a call of an earlier owner may still be under way (one attempt), plus its
          // handover: a call that takes longer is reported UNKNOWN rather than holding its key.
          graceMs: c.provider.responseTimeoutMs + HANDOVER_COMMIT_MARGIN_MS,
          // An in-doubt record waits for its handover: look every 50 ms (a read of the ledger partition's tail).
          pollMs: 50,
          // No handover by the grace: the result topic may hold the record's result already (result-search.ts).
          published: async (partition, marks) => {
            const since = Math.min(...marks.map((mark) => mark.at)) - RESULT_SEARCH_CLOCK_MARGIN_MS;
            const commands = marks.map((mark) => ({ commandId: mark.commandId, source: { topic, partition, offset: mark.offset.toString() } }));
            const found = await publishedResults({ admin, reader, sourceOf }, c.topics.results, commands, since);
            return new Set([...found].map((i) => marks[i]?.offset ?? -1n));
          },
          log,
        });
  ownershipRef.current = ownership;
  const tokens = w.rateLimiter.for(source.priority);
  // An account with a rate limit of its own takes its token first, then the deployment's.
  const tokensOf = (rate: RateLimiter): TokenSource => (rate.enabled ? tokensOfBoth(rate.for(source.priority), tokens) : tokens);
  const sender = new FailoverSender({
    accounts: new Map(w.accountSenders.map((a) => [a.name, new GuardedSender({ ...a.options, account: a.name, rateLimiter: tokensOf(a.rate) })])),
    routing: c.routing,
    priority: source.priority,
    tenants: w.tenants,
    onFailover: (account, reason, code) => {
      w.metrics.failovers.inc({ account, reason });
      log.debug({ account, reason, code, topic }, 'command went on to its next account');
    },
  });
  return {
    ...shared,
    source,
    consumer,
    sender,
    ownership,
    membership,
    fetchPauses,
    commandPartitions,
    assignerHints,
    handovers,
    latestCheckpoint: (partition, generation) => effects.checkpoint(partition, 'end', generation),
    fateOfWritten: (t, partition, baseOffset, candidates) => reader.fateOfWritten(t, partition, baseOffset, candidates),
    movedAway: (partition, generation) => producers.renew(topic, partition, generation, commandPartitions <= PREPARE_AHEAD_MAX_PARTITIONS),
    warmClaimReads: () =>
      warmSteps({
        // The repeat windows decode up to DEDUP_WINDOW records each (the decoding is the commands' hot
        // path too), read ahead for the claims of the join; on a larger topic, partition 0's only.
        'group offset and repeat windows': () =>
          commandPartitions <= PREPARE_AHEAD_MAX_PARTITIONS ? ownership.readWindowsAhead(topic, commandPartitions) : ownership.windowAtGroupOffset(topic, 0),
        ...(ledgerTopic !== undefined && { 'ledger checkpoint': () => effects.checkpoint(0, 'settled') }),
        'producers connected ahead': () => producers.prepareAhead(topic, commandPartitions, PREPARE_AHEAD_MAX_PARTITIONS),
      }),
  };
}
