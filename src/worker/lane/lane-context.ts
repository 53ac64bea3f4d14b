import type { Logger } from '../../observability/logger.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { PartitionProducers } from '../../kafka/ports.ts';
import type { BytesInHand } from '../source/bytes-in-hand.ts';
import type { PartitionClaim } from '../protocol/claim.ts';
import type { ClaimStanding } from '../protocol/ownership.ts';
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
  /** Where results go (the partition, the generation and the standing are the claim's). */
  readonly target: Omit<CommitTarget, 'topic' | 'partition' | 'generation' | 'standing'>;
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
  /**
   * What ownership says of the claim, asked at each record taken, send and commit (a view into the
   * ownership machine: `maySend`, the lease holds and the claim is current; `mayReinitialise`,
   * its producer may be initialised again after a failed transaction).
   */
  readonly standing: ClaimStanding;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  /** Real progress: a record dispatched or a transaction committed. */
  readonly onProgress: () => void;
  /** The lane has records in hand (dispatched, not yet committed), or none any more. */
  readonly onBusy: (busy: boolean) => void;
  /** Stop fetching the partition (the run-ahead bound or the bytes budget is reached), or fetch it again. */
  readonly holdFetching: (held: boolean) => void;
}
