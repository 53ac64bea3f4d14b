import type { CommandSource } from '../config/index.ts';
import type { GroupMembership } from './ownership/group-membership.ts';
/**
 * What a running worker is made of. Built by the composition root (wiring.ts), which only the
 * lifecycle (worker.ts) imports; modules that work with the parts (lane-router.ts) take them
 * from here.
 */
import type { PartitionReader } from '../kafka/partition-reader.ts';
import type { CommandConsumer, KeyedRecordProducer, OffsetsAdmin, PartitionProducers } from '../kafka/ports.ts';
import type { TransactionalProducers } from '../kafka/transactional-producers.ts';
import type { CommandTracer } from '../observability/command-span.ts';
import type { ProviderClient } from '../provider/types.ts';
import type { Codec } from '../schema/codec.ts';
import type { FetchPauses } from './source/fetch-pauses.ts';
import type { CommandSender } from './send/failover-sender.ts';
import type { PartitionOwnership } from './ownership/partition-ownership.ts';
import type { ServiceGate } from './send/service-gate.ts';
import type { SpendHolds } from './guard/spend-holds.ts';
import type { WarmStepReport } from './source/warm-up.ts';
import type { Checkpoint } from './lane/ledger-checkpoint.ts';
import type { Handovers } from './ownership/handovers.ts';
import type { RecordCodec } from './lane/record-outcomes.ts';

/** What every command source of the process shares: one client to the service, one gate, one set of producers. */
export interface SharedParts {
  readonly admin: OffsetsAdmin;
  readonly codec: Codec;
  readonly client: ProviderClient;
  readonly gate: ServiceGate;
  /** The spend caps, when SPEND_CAP_* sets one: their pause counts as a pause for liveness and shutdown. */
  readonly spend: SpendHolds | undefined;
  readonly producers: TransactionalProducers;
  /** Writes handovers (ledger on): plain records, outside any transaction (handover-record.ts). */
  readonly handoverProducer: KeyedRecordProducer | undefined;
  readonly reader: PartitionReader;
  readonly maxRecordBytes: number;
  /** Spans of each command, when tracing is configured (OTEL_EXPORTER_OTLP_ENDPOINT). */
  readonly tracer: CommandTracer | undefined;
}

/**
 * What one command source (a topic at a priority, in its own consumer group) works with: the
 * shared parts and its own consumer, claims and sender. Built by `connectWorker` (wiring.ts),
 * which hands each part to the `Worker` as it makes it (`WiringHooks.adopt`): the `Worker`
 * releases them, newest first.
 */
export interface WorkerParts extends SharedParts {
  readonly source: CommandSource;
  readonly consumer: CommandConsumer;
  /** Takes rate-limit tokens at the source's priority. */
  readonly sender: CommandSender;
  readonly ownership: PartitionOwnership;
  /** Whether this member can have missed a generation (a claim is kept only if not). */
  readonly membership: GroupMembership;
  /** What the sticky assignor asks of the lanes when this member joins (set once the lanes exist). */
  readonly assignerHints: { callsUnderWay?: (topic: string, partition: number) => number };
  readonly fetchPauses: FetchPauses;
  /** Partitions of the source's topic. */
  readonly commandPartitions: number;
  /** The newest checkpoint of the source's ledger partition n, read to its end (undefined with the ledger off). */
  readonly latestCheckpoint: (partition: number, generation: number) => Promise<Checkpoint | undefined>;
  /** What became of a record batch a transaction wrote (PartitionReader.fateOfWritten): what a transaction Kafka lost publishes again (partition-transaction.ts, abortedOf). */
  readonly fateOfWritten?: PartitionReader['fateOfWritten'];
  /** The source's handovers (ledger on). */
  readonly handovers: Handovers | undefined;
  /** Walks a claim's reads once (on partition 0) before the group is joined: warm-up.ts says why. */
  readonly warmClaimReads: () => Promise<WarmStepReport>;
  /** A partition moved away and its lane ended: its producer is replaced by one connected ahead (TransactionalProducers.renew). */
  readonly movedAway: (partition: number, generation: number) => Promise<void>;
}

/**
 * What a source's pipeline (source-pipeline.ts) and its lanes (lane-router.ts) work with: a source's
 * parts, its producers and codec seen through the ports the lanes use. The worker gives them its WorkerParts; the
 * simulation (tools/simulate/shipped-lane.ts) gives them its own I/O.
 */
export type PipelineParts = Pick<
  WorkerParts,
  | 'source'
  | 'consumer'
  | 'ownership'
  | 'membership'
  | 'assignerHints'
  | 'fetchPauses'
  | 'sender'
  | 'tracer'
  | 'handovers'
  | 'maxRecordBytes'
  | 'admin'
  | 'latestCheckpoint'
  | 'fateOfWritten'
  | 'movedAway'
  | 'commandPartitions'
> & { readonly producers: PartitionProducers; readonly codec: RecordCodec };
