import type { Logger } from '../../observability/logger.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { PartitionProducers } from '../../kafka/ports.ts';
import type { BytesInHand } from '../source/bytes-in-hand.ts';
import type { PartitionClaim } from '../protocol/claim.ts';
import type { RecordHandlerDeps } from '../send/record-handler.ts';
import type { Permits } from '../priority/priority-permits.ts';
import type { MarkPermits } from '../priority/send-permits.ts';
import type { Priority } from '../priority/priority.ts';
import type { CommitTarget } from './partition-transaction.ts';
import type { Handovers } from '../ownership/handovers.ts';

/** What a partition's lane works with: the process-wide resources and the claim it drives. */
export interface LaneContext {
  readonly deps: RecordHandlerDeps;
  readonly producers: PartitionProducers;
  readonly slots: Permits;
  /**
   * Bounds the commands marked in the ledger but not yet holding a slot (process-wide; 2 ×
   * MAX_IN_FLIGHT): marks a wave or two ahead of the calls keep the pipeline full, more would only
   * grow what a crash leaves UNKNOWN.
   */
  readonly markPermits?: MarkPermits;
  readonly metrics: WorkerMetrics;
  /** The priority of the partition's topic: the `priority` label of its results. */
  readonly priority?: Priority;
  readonly log: Logger;
  /** The source's handovers (ledger on): written when the claim stops working the partition, looked for when it inherited marks in doubt. */
  readonly handovers?: Handovers;
  /** Where results go; `mayFence` is the lane's own (see `mayCommit`). */
  readonly target: Omit<CommitTarget, 'topic' | 'partition' | 'mayFence' | 'generation' | 'mayReinitialise'>;
  /** Whether the lane's producer may be initialised again after a failed transaction (it owns the partition, and the group is not rebalancing). */
  readonly mayReinitialise?: () => boolean;
  readonly commitIntervalMs: number;
  /** A busy partition's marks wait up to this long after its last transaction, to share the next one (commit-clock.ts). */
  readonly markLingerMs?: number;
  /** This generation's claim of the partition: start offset, inherited and open marks, dedup window. */
  readonly claim: PartitionClaim;
  /** Records dispatched past the committed offset, at most (the run-ahead bound). */
  readonly maxRunAhead: number;
  /** Bytes of records dispatched and not yet done, process-wide (MAX_BYTES_IN_HAND). */
  readonly bytesInHand: BytesInHand;
  /** Reads the partition's committed offset from the broker (to resolve an ambiguous commit). */
  readonly fetchCommittedOffset: (topic: string, partition: number) => Promise<bigint>;
  /** Whether this process may still start a send for the partition (its lease holds and the claim is current). */
  readonly leaseHolds: () => boolean;
  /**
   * Whether the lane may still commit: a current claim may (re)initialise its producer; a lane
   * retiring after a rebalance only while its generation's producer is still there (nobody fenced
   * it), never initialising one (that would fence the new owner).
   */
  readonly mayCommit: () => boolean;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  /** Real progress: a record dispatched or a transaction committed. */
  readonly onProgress: () => void;
  /** The lane has records in hand (dispatched, not yet committed), or none any more. */
  readonly onBusy: (busy: boolean) => void;
  /** Stop fetching the partition (the run-ahead bound or the bytes budget is reached), or fetch it again. */
  readonly holdFetching: (held: boolean) => void;
}
