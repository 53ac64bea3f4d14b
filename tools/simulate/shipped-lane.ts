/**
 * A seeded simulation of the worker's processes over one to three command partitions, each process
 * built as worker.ts and source-wiring.ts build one command source, from the shipped classes: the
 * `SourcePipeline` (consumer events to ownership), `LaneRouter` and its `PartitionLane`s, the record
 * handler with its admission (validation, the velocity limits and a tenant's), `FailoverSender` over
 * one or two `GuardedSender`s with their real gates and holds, `SpendHolds`, `SendPermits`,
 * `FetchPauses`, `GroupMembership`, `PartitionOwnership` and `ledgerHandovers`. Only I/O is swapped:
 * - the consumer: `SimulatedConsumer` (simulated-consumer.ts), the `CommandConsumer` port as
 *   kafkajs behaves for it; the group coordinator is this file's `rebalance` and `endOwnership`;
 * - Kafka: `SimulatedKafka`, the partitions' committed logs (ledger checkpoints and handovers,
 *   results, dead letters, group offsets) behind the worker's own port (`PartitionProducers`):
 *   transactions that commit atomically, one at a time per producer; each initialisation of a
 *   partition's transactional id takes its next epoch and fences every producer of it before (the
 *   broker knows no generations; each process refuses a claim older than its newest); commits that
 *   fail, or commit with their answer lost; admin reads of the group offset now and then stale;
 * - the service: `SimulatedService`, a `ProviderClient` whose answers come from the seed (and
 *   which records every call: process, account, answer, whether it was accepted); one call in ten
 *   is slow (up to SLOW_CALL_MS), so calls are under way as claims end;
 * - the codec: the real Avro types, without a registry.
 *
 * Owners end as ClaimEnd says; then, without Kafka faults, the members answer every record and
 * stop gracefully. Then it checks the invariants of table.ts (INVARIANTS), per command and per
 * process.
 *
 * Each schedule runs on a virtual clock of its own (virtual-time.ts: timers, Date, performance,
 * Math.random), one schedule at a time, and one PRNG serves it: its seed sets the world (the
 * records, accounts, limits, how many claims and how each ends) and, since the timers fire in a
 * replayable order, the faults and answers too; so the seed alone replays a schedule, interleaving
 * included. A schedule that breaks something prints what happened (claims, commits, handovers).
 * Known-bad variants of the shipped code (shipped-variants.ts), injected from outside, must each
 * break one of these (test/simulate/shipped-variants.test.ts).
 * Run: `node tools/simulate/shipped-lane.ts [--schedules 500] [--seed 1] [--ledger on|off] [--variant V]`.
 */
import { parseArgs } from 'node:util';
import { TransitionCoverage } from './transition-coverage.ts';
import { pino, type Logger } from 'pino';
import { loadConfig, type WorkerConfig } from '../../src/config/index.ts';
import { SmsWorkerError } from '../../src/errors.ts';
import { commandType, deadLetterType, resultType } from '../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../src/contracts/command.ts';
import { DestinationGuard } from '../../src/worker/guard/destination-guard.ts';
import { DEFAULT_VELOCITY_SETTINGS, type VelocitySettings } from '../../src/worker/guard/velocity.ts';
import { DEFAULT_SPEND_CAP_SETTINGS } from '../../src/worker/guard/spend-cap.ts';
import { SpendHolds } from '../../src/worker/guard/spend-holds.ts';
import { TenantLimits } from '../../src/worker/tenants/tenant-limits.ts';
import { parseTenantLimits, type TenantSettings } from '../../src/worker/tenants/tenant-settings.ts';
import {
  FencedError,
  type KeyedRecordProducer,
  type OutgoingRecord,
  type PartitionProducers,
  type Transaction,
  type TransactionalSession,
} from '../../src/kafka/ports.ts';
import { createMetrics, type WorkerMetrics } from '../../src/metrics/metrics.ts';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from '../../src/provider/types.ts';
import { BytesInHand } from '../../src/worker/source/bytes-in-hand.ts';
import { FailoverSender, type CommandSender } from '../../src/worker/send/failover-sender.ts';
import { GuardedSender } from '../../src/worker/send/guarded-sender.ts';
import { decodeHandover, handoverKey } from '../../src/worker/ownership/handover-record.ts';
import { ledgerHandovers, type Handovers } from '../../src/worker/ownership/handovers.ts';
import {
  checkpointKey,
  decodeCheckpoint,
  encodeCheckpoint,
  recoveryPlan,
  withHangingMarks,
  type Checkpoint,
  type OpenMark,
} from '../../src/worker/lane/ledger-checkpoint.ts';
import { LeaseLostError } from '../../src/worker/protocol/claim.ts';
import type { Invariant } from '../../src/worker/protocol/table.ts';
import { FetchPauses, lostPartitionFetching } from '../../src/worker/source/fetch-pauses.ts';
import { GroupMembership } from '../../src/worker/ownership/group-membership.ts';
import type { LaneRouter } from '../../src/worker/ownership/lane-router.ts';
import type { PipelineParts } from '../../src/worker/parts.ts';
import { PartitionOwnership } from '../../src/worker/ownership/partition-ownership.ts';
import { SendPermits, type MarkPermits } from '../../src/worker/priority/send-permits.ts';
import { PriorityPermits } from '../../src/worker/priority/priority-permits.ts';
import { SourcePipeline } from '../../src/worker/source/source-pipeline.ts';
import { RateLimiter } from '../../src/worker/send/rate-limiter.ts';
import { RefusalHolds } from '../../src/worker/send/refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS } from '../../src/worker/send/refusal-scopes.ts';
import { OutageCounter, ServiceGate } from '../../src/worker/send/service-gate.ts';
import { MAY_HAVE_SENT, simulatedFailure, simulatedSuccess, violationsByKind, type Answer } from './failover.ts';
import { Prng } from './prng.ts';
import { framed, registryFreeCodec } from './registry-free-codec.ts';
import { RebalanceInProgress, SimulatedConsumer } from './simulated-consumer.ts';
import { onVirtualTime } from './virtual-time.ts';
import { installVariant, SHIPPED_VARIANTS, type DriverFaults, type ShippedVariant } from './shipped-variants.ts';

const TOPIC = 'commands';
const RESULTS = 'results';
const DEAD_LETTERS = 'dead-letters';
const LEDGER = 'ledger';
const GROUP = 'group';
const LEDGER_KEY = checkpointKey(GROUP, TOPIC);
/** Every repeat in a schedule is within the window. */
const DEDUP_WINDOW = 1_000;
/** How long a claim waits for an earlier owner's handover of a mark in doubt (the worker: a call's timeout and a margin). */
const HANDOVER_GRACE_MS = 500;
/** Offsets the seed of the stream that makes admin reads of the group offset stale (SimulatedKafka.readGroupOffset). */
const STALE_READS_SEED = 0x5eed_0ff5;
/** Offsets the stream that draws whether a transaction whose ledger marker was lost lost its result and dead-letter markers too (so other schedules keep their draws). */
const RESULT_MARKERS_SEED = 0x5eed_0ff6;
/** Offsets the stream that draws whether a schedule retries ambiguous failures (PROVIDER_RETRY_AMBIGUOUS), so other schedules keep their draws. */
const RETRY_AMBIGUOUS_SEED = 0x5eed_0ff7;
/** Offsets the streams that draw whether a schedule's record handlers throw now and then, and when (HandlerCrashes), so other schedules keep their draws. */
const HANDLER_CRASHES_SEED = 0x5eed_0ff8;
/** Offsets the seed of the stream that draws which coordinator restarts are a restart of the one broker (coordinatorRestart). */
const BROKER_OUTAGE_SEED = 0x5eed_0ffa;
/**
 * Offsets the stream that gives a process MAX_RUN_AHEAD 1 (one in five, by process): an earlier
 * owner with a larger bound marks further ahead than the next may take, which must not wedge it
 * (record-book.ts, untakenCarrier). A stream of its own, so other draws keep their values.
 */
const RUN_AHEAD_ONE_SEED = 0x5eed_0ffb;
/** The longest a slow call takes: within the grace, with room for the handover's write. */
const SLOW_CALL_MS = 300;
/** How long the last claim gets to answer every record, and an ended claim's lane to settle, ms (by default). */
const SETTLE_MS = 20_000;
/** The group's session timeout: a member not heard from this long is dropped; its lease (TimedLease) lapses a quarter earlier. */
const SESSION_MS = 400;
/** How often a member's heartbeat reaches the group and confirms it. */
const HEARTBEAT_MS = 50;
/** What the simulated service charges for every message (simulatedSuccess: 0.045), in micro-units. */
const PRICE_MICROS = 45_000n;
/** How long commands live in a schedule with a spend cap: those held at the cap expire (and get their result). */
const SPEND_EXPIRY_MS = 3_000;

/** The answers of the simulated service, and how often (the failover simulation's kinds, without the account refusals that pause routes). */
const ANSWER_WEIGHTS: Readonly<Partial<Record<Answer, number>>> = {
  ok: 70,
  unreachable: 8,
  throttled: 5,
  http500: 5,
  'reset-after': 5,
  malformed: 2,
  business: 5,
};

/** A process of the simulation: once dead, every I/O it has under way or starts hangs. */
interface Incarnation {
  readonly name: string;
  dead: boolean;
  /** Cut off from the group (a zombie): its heartbeats do not reach the coordinator, and its lease lapses. */
  cutOff: boolean;
  /** Its one command source at work (the shipped SourcePipeline), and its consumer. */
  pipeline?: SourcePipeline<PipelineParts>;
  consumer?: SimulatedConsumer;
  /** Its transactional producers (one per process, as TransactionalProducers in the worker). */
  producers?: PartitionProducers;
  /** Its handovers (ledger on): one per process, so a claim it makes again takes its own settlements from memory. */
  handovers?: Handovers;
  /** Its sender (gates, holds, velocity counts): one per process, as in the worker. */
  sender?: CommandSender;
  /** The mark owners of the claims it made (each claim names its marks `<owner>.<n>`). */
  readonly markOwners: Set<string>;
  /** Its in-flight slots and mark permits (SendPermits), shared by its lanes. */
  permits?: SendPermits;
}

function incarnation(name: string): Incarnation {
  return { name, dead: false, cutOff: false, markOwners: new Set() };
}

/** A failure the simulated world made (a failed commit, one whose answer was lost): the protocol's to handle. */
class SimulatedFault extends Error {}

const hang = (): Promise<never> => new Promise<never>(() => undefined);

/** A few real milliseconds, then nothing if the process died meanwhile. */
async function io(prng: Prng, host: Incarnation, maxMs = 2): Promise<void> {
  if (host.dead) await hang();
  await new Promise((resolve) => setTimeout(resolve, prng.int(0, maxMs)));
  if (host.dead) await hang();
}

export interface ServiceCall {
  readonly commandId: string;
  readonly process: string;
  readonly account: string;
  readonly answer: Answer;
  readonly accepted: boolean;
  /** The committed checkpoint held a mark of the record naming this account and a claim of this process when the call started (ledger on). */
  readonly underCommittedMark: boolean;
}

/** A ledger record's checkpoint, or undefined for any other record (a handover). */
function checkpointOf(record: OutgoingRecord): Checkpoint | undefined {
  return decodeCheckpoint(record.key === null ? null : Buffer.from(record.key), record.value, LEDGER_KEY);
}

/** A transaction's records, for the trace: results by commandId and outcome, the checkpoint's open marks and answered records. */
function describeSends(sends: readonly { topic: string; messages: readonly OutgoingRecord[] }[]): string {
  const parts: string[] = [];
  for (const { topic, messages } of sends) {
    for (const m of messages) {
      if (topic === RESULTS) {
        const r = resultType.fromBuffer(m.value.subarray(5)) as PublishedResult & { source?: { offset?: unknown } };
        parts.push(`${r.commandId}@${String(r.source?.offset)} ${r.outcome}`);
      } else if (topic === LEDGER) {
        const c = checkpointOf(m);
        if (c !== undefined)
          parts.push(
            `checkpoint next ${c.next} open [${c.open.map((o) => `${o.offset}:${o.commandId}:${o.by ?? ''}`).join(' ')}] done [${(c.done ?? []).map((d) => d.offset).join(' ')}]`,
          );
      } else parts.push(`${topic} record`);
    }
  }
  return parts.join('; ');
}

/** A producer initialised with a partition's transactional id: the broker's epoch it holds. */
interface ProducerSession {
  readonly partition: number;
  /** The claim's generation it serves (a kept claim carries it on: the same producer, its transaction state included). */
  generation: number;
  /** Its epoch (DriverFaults.fencedProducerRetakes takes a newer one). */
  epoch: number;
  /** A transaction is open on it (kafkajs allows one at a time). */
  inTransaction: boolean;
  /** Times it took itself back after a fence (DriverFaults.fencedProducerRetakes). */
  retakes?: number;
}

/** Where a committed record lies: the ledger by partition (ledger partition n is command partition n's), the other topics whole. */
function logKey(topic: string, partition: number | undefined): string {
  return topic === LEDGER ? `${topic}#${partition ?? 0}` : topic;
}

/** The command partitions' committed Kafka state, and the transactional producers of every claim over them. */
export class SimulatedKafka {
  readonly #prng: Prng;
  /** Records of committed transactions, per topic (the ledger per partition: logKey), in commit order. */
  readonly committed = new Map<string, OutgoingRecord[]>();
  /** The group's committed offset of each command partition. */
  readonly groupOffsets = new Map<number, bigint>();
  /** Who committed each result record: process, partition and generation. */
  readonly resultsBy = new Map<OutgoingRecord, string>();
  /** What happened, in order (claims, commits): printed for a schedule that broke something. */
  readonly trace: string[] = [];
  /** The producer epoch of each partition's transactional id: bumped by every initialisation, it fences every producer before. */
  readonly #epochs = new Map<number, number>();
  /** Kafka faults (failed commits, lost commit answers) happen only while this holds. */
  faulty = true;
  /**
   * The one broker is down (a restart of it, with the group's coordinator: coordinatorRestart):
   * every request fails (a commit under way fails, or commits with its answer lost), and nothing is
   * written or read until it is back.
   */
  down = false;
  /** Claims kept (carried to the next generation) although another producer had fenced the partition since. */
  readonly keptAfterFence: string[] = [];
  /** The records (`partition:offset`) a send of whose handover failed (the broker was down): their next owner may report them UNKNOWN. */
  readonly lostHandovers = new Set<string>();
  /** Commits that failed (`fail`), whose answer was lost (`lost`), or whose ledger marker was lost (`hung`), for the tally. */
  readonly faults = { fail: 0, lost: 0, hung: 0, hungPublished: 0, staleReads: 0 };
  /**
   * Lost markers (`--lost-markers on`): now and then a commit ends with its marker to the ledger
   * partition lost, as Kafka 4.3.1 did in a broker's restart (docs/operations.md), its answer given
   * or lost. Its ledger records stay open (readers do not see them) until the partition's
   * transactional id writes its next marker there, which gives them its fate: the next commit
   * that writes the ledger partition (committed), a failed one (aborted), or a claim's settle after
   * its fence (committed with the checkpoint it goes on from, as ledger-store.ts settles it).
   */
  lostMarkers = false;
  /**
   * Each ledger partition's records of such transactions that a later marker aborted, past its
   * newest committed checkpoint: what a claim's read after its fence finds aborted there and
   * cannot tell the fate of (ledger-store.ts, readAfterFence: every checkpoint of one ABORT but
   * its own transaction's, which here never reaches the log).
   */
  readonly #abortedUnsure = new Map<number, OutgoingRecord[]>();
  /** Each ledger partition's open records of transactions whose marker there was lost, with their batches. */
  readonly #hanging = new Map<number, { readonly records: OutgoingRecord[]; readonly batches: bigint[] }>();
  /**
   * With lost markers, whether such a transaction lost its markers to the result and dead-letter
   * partitions too (half of them; a stream of its own). Its records there then stay open, by
   * transactional id and topic (`partition|topic`), until that id's next marker there: the commit
   * of its next transaction that writes there (committed), or the end of one that does without a
   * commit (aborted): a failed commit, an abort, or the next initialisation of the id (a fence)
   * while it is open, as Kafka's coordinator aborts an open transaction then.
   */
  publishedMarkerDraws: Prng | undefined;
  readonly #hangingPublished = new Map<string, { readonly topic: string; readonly records: OutgoingRecord[]; readonly batches: bigint[] }>();
  /** The topics each transactional id's open transaction has written (what its end without a commit aborts). */
  readonly #openWrites = new Map<number, Set<string>>();
  /** Every batch a transaction sent, by the offset its send answered with (a number of its own here): what fateOfWritten tells. */
  readonly #batches = new Map<bigint, { readonly topic: string; readonly values: readonly Buffer[]; state: 'pending' | 'committed' | 'aborted' | 'hanging' }>();
  #nextBatch = 0n;
  /** Told after each commit that moved a partition's group offset (the schedule's repeat-after-result check). */
  offsetCommitted: (partition: number, next: bigint) => void = () => undefined;

  readonly #adapters: DriverFaults;
  /** Each partition's group offset before its newest (readGroupOffset). */
  readonly #previousOffsets = new Map<number, bigint>();
  readonly #staleReads: Prng;
  /** Each partition's newest checkpoint, as decoded at a ledger length. */
  readonly #lastCheckpoints = new Map<number, { readonly length: number; readonly checkpoint: Checkpoint | undefined }>();
  /** Epochs (`partition@epoch`) whose producer committed a transaction: it worked the partition. */
  readonly #worked = new Set<string>();

  constructor(prng: Prng, adapters: DriverFaults = {}, staleReads: Prng = new Prng(0)) {
    this.#prng = prng;
    this.#adapters = adapters;
    this.#staleReads = staleReads;
  }

  groupOffset(partition: number): bigint {
    return this.groupOffsets.get(partition) ?? 0n;
  }

  /** Throws what a client hears from a broker that is down (`down`). */
  #up(request: string): void {
    if (this.down) throw new SimulatedFault(`simulated: no broker answers (${request})`);
  }

  /** One request of `host`'s to the broker: a few milliseconds (nothing if the host died), then refused if the broker is down. */
  async request(host: Incarnation, request: string, maxMs = 2): Promise<void> {
    await io(this.#prng, host, maxMs);
    this.#up(request);
  }

  /**
   * The group's offset as an admin read (OffsetFetch) may have it without KIP-447's stable
   * offsets: now and then, under faults, the one before the newest. Drawn from a stream of its own
   * (what the worker then does differently still changes the schedule's other draws).
   */
  readGroupOffset(partition: number): bigint {
    if (this.faulty && this.#staleReads.chance(0.3)) {
      const previous = this.#previousOffsets.get(partition) ?? this.groupOffset(partition);
      if (previous !== this.groupOffset(partition)) this.faults.staleReads += 1;
      return previous;
    }
    return this.groupOffset(partition);
  }

  #append(topic: string, records: readonly OutgoingRecord[]): void {
    for (const record of records) {
      // A checkpoint committed past them: a read after a fence starts there.
      if (topic === LEDGER && record.key === LEDGER_KEY) this.#abortedUnsure.delete(record.partition ?? 0);
      const key = logKey(topic, record.partition);
      const log = this.committed.get(key);
      if (log === undefined) this.committed.set(key, [record]);
      else log.push(record);
    }
  }

  /** The open ledger records of `partition` get the fate of the marker its transactional id writes there now. */
  #endHanging(partition: number, fate: 'committed' | 'aborted', who: string): void {
    const hanging = this.#hanging.get(partition);
    if (hanging === undefined) return;
    this.#hanging.delete(partition);
    if (fate === 'committed') this.#append(LEDGER, hanging.records);
    else this.#abortedUnsure.set(partition, [...(this.#abortedUnsure.get(partition) ?? []), ...hanging.records]);
    for (const id of hanging.batches) {
      const batch = this.#batches.get(id);
      if (batch !== undefined) batch.state = fate;
    }
    this.trace.push(
      `${who}'s marker ${fate === 'committed' ? 'commits' : 'aborts'} the open ledger records of partition ${partition}: ${describeSends([{ topic: LEDGER, messages: hanging.records }])}`,
    );
  }

  /** The open records of transactional id `partition` in `topic` (their marker lost) get the fate of the marker it writes there now. */
  #endHangingPublished(partition: number, topic: string, fate: 'committed' | 'aborted', who: string): void {
    const key = `${partition}|${topic}`;
    const hanging = this.#hangingPublished.get(key);
    if (hanging === undefined) return;
    this.#hangingPublished.delete(key);
    if (fate === 'committed') this.#append(topic, hanging.records);
    for (const id of hanging.batches) {
      const batch = this.#batches.get(id);
      if (batch !== undefined) batch.state = fate;
    }
    this.trace.push(
      `${who}'s marker ${fate === 'committed' ? 'commits' : 'aborts'} the open records of p${partition}'s transactional id: ${describeSends([{ topic, messages: hanging.records }])}`,
    );
  }

  /** A transaction of transactional id `partition` that wrote `topics` ended without a commit: its ABORT there ends their open records too. */
  #abortedWrites(partition: number, topics: Iterable<string>, who: string): void {
    for (const topic of topics) this.#endHangingPublished(partition, topic, 'aborted', who);
  }

  /** The next initialisation of transactional id `partition`: the coordinator aborts its open transaction, if any, with its writes. */
  #initialised(partition: number, who: string): void {
    const open = this.#openWrites.get(partition);
    this.#openWrites.delete(partition);
    if (open !== undefined) this.#abortedWrites(partition, open, who);
  }

  /** The records of `topic` readers see, and those still open whose coordinator committed them (a reader waits at them until the next marker). */
  committedOrHanging(topic: string): OutgoingRecord[] {
    const hanging = [...this.#hangingPublished.values()].filter((h) => h.topic === topic).flatMap((h) => h.records);
    return [...(this.committed.get(topic) ?? []), ...hanging];
  }

  /** Records of results and dead letters still open at the end (their coordinator committed them; no later marker of their id came). */
  get stillHanging(): number {
    return [...this.#hangingPublished.values()].reduce((sum, h) => sum + h.records.length, 0);
  }

  /**
   * What a claim's read right after its fence goes on from (ledger-store.ts, readAfterFence): the
   * newest committed checkpoint, and when the ledger partition holds open records (their marker
   * lost), `keep` of it and their checkpoints, written as the claim's settle does: committed (the
   * open records with it), or aborted when there is nothing to keep. `none` without open records.
   */
  settleAfterFence(
    partition: number,
    keep: (committed: Checkpoint | undefined, unsure: readonly Checkpoint[]) => Checkpoint | undefined,
    who: string,
  ): Checkpoint | undefined | 'none' {
    const hanging = this.#hanging.get(partition);
    const aborted = this.#abortedUnsure.get(partition) ?? [];
    if (hanging === undefined && aborted.length === 0) return 'none';
    const committed = this.lastCheckpoint(partition);
    const unsure = [...aborted, ...(hanging?.records ?? [])].flatMap((r) => checkpointOf(r) ?? []);
    const kept = unsure.length === 0 ? undefined : keep(committed, unsure);
    if (hanging !== undefined) this.#endHanging(partition, kept === undefined ? 'aborted' : 'committed', who);
    if (kept === undefined) return committed;
    this.#append(LEDGER, [{ key: LEDGER_KEY, value: encodeCheckpoint(kept), partition }]);
    this.#worked.add(`${partition}@${this.epochOf(partition)}`);
    this.trace.push(
      `${who} settled partition ${partition} after its fence: ${describeSends([{ topic: LEDGER, messages: [{ key: LEDGER_KEY, value: encodeCheckpoint(kept), partition }] }])}`,
    );
    return kept;
  }

  /** The marks of the open ledger records of `partition` (their marker lost), in the order written. */
  hangingMarks(partition: number): OpenMark[] {
    const hanging = this.#hanging.get(partition)?.records ?? [];
    return hanging.flatMap((r) => checkpointOf(r)?.open ?? []);
  }

  /** What became of a batch a transaction sent (PartitionReader.fateOfWritten, as the worker asks it). */
  fateOfWritten(baseOffset: bigint, candidates: readonly Buffer[]): { ours: Buffer[]; fate: Buffer[] | 'open' | undefined } {
    const batch = this.#batches.get(baseOffset);
    if (batch === undefined || batch.state === 'pending') return { ours: [], fate: undefined };
    const ours = batch.values.filter((value) => candidates.some((c) => c.equals(value)));
    return { ours, fate: batch.state === 'hanging' ? 'open' : batch.state === 'aborted' ? ours : [] };
  }

  /** The newest committed checkpoint of a partition (what a new claim reads back; shared: a reader that may change it takes a copy). */
  lastCheckpoint(partition: number): Checkpoint | undefined {
    const ledger = this.committed.get(logKey(LEDGER, partition)) ?? [];
    // Read often (the end of a schedule polls it): decoded again only once the ledger grew.
    const known = this.#lastCheckpoints.get(partition);
    if (known !== undefined && known.length === ledger.length) return known.checkpoint;
    const checkpoint = this.#newestCheckpoint(partition, 1);
    this.#lastCheckpoints.set(partition, { length: ledger.length, checkpoint });
    return checkpoint;
  }

  /** The `nth` newest committed checkpoint of a partition (1: the newest), read back from the ledger's end. */
  #newestCheckpoint(partition: number, nth: number): Checkpoint | undefined {
    const ledger = this.committed.get(logKey(LEDGER, partition)) ?? [];
    let seen = 0;
    for (let i = ledger.length - 1; i >= 0; i--) {
      const record = ledger[i] as OutgoingRecord;
      // The ledger partition also holds handovers (another key): only checkpoints count.
      const checkpoint = checkpointOf(record);
      if (checkpoint !== undefined && ++seen === nth) return checkpoint;
    }
    return undefined;
  }

  /** The committed checkpoint before the newest of a partition (what a reader read before the newest was written). */
  checkpointBeforeNewest(partition: number): Checkpoint | undefined {
    return this.#newestCheckpoint(partition, 2);
  }

  /** The producer epoch of `partition`'s transactional id now. */
  epochOf(partition: number): number {
    return this.#epochs.get(partition) ?? 0;
  }

  /** A fence of `partition` by an earlier owner's producer that lands late: the next epoch, fencing every producer of it. */
  lateFence(partition: number, by: string): void {
    const epoch = (this.#epochs.get(partition) ?? 0) + 1;
    this.#epochs.set(partition, epoch);
    this.trace.push(`${by}'s fence of partition ${partition} lands late: epoch ${epoch}`);
    this.#initialised(partition, by);
  }

  /** The handovers of one process: written to the ledger partitions outside any transaction, read from their tails. */
  handoversFor(host: Incarnation, log: Logger): Handovers {
    const producer: KeyedRecordProducer = {
      connected: true,
      connect: async () => undefined,
      send: async (topic, records) => {
        await io(this.#prng, host);
        if (this.down) {
          // Tried again until the grace (handovers.ts), it may still land after the next owner gave up on it and reported its command UNKNOWN.
          for (const r of records) {
            const handover = decodeHandover(r.key === null ? null : Buffer.from(r.key), r.value, handoverKey(GROUP, TOPIC));
            if (handover !== undefined) this.lostHandovers.add(`${r.partition ?? 0}:${handover.offset}`);
          }
          this.#up('Produce');
        }
        this.#append(
          topic,
          records.map((r) => ({ key: r.key, value: r.value, ...(r.partition !== undefined && { partition: r.partition }) })),
        );
        this.trace.push(`${host.name} handed over ${records.length}: ${records.map((r) => r.value.toString().slice(0, 160)).join(' | ')}`);
      },
      disconnect: async () => undefined,
    };
    return ledgerHandovers({
      ledgerTopic: LEDGER,
      key: handoverKey(GROUP, TOPIC),
      producer,
      reader: {
        readAvailable: async (topic, partition, from) => {
          await this.request(host, 'Fetch');
          const log = this.committed.get(logKey(topic, partition)) ?? [];
          const records = log
            .slice(Number(from))
            .map((r, i) => ({ offset: from + BigInt(i), key: r.key === null ? null : Buffer.from(r.key), value: r.value }));
          return { records, next: BigInt(log.length) };
        },
      },
      // From the partitions' start: short logs, read whole.
      admin: { fetchTopicOffsetsByTimestamp: async () => [...this.groupOffsets.keys(), 0].map((partition) => ({ partition, offset: '0' })) },
      maxRecordBytes: 1_000_000,
      graceMs: HANDOVER_GRACE_MS,
      pollMs: 5,
      // The result topic's committed results naming the record (result-search.ts, over this world's log).
      ...(this.#adapters.noResultSearch !== true && {
        published: async (partition: number, marks: readonly OpenMark[]) => {
          await this.request(host, 'Fetch');
          const found = new Set<bigint>();
          for (const record of this.committed.get(RESULTS) ?? []) {
            const result = resultOf(record);
            for (const mark of marks)
              if (result.commandId === mark.commandId && result.source.partition === partition && result.source.offset === mark.offset.toString())
                found.add(mark.offset);
          }
          return found;
        },
      }),
      log,
    });
  }

  /**
   * The transactional producers of one process, as TransactionalProducers has them, one per
   * partition: a claim of an older generation than the newest this process made of the partition is
   * refused; initialising a producer (a new generation, or after `discard`) takes the next epoch of
   * the partition's transactional id, which fences every earlier producer of it, in any process —
   * the broker knows no generations.
   */
  producersFor(host: Incarnation): PartitionProducers {
    const sessions = new Map<number, ProducerSession>();
    const latest = new Map<number, number>();
    return {
      forPartition: async (_topic, partition, generation = 0): Promise<TransactionalSession> => {
        // Checked when asked, as TransactionalProducers does (before any wait).
        const newest = latest.get(partition) ?? 0;
        if (generation < newest) throw new FencedError(`a claim of generation ${generation} is stale: generation ${newest} owns it now`);
        latest.set(partition, generation);
        await this.request(host, 'InitProducerId');
        let session = sessions.get(partition);
        if (session === undefined || session.generation !== generation) {
          const epoch = (this.#epochs.get(partition) ?? 0) + 1;
          this.#epochs.set(partition, epoch);
          this.#initialised(partition, `${host.name}/p${partition}/g${generation}`);
          session = { partition, generation, epoch, inTransaction: false };
          sessions.set(partition, session);
        }
        const current = session;
        return { transaction: async () => this.#begin(host, current) };
      },
      discard: async (_topic, partition, generation) => {
        if (generation === undefined || sessions.get(partition)?.generation === generation) sessions.delete(partition);
      },
      has: (_topic, partition, generation) => sessions.get(partition)?.generation === generation,
      // A kept claim: the producer moves to the next generation without initialising again.
      carry: (_topic, partition, from, to) => {
        const session = sessions.get(partition);
        if (session === undefined || session.generation !== from || to < (latest.get(partition) ?? 0)) return false;
        // Ownership keeps a claim only if nobody can have worked the partition since: no producer
        // that fenced it committed anything. (One that fenced and worked nothing, a late fence or a
        // claim whose process had left the group meanwhile, fenced this claim, which finds out at
        // its next commit, as Kafka has it.)
        const epoch = this.#epochs.get(partition) ?? 0;
        const workedSince = Array.from({ length: epoch - session.epoch }, (_, i) => session.epoch + 1 + i).some((e) => this.#worked.has(`${partition}@${e}`));
        if (workedSince)
          this.keptAfterFence.push(
            `${host.name} kept its claim of partition ${partition}, generation ${from}, though epoch ${epoch} had fenced its ${session.epoch}`,
          );
        latest.set(partition, to);
        session.generation = to;
        return true;
      },
    };
  }

  async #begin(host: Incarnation, session: ProducerSession): Promise<Transaction> {
    await this.request(host, 'AddPartitionsToTxn');
    const who = `${host.name}/p${session.partition}/g${session.generation}`;
    const fenced = (): void => {
      const epoch = this.#epochs.get(session.partition) ?? 0;
      if (session.epoch === epoch) return;
      if (this.#adapters.fencedProducerRetakes === true && (session.retakes ?? 0) < 3) {
        session.retakes = (session.retakes ?? 0) + 1;
        session.epoch = epoch + 1;
        this.#epochs.set(session.partition, session.epoch);
        this.trace.push(`${who} was fenced by epoch ${epoch}: takes its producer back (epoch ${session.epoch})`);
        return;
      }
      throw new FencedError(`the producer of epoch ${session.epoch} was fenced by epoch ${epoch}`);
    };
    fenced();
    if (session.inTransaction) throw new Error('There is already an ongoing transaction for this producer');
    session.inTransaction = true;
    const sends: { topic: string; messages: OutgoingRecord[]; batch: bigint }[] = [];
    let offsets: bigint | undefined;
    let state: 'open' | 'failed' | 'ended' = 'open';
    const end = (): void => {
      state = 'ended';
      session.inTransaction = false;
      if (this.#openWrites.get(session.partition) === writes) this.#openWrites.delete(session.partition);
    };
    // The topics besides the ledger this transaction writes (the ledger's open records are kept apart, by partition).
    const writes = new Set<string>();
    this.#openWrites.set(session.partition, writes);
    return {
      send: async (batches) => {
        await this.request(host, 'Produce');
        fenced();
        if (state !== 'open') throw new Error('Cannot continue to use transaction once ended');
        // Nothing is written before the commit here: each batch answers with a number of its own for
        // an offset, which fateOfWritten tells the fate of (a lost transaction's republish asks it).
        for (const batch of batches) if (batch.topic !== LEDGER) writes.add(batch.topic);
        return batches.map((batch) => {
          const id = this.#nextBatch++;
          this.#batches.set(id, { topic: batch.topic, values: batch.messages.map((m) => m.value), state: 'pending' });
          sends.push({ topic: batch.topic, messages: [...batch.messages], batch: id });
          return { topic: batch.topic, partition: batch.messages[0]?.partition ?? 0, baseOffset: id };
        });
      },
      sendOffsets: async (given) => {
        await this.request(host, 'AddOffsetsToTxn');
        fenced();
        if (state !== 'open') throw new Error('Cannot continue to use transaction once ended');
        const offset = given.topics.flatMap((t) => t.partitions).find((p) => p.partition === session.partition)?.offset;
        if (offset !== undefined) offsets = BigInt(offset);
      },
      commit: async () => {
        await io(this.#prng, host);
        fenced();
        if (state !== 'open') throw new Error('Cannot continue to use transaction once ended');
        const fate: 'ok' | 'fail' | 'lost' | 'hangs' | 'hangs-lost' = this.down
          ? // It reached the broker as it went down, or did not.
            this.#prng.weighted({ fail: 3, lost: 1 })
          : !this.faulty
            ? 'ok'
            : this.lostMarkers
              ? this.#prng.weighted({ ok: 88, fail: 4, lost: 4, hangs: 2, 'hangs-lost': 2 })
              : this.#prng.weighted({ ok: 92, fail: 4, lost: 4 });
        // The partitions of the ledger this transaction wrote: the marker written there ends their open records too.
        const ledgerPartitions = new Set(sends.filter((s) => s.topic === LEDGER).flatMap((s) => s.messages.map((m) => m.partition ?? 0)));
        if (fate === 'fail') {
          // Nothing committed; the transaction can still be aborted (and its abort ends the open ledger records it wrote beside).
          state = 'failed';
          this.faults.fail += 1;
          for (const { batch } of sends) this.#batches.get(batch)!.state = 'aborted';
          for (const partition of ledgerPartitions) this.#endHanging(partition, 'aborted', who);
          this.#abortedWrites(session.partition, writes, who);
          throw new SimulatedFault('simulated: the coordinator is not available (nothing committed)');
        }
        end();
        this.#worked.add(`${session.partition}@${session.epoch}`);
        for (const partition of ledgerPartitions) this.#endHanging(partition, 'committed', who);
        const hangs = fate === 'hangs' || fate === 'hangs-lost';
        const answerLost = fate === 'lost' || fate === 'hangs-lost';
        // The topics besides the ledger whose markers this commit lost too: its records there stay open with any earlier ones.
        const hangsIn = new Set(hangs && this.publishedMarkerDraws !== undefined ? [...writes].filter(() => this.publishedMarkerDraws?.chance(0.5)) : []);
        for (const topic of writes) if (!hangsIn.has(topic)) this.#endHangingPublished(session.partition, topic, 'committed', who);
        for (const { topic, messages, batch } of sends) {
          const written = this.#batches.get(batch)!;
          if (hangsIn.has(topic)) {
            written.state = 'hanging';
            const key = `${session.partition}|${topic}`;
            const hanging = this.#hangingPublished.get(key) ?? { topic, records: [], batches: [] };
            hanging.records.push(...messages);
            if (topic === RESULTS) for (const m of messages) this.resultsBy.set(m, `${who}${answerLost ? ' (answer lost)' : ''} (its marker lost)`);
            hanging.batches.push(batch);
            this.#hangingPublished.set(key, hanging);
            continue;
          }
          if (hangs && topic === LEDGER) {
            written.state = 'hanging';
            for (const partition of new Set(messages.map((m) => m.partition ?? 0))) {
              const hanging = this.#hanging.get(partition) ?? { records: [], batches: [] };
              hanging.records.push(...messages.filter((m) => (m.partition ?? 0) === partition));
              hanging.batches.push(batch);
              this.#hanging.set(partition, hanging);
            }
            continue;
          }
          written.state = 'committed';
          this.#append(topic, messages);
          if (topic === RESULTS) for (const m of messages) this.resultsBy.set(m, `${who}${answerLost ? ' (answer lost)' : ''}`);
        }
        if (hangs) this.faults.hung += 1;
        if (hangsIn.size > 0) this.faults.hungPublished += 1;
        if (offsets !== undefined) {
          this.#previousOffsets.set(session.partition, this.groupOffset(session.partition));
          this.groupOffsets.set(session.partition, offsets);
          this.offsetCommitted(session.partition, offsets);
        }
        this.trace.push(
          `${who} committed${answerLost ? ' (answer lost)' : ''}${hangs ? ` (its ledger marker lost${hangsIn.size > 0 ? `, and in ${[...hangsIn].join(', ')}` : ''}: those records stay open)` : ''}: ${describeSends(sends)}${offsets === undefined ? '' : `, offset ${offsets}`}`,
        );
        if (answerLost) {
          this.faults.lost += 1;
          throw new SimulatedFault('simulated: EndTxn timed out (it committed)');
        }
      },
      abort: async () => {
        await this.request(host, 'EndTxn');
        // As kafkajs answers an abort after a commit that failed late (the worker logs it and goes on).
        if (state === 'ended') throw new SimulatedFault('Cannot continue to use transaction once ended');
        if (state === 'open') this.#abortedWrites(session.partition, writes, who);
        end();
      },
    };
  }
}

/** The messaging service of one account, as the simulation plays it. */
class SimulatedService implements ProviderClient {
  readonly #account: string;
  readonly #prng: Prng;
  readonly #host: Incarnation;
  readonly #calls: ServiceCall[];
  readonly #markHeld: (commandId: string, account: string) => boolean;
  readonly #retryAmbiguous: boolean;

  constructor(
    account: string,
    prng: Prng,
    host: Incarnation,
    calls: ServiceCall[],
    markHeld: (commandId: string, account: string) => boolean,
    retryAmbiguous: boolean,
  ) {
    this.#account = account;
    this.#prng = prng;
    this.#host = host;
    this.#calls = calls;
    this.#markHeld = markHeld;
    this.#retryAmbiguous = retryAmbiguous;
  }

  async send(request: ProviderRequest, options: { correlationId?: string } = {}): Promise<ProviderSuccess> {
    if (this.#host.dead) await hang();
    const commandId = options.correlationId ?? '?';
    const answer = this.#prng.weighted(ANSWER_WEIGHTS as Record<Answer, number>);
    const accepted = answer === 'ok' || (MAY_HAVE_SENT.has(answer) && this.#prng.chance(0.5));
    const underCommittedMark = this.#markHeld(commandId, this.#account);
    this.#calls.push({ commandId, process: this.#host.name, account: this.#account, answer, accepted, underCommittedMark });
    // Most answers come at once; one in ten is slow (still within the handover's grace, as the
    // worker's grace is the response timeout plus a margin), so calls are under way as claims end.
    await io(this.#prng, this.#host, this.#prng.chance(0.1) ? SLOW_CALL_MS : 4);
    if (answer === 'ok') return simulatedSuccess(commandId, this.#account);
    throw simulatedFailure(answer, request.operation, this.#retryAmbiguous);
  }

  close(): void {}
}

const codec = registryFreeCodec;

/** One record of the partition: a command, a repeat of an earlier one's commandId, or bytes nobody can decode. */
interface SimRecord {
  readonly partition: number;
  readonly offset: number;
  readonly commandId: string;
  readonly kind: 'command' | 'repeat' | 'undecodable';
  readonly key: string;
  readonly value: Buffer;
  /** The command's one recipient and its tenant (a repeat's are its original's). */
  readonly to?: Recipient;
  readonly tenant?: string | undefined;
}

/** Recipients of three regions, two prefixes in one: what the velocity limits count. */
interface Recipient {
  readonly number: string;
  readonly region: string;
  readonly prefix: string;
}
const RECIPIENTS: readonly Recipient[] = [
  { number: '+8613800138000', region: 'CN', prefix: '86138' },
  { number: '+8613900139000', region: 'CN', prefix: '86139' },
  { number: '+61412345678', region: 'AU', prefix: '61412' },
  { number: '+14155550100', region: 'US', prefix: '1415' },
];
const TENANT_KEY = 'tenant';
const TENANTS: readonly (string | undefined)[] = ['acme', 'beta', undefined];

/** Each partition's records (repeats within a partition: its repeat window is its own). */
function records(prng: Prng, seed: number, partitions: number, expiresInMs: number | null): SimRecord[] {
  const all: SimRecord[] = [];
  for (let partition = 0; partition < partitions; partition++)
    all.push(...partitionRecords(prng, seed, partition, prng.int(partitions > 1 ? 3 : 5, 40), expiresInMs));
  return all;
}

function partitionRecords(prng: Prng, seed: number, partition: number, count: number, expiresInMs: number | null): SimRecord[] {
  const out: SimRecord[] = [];
  for (let offset = 0; offset < count; offset++) {
    const key = `k${prng.int(0, 5)}`;
    const earlier = out.filter((r) => r.kind === 'command');
    if (earlier.length > 0 && prng.chance(0.08)) {
      const original = prng.pick(earlier);
      out.push({ partition, offset, commandId: original.commandId, kind: 'repeat', key, value: original.value, to: original.to, tenant: original.tenant });
    } else if (prng.chance(0.04)) {
      out.push({ partition, offset, commandId: '', kind: 'undecodable', key, value: Buffer.from('not avro') });
    } else {
      const commandId = partition === 0 ? `s${seed}-c${offset}` : `s${seed}-p${partition}c${offset}`;
      const to = prng.pick(RECIPIENTS);
      const tenant = TENANTS[prng.int(0, TENANTS.length - 1)];
      const command: SendCommand = {
        commandId,
        createdAt: Date.now(),
        expiresAt: expiresInMs === null ? null : Date.now() + expiresInMs,
        metadata: tenant === undefined ? {} : { [TENANT_KEY]: tenant },
        operation: { kind: 'text', to: [to.number], signature: 'Acme', content: `hello ${commandId}` },
      };
      out.push({ partition, offset, commandId, kind: 'command', key, value: framed(1, commandType.toBuffer(commandToAvro(command))), to, tenant });
    }
  }
  return out;
}

export interface ShippedLaneViolation {
  readonly seed: number;
  /** The schedule's trace (claims, commits, handovers), for the first violation of a schedule. */
  trace?: readonly string[];
  readonly kind: Invariant;
  readonly detail: string;
}

/**
 * How a claim ends: its process crashes (the group gives the partition away once its session ran
 * out); it turns zombie (cut off from the group: its lease lapses, the group gives the partition
 * away, it hears of the new generation later); it retires and finishes before the next owner joins
 * (`retire`: a graceful stop); it retires as the partition moves to another member, handing over
 * what it has under way while the next claim starts at once (`move`); its consumer crashes and
 * rejoins as a new member, given the partition back (`reclaim`); a rebalance gives the partition
 * back to it in the very next generation (`keep`: kept if ownership says so); or its lanes hold
 * through a generation it misses (cut off while rebalancing), in which another member has the
 * partition, and the one after gives it back (`away`: never kept, its lane's state is stale); its
 * consumer crashes and the group gives its partitions to another member before it is back
 * (`dropped`: its lanes go on, out of the group); its rejoin is tried again in place past its
 * session (`stall`: its lanes hold until the lease lapses, then retire); the group coordinator
 * restarts and every member rejoins as itself (`coordinator`: claims kept, or claimed again by the
 * same process); or its process stalls with a fence under way that lands once the next owner has
 * claimed, and dies (`late-fence`: the next owner, fenced, must claim again on its own).
 */
export type ClaimEnd = 'crash' | 'zombie' | 'retire' | 'move' | 'reclaim' | 'keep' | 'away' | 'dropped' | 'stall' | 'coordinator' | 'late-fence' | 'last';
/** Every way an owner's claims end but the last (ClaimEnd). */
export const CLAIM_ENDS = ['crash', 'zombie', 'retire', 'move', 'reclaim', 'keep', 'away', 'dropped', 'stall', 'coordinator', 'late-fence'] as const;

interface Schedule {
  readonly seed: number;
  readonly prng: Prng;
  readonly ledger: boolean;
  /**
   * PROVIDER_RETRY_AMBIGUOUS (one schedule in five): an ambiguous failure (HTTP 500, a reset after
   * the request went out, a malformed answer) is retryable, so the sender may keep the command and
   * call it again later, under the mark it keeps. A second send by the same process is then the
   * operator's choice; a second send by another process is still a violation.
   */
  readonly retryAmbiguous: boolean;
  /** With the ledger off, admin reads of the group offset stale now and then too (ShippedLaneOptions.staleWithoutLedger). */
  readonly staleWithoutLedger: boolean;
  /**
   * The record handlers throw now and then (one schedule in ten; a bug, as the lane sees it): 3% of
   * sends throw before the call, 3% after it (its answer lost with the throw). The lane fails the
   * claim; a command called before the throw keeps its mark and may end UNKNOWN, as after a crash.
   * Undefined: they never throw. Its own stream, so the world's draws stay as they were.
   */
  readonly handlerCrashes: Prng | undefined;
  /** MARK_LINGER_MS of every process (0 in half the schedules, else 10 or 60 ms). */
  readonly markLingerMs: number;
  /** Which coordinator restarts are restarts of the one broker (half of them; a stream of its own, so every other draw stays). */
  readonly brokerOutages: Prng;
  readonly kafka: SimulatedKafka;
  readonly records: readonly SimRecord[];
  readonly calls: ServiceCall[];
  readonly accounts: readonly string[];
  readonly metrics: WorkerMetrics;
  readonly faults: DriverFaults;
  readonly closers: (() => void)[];
  readonly driverErrors: string[];
  /** Members silent past their session with nothing of the world keeping them so (heartbeats-within-session). */
  readonly silences: string[];
  /** Deaths that left more commands marked and waiting for a slot than the process's mark permits (unknown-is-bounded). */
  readonly unboundedUnknown: string[];
  /** Offsets committed past a record whose command had no result yet (repeat-after-result). */
  readonly repeatsPassed: string[];
  readonly ends: ClaimEnd[];
  /** Command partitions (0 … partitions − 1). */
  readonly partitions: number;
  /** The group's current assignment: each member (live, in the group) and its partitions. */
  readonly assignment: Map<Incarnation, readonly number[]>;
  /** Processes started so far (their names count), and each of them. */
  processes: number;
  readonly hosts: Incarnation[];
  /** What happened at joins, for the tally. */
  readonly tallied: string[];
  /** Commands a crash left in doubt (marked, or called, by the process that crashed): they may end UNKNOWN. */
  readonly excused: Set<string>;
  /** Sends a record handler threw in (Schedule.handlerCrashes), for the tally. */
  handlerThrows: number;
  /** How long the last owner gets to answer every record, and a process to stop, ms. */
  readonly settleMs: number;
  /** The velocity limits (VELOCITY_* and TENANT_LIMITS), in half the schedules; each process counts its own. */
  readonly velocity: SimVelocity | undefined;
  /** SPEND_CAP_HOUR in micro-units, in a third of the schedules (each process caps its own spend; its commands then expire, so those held at the cap end). */
  readonly spendCap: bigint | undefined;
}

interface SimVelocity {
  readonly settings: VelocitySettings;
  /** TENANT_LIMITS: `acme`'s own limit of recipients per region a minute, `*` for the other tenants' per prefix. */
  readonly tenants: TenantSettings;
  readonly acmeRegionPerMinute: number;
  readonly othersPrefixPerMinute: number;
}

function velocityOf(prng: Prng): SimVelocity | undefined {
  if (!prng.chance(0.5)) return undefined;
  const mode = prng.pick(['enforce', 'hold'] as const);
  const region = prng.int(2, 8);
  const prefix = prng.int(2, 8);
  const acmeRegionPerMinute = prng.int(1, 4);
  const othersPrefixPerMinute = prng.int(1, 4);
  const problems: string[] = [];
  const tenants = parseTenantLimits(
    JSON.stringify({ acme: { velocityRegionPerMinute: acmeRegionPerMinute }, '*': { velocityPrefixPerMinute: othersPrefixPerMinute } }),
    TENANT_KEY,
    3_600_000,
    problems,
  );
  if (problems.length > 0) throw new Error(`the simulation's TENANT_LIMITS: ${problems.join('; ')}`);
  return {
    settings: {
      ...DEFAULT_VELOCITY_SETTINGS,
      mode,
      limits: { prefix: { minute: prefix, day: 0 }, region: { minute: region, day: 0 } },
      holdMaxMs: 30,
    },
    tenants,
    acmeRegionPerMinute,
    othersPrefixPerMinute,
  };
}

/** The shipped sender of one claim's process: a FailoverSender over a GuardedSender per account. */
function senderFor(schedule: Schedule, host: Incarnation): CommandSender {
  const { prng, calls, velocity } = schedule;
  const destinations = velocity === undefined ? undefined : new DestinationGuard({ settings: velocity.settings });
  const tenants = velocity === undefined ? undefined : new TenantLimits(velocity.tenants, { velocity: velocity.settings });
  // The mark must be this command's, name the account called, and be one of this process's claims' (not an inherited one).
  const markHeld = (commandId: string, account: string): boolean => {
    if (!schedule.ledger) return true;
    const partition = schedule.records.find((r) => r.commandId === commandId)?.partition ?? 0;
    // A mark whose transaction lost its ledger marker counts while its records stay open: a fence's
    // settle keeps it (withHangingMarks); an abort of them later is what the other checks then see.
    const open = [...(schedule.kafka.lastCheckpoint(partition)?.open ?? []), ...schedule.kafka.hangingMarks(partition)];
    return open.some((m) => m.commandId === commandId && m.account === account && host.markOwners.has(m.by?.slice(0, m.by.lastIndexOf('.')) ?? ''));
  };
  // One per process, shared by its accounts (SharedParts.spend); the share of the cap is the whole: one process's own.
  const spend =
    schedule.spendCap === undefined
      ? undefined
      : new SpendHolds({ settings: { ...DEFAULT_SPEND_CAP_SETTINGS, caps: { hour: microsToDecimal(schedule.spendCap), day: undefined } } });
  if (spend !== undefined) schedule.closers.push(() => spend.close());
  const accounts = new Map<string, GuardedSender>();
  for (const account of schedule.accounts) {
    const gate = new ServiceGate({ backoff: { insufficient_funds: { initialMs: 2, maxMs: 10 }, circuit_open: { initialMs: 2, maxMs: 10 } } });
    const holds = new RefusalHolds({
      settings: { ...DEFAULT_REFUSAL_SCOPE_SETTINGS, maxWaitMs: 20, routeProbe: { initialMs: 2, maxMs: 10 }, fundsProbe: { initialMs: 2, maxMs: 10 } },
    });
    schedule.closers.push(
      () => gate.close(),
      () => holds.close(),
    );
    accounts.set(
      account,
      new GuardedSender({
        account,
        client: new SimulatedService(account, prng, host, calls, markHeld, schedule.retryAmbiguous),
        gate,
        holds,
        outages: new OutageCounter(3),
        rateLimiter: new RateLimiter(0),
        fundsPolicy: 'pause',
        fundsPauseMaxMs: 40,
        destinations,
        spend,
      }),
    );
  }
  const sender = new FailoverSender({ accounts, routing: { rules: [], fallback: [...schedule.accounts] }, priority: 'normal', tenants });
  const given = schedule.faults.sender?.(sender) ?? sender;
  return schedule.handlerCrashes === undefined ? given : throwingNowAndThen(given, schedule.handlerCrashes, schedule);
}

/**
 * The sender as a record handler with a bug sees it: now and then it throws, before the call or
 * after it (Schedule.handlerCrashes). A throw after the call excuses an UNKNOWN of its command, as
 * a crash does: the call's answer is lost with it and the claim fails with the mark committed.
 */
function throwingNowAndThen(inner: CommandSender, draws: Prng, schedule: Schedule): CommandSender {
  return {
    destinations: inner.destinations,
    ...(inner.tenantDestinations !== undefined && { tenantDestinations: (tenant: string | undefined) => inner.tenantDestinations?.(tenant) }),
    async send(request, correlationId, signal, expiresAt, hooks, footprint, tenant) {
      if (draws.chance(0.03)) {
        schedule.handlerThrows += 1;
        throw new SimulatedFault('simulated: the record handler threw before the call');
      }
      const outcome = await inner.send(request, correlationId, signal, expiresAt, hooks, footprint, tenant);
      if (draws.chance(0.03)) {
        schedule.handlerThrows += 1;
        schedule.excused.add(correlationId);
        throw new SimulatedFault('simulated: the record handler threw after the call');
      }
      return outcome;
    },
  };
}

/**
 * The group's offset as the worker's admin reads it (no KIP-447), for a claim and for reading a
 * failed transaction back: stale now and then with the ledger on, whose checkpoint the claim then
 * goes by (recoveryPlan). With the ledger off a stale read answers records again, a limitation of
 * running without it (docs/guarantees.md): fresh unless ShippedLaneOptions.staleWithoutLedger.
 */
function adminGroupOffset(schedule: Schedule, partition: number): bigint {
  return schedule.ledger || schedule.staleWithoutLedger ? schedule.kafka.readGroupOffset(partition) : schedule.kafka.groupOffset(partition);
}

/** The one command source of every process (CommandSource). */
const SOURCE = { priority: 'normal', topic: TOPIC, consumerGroup: GROUP, ledgerTopic: LEDGER, markLingerMs: 0 } as const;
/** MARK_LINGER_MS drawn per schedule (its own stream): marks wait up to this long to share a transaction, as a bulk topic's do. */
const MARK_LINGERS = [0, 0, 10, 60] as const;
/** Offsets the stream that draws a schedule's MARK_LINGER_MS, so other schedules keep their draws. */
const MARK_LINGER_SEED = 0x5eed_0ff9;

let baseConfig: WorkerConfig | undefined;
/** The worker's configuration for a process: the defaults, with this schedule's ledger, bounds and intervals. */
function configOf(schedule: Schedule, runAheadOne: boolean): WorkerConfig {
  const { prng } = schedule;
  baseConfig ??= loadConfig({
    KAFKA_BROKERS: 'simulated:9092',
    SCHEMA_REGISTRY_URL: 'http://simulated',
    PROVIDER_BASE_URL: 'http://simulated',
    PROVIDER_ACCESS_KEY_ID: 'simulated',
    PROVIDER_ACCESS_KEY_SECRET: 'simulated',
  });
  const commitIntervalMs = prng.int(1, 10);
  const maxRunAhead = prng.int(2, 50);
  return {
    ...baseConfig,
    commitIntervalMs,
    sessionTimeoutMs: SESSION_MS,
    maxCommandBytes: 1_000_000,
    ledger: { ...baseConfig.ledger, enabled: schedule.ledger, inDoubt: 'report', maxRunAhead: runAheadOne ? 1 : maxRunAhead, dedupWindow: DEDUP_WINDOW },
    topics: { ...baseConfig.topics, commands: TOPIC, results: RESULTS, deadLetter: DEAD_LETTERS, ledger: LEDGER },
    tenants: { ...baseConfig.tenants, key: TENANT_KEY },
    provider: { ...baseConfig.provider, retry: { ...baseConfig.provider.retry, retryAmbiguous: schedule.retryAmbiguous } },
  };
}

/** SmsWorkerError codes of the claim steps and commits refusing on purpose (a stale claim, a lapsed lease, a rebalance): retried or ended by design. */
const PROTOCOL_REFUSALS = new Set(['CLAIM_STALE', 'LEASE_EXPIRED', 'CLAIM_REBALANCING', 'TRANSACTION_LOST']);

/** A failure the simulated world caused, a refusal of the protocol's, or the group's rebalance reaching a batch handler. */
function isExpectedFailure(error: unknown): boolean {
  return isSimulatedFault(error) || error instanceof RebalanceInProgress || (error instanceof SmsWorkerError && PROTOCOL_REFUSALS.has(error.code));
}

/**
 * The process's logger: nothing is written. A line at error level, or a warning with an error,
 * is a driver error unless its error is a simulated fault or one of the protocol's refusals; claims and kept
 * claims go to the trace and the tally.
 */
function logFor(schedule: Schedule, host: Incarnation): Logger {
  return pino({
    level: 'info',
    hooks: {
      logMethod(args, _method, level) {
        const [first, second] = args as unknown[];
        const fields = typeof first === 'object' && first !== null ? (first as Record<string, unknown>) : {};
        const message = typeof first === 'string' ? first : String(second ?? '');
        if (message === 'partition claimed')
          schedule.kafka.trace.push(
            `${host.name}/g${String(fields['generation'])} claims from ${String(fields['start'])}, ${String(fields['inDoubt'])} in doubt`,
          );
        if (message === 'partitions kept across the rebalance') schedule.tallied.push('kept');
        const err = fields['err'];
        if (!isExpectedFailure(err) && (level >= 50 || (level >= 40 && err !== undefined)))
          schedule.driverErrors.push(`${host.name} logged "${message}": ${String(err)}`);
      },
    },
  });
}

/**
 * A process of the worker, as worker.ts and source-wiring.ts build one source of it: the shipped
 * SourcePipeline (the consumer's group events, LaneRouter and its lanes, the record handler and
 * senders) over the shipped PartitionOwnership and GroupMembership, with the simulation's I/O: the
 * consumer, the producers, the reads, the handovers.
 */
async function startProcess(schedule: Schedule): Promise<Incarnation> {
  const { kafka, records: all, prng } = schedule;
  const host = incarnation(`P${++schedule.processes}`);
  schedule.hosts.push(host);
  const producers = (host.producers = kafka.producersFor(host));
  const membership = new GroupMembership();
  const consumer = new SimulatedConsumer(
    {
      topic: TOPIC,
      partitions: schedule.partitions,
      records: all,
      groupOffset: (partition) => kafka.groupOffset(partition),
      prng,
      dead: () => host.dead,
      cutOff: () => host.cutOff,
      joinGroupSent: () => membership.joining(),
      // kafkajs would restart the consumer: an error out of the batch handler the world did not cause is the driver's.
      handlerFailed: (error) => {
        if (!isExpectedFailure(error)) schedule.driverErrors.push(`${host.name}'s batch handler threw: ${String(error)}`);
      },
      sessionMs: SESSION_MS,
      silent: (silenceMs) =>
        schedule.silences.push(`${host.name} (${consumer.memberId}) confirmed no heartbeat for ${silenceMs} ms, past its ${SESSION_MS} ms session`),
    },
    HEARTBEAT_MS,
    host.name,
  );
  schedule.closers.push(() => void consumer.disconnect());
  const fetchPauses = new FetchPauses(consumer, TOPIC);
  const lanes: { router?: LaneRouter } = {};
  const log = logFor(schedule, host);
  // A claim's read after its fence sometimes waits longer than the session (a hanging transaction
  // there, DECIDED_WAIT_MS): the member's heartbeats must go on meanwhile (LaneRouter.#heartbeating).
  const checkpoint = async (partition: number, fencedIn?: number): Promise<Checkpoint | undefined> => {
    await kafka.request(host, 'Fetch', fencedIn !== undefined && prng.chance(0.05) ? SESSION_MS * 1.5 : 2);
    if (!schedule.ledger) return undefined;
    // Right after the fence, open ledger records (their marker lost) are settled as the worker does (source-wiring.ts).
    const keep = (committed: Checkpoint | undefined, unsure: readonly Checkpoint[]): Checkpoint | undefined => {
      const kept = withHangingMarks(committed, unsure, { uncalled: schedule.faults.uncalledDropped !== true, fallbackAt: Date.now() - 600_000 });
      // DriverFaults.answeredUnflagged: the marks kept as if no lost transaction had answered them.
      return kept !== undefined && schedule.faults.answeredUnflagged === true ? { ...kept, open: kept.open.map(({ answered: _, ...mark }) => mark) } : kept;
    };
    const settled = fencedIn === undefined ? 'none' : kafka.settleAfterFence(partition, keep, `${host.name}/p${partition}/g${fencedIn}`);
    // A copy of its own, as a read from Kafka gives one (the cached one is the checks').
    return structuredClone(settled === 'none' ? kafka.lastCheckpoint(partition) : settled);
  };
  let claims = 0;
  const ownership = new PartitionOwnership({
    effects: {
      handover: (topic, partition) => lanes.router?.handover(topic, partition) ?? Promise.resolve(false),
      fence: async (topic, partition, generation) => {
        await producers.discard(topic, partition);
        await producers.forPartition(topic, partition, generation);
      },
      groupOffset: async (_topic, partition) => {
        await kafka.request(host, 'OffsetFetch');
        return adminGroupOffset(schedule, partition);
      },
      checkpoint: (partition, _upTo, fencedIn) => checkpoint(partition, fencedIn),
      recentCommandIds: async (_topic, partition, start, count) => {
        await kafka.request(host, 'Fetch');
        return all
          .filter((r) => r.partition === partition && BigInt(r.offset) < start && BigInt(r.offset) >= start - BigInt(count) && r.kind !== 'undecodable')
          .map((r) => ({ offset: BigInt(r.offset), commandId: r.commandId }));
      },
      carry: (topic, partition, from, to) => producers.carry(topic, partition, from, to),
      ...lostPartitionFetching(fetchPauses, consumer),
    },
    dedupWindow: DEDUP_WINDOW,
    sessionTimeoutMs: SESSION_MS,
    log,
    metrics: schedule.metrics,
    markOwner: () => {
      const owner = `${host.name}c${++claims}`;
      host.markOwners.add(owner);
      return owner;
    },
  });
  const parts: PipelineParts = {
    source: { ...SOURCE, markLingerMs: schedule.markLingerMs },
    consumer,
    ownership,
    membership,
    assignerHints: {},
    fetchPauses,
    codec,
    sender: senderFor(schedule, host),
    tracer: undefined,
    handovers: schedule.ledger ? kafka.handoversFor(host, log) : undefined,
    maxRecordBytes: 1_000_000,
    admin: {
      fetchTopicOffsets: async () =>
        partitionsOf(schedule).map((partition) => ({ partition, high: String(all.filter((r) => r.partition === partition).length), low: '0' })),
      fetchOffsets: async () => {
        await kafka.request(host, 'OffsetFetch');
        // The worker reads it to read a failed transaction back with the ledger off, and for its lag.
        return [
          { topic: TOPIC, partitions: partitionsOf(schedule).map((partition) => ({ partition, offset: String(adminGroupOffset(schedule, partition)) })) },
        ];
      },
    },
    latestCheckpoint: async (partition) => {
      const read = await checkpoint(partition);
      // The faulty reader: a read that failed, answered with what it had read before (the checkpoint
      // before the newest: the transaction then looks uncommitted, and not lost, which "no
      // checkpoint" would, below the claim's floor).
      return schedule.faults.readBackSwallowsFailures === true && kafka.faulty && prng.chance(0.2)
        ? structuredClone(kafka.checkpointBeforeNewest(partition))
        : read;
    },
    fateOfWritten: async (_topic, _partition, baseOffset, candidates) => {
      await io(prng, host);
      return schedule.faults.fateNeverTold === true ? { ours: [], fate: undefined } : kafka.fateOfWritten(baseOffset, candidates);
    },
    movedAway: async () => undefined,
    commandPartitions: schedule.partitions,
    producers,
  };
  const maxInFlight = prng.int(1, 8);
  host.permits = new SendPermits({ maxInFlight });
  const pools = host.permits.for('normal');
  const abandon = new AbortController();
  schedule.closers.push(() => abandon.abort());
  const pipeline = new SourcePipeline({
    parts,
    config: configOf(schedule, new Prng(schedule.seed + RUN_AHEAD_ONE_SEED + schedule.processes).chance(0.2)),
    lanes: {
      slots: pools.slots,
      markPermits: markPermitsOf(schedule.faults, pools.markPermits, maxInFlight),
      bytesInHand: new BytesInHand(1_000_000_000),
      metrics: schedule.metrics,
      log,
      abandon: abandon.signal,
      onProgress: () => undefined,
      onBusy: () => undefined,
    },
    metrics: schedule.metrics,
    log,
    onFatal: (error) => schedule.driverErrors.push(`${host.name}: the consumer crashed for good: ${String(error)}`),
  });
  lanes.router = pipeline.lanes;
  host.pipeline = pipeline;
  host.consumer = consumer;
  await pipeline.start(() => undefined);
  return host;
}

/** A faulty adapter (DriverFaults.unpooledMarks): every mark permit granted at once, outside the process's pool. */
const UNPOOLED_MARKS: MarkPermits = { acquire: async () => undefined, release: () => undefined, waiting: 0 };

/** The lanes' mark permits: the process's pool, or one of DriverFaults' faulty adapters. */
function markPermitsOf(faults: DriverFaults, pooled: MarkPermits, maxInFlight: number): MarkPermits {
  if (faults.unpooledMarks === true) return UNPOOLED_MARKS;
  // DriverFaults.fixedMarkPool: twice the slots, whatever the free slots and the pacing allow.
  if (faults.fixedMarkPool === true) return new PriorityPermits(2 * maxInFlight).for('normal');
  return pooled;
}

/**
 * unknown-is-bounded: a process that dies leaves UNKNOWN the commands it marked and had not called
 * yet. Those whose mark is committing or committed and that wait for a slot each hold one of its
 * mark permits (the free slots plus the marks ahead, SendPermits), so there are never more of them
 * than its mark permits, however far its lanes run ahead. (A record held for a rebalance has its
 * slot already, and gave its permit back: its bound is the slots.)
 */
function markedWaitingBounded(schedule: Schedule, host: Incarnation): void {
  const { permits, pipeline } = host;
  if (!schedule.ledger || permits === undefined || pipeline === undefined) return;
  let waiting = 0;
  for (const partition of partitionsOf(schedule)) {
    const records = pipeline.lanes.waitingOn(`${TOPIC}:${partition}`)?.records ?? {};
    waiting += (records.marking ?? 0) + (records['awaiting-slot'] ?? 0);
  }
  if (waiting > permits.markPermits)
    schedule.unboundedUnknown.push(
      `${host.name} died with ${waiting} commands marked and waiting for a slot, more than its ${permits.markPermits} mark permits`,
    );
}

/**
 * repeat-after-result: a commit that moves a partition's group offset past a record must find its
 * command's result committed (in that transaction or before). Else the record was answered as a
 * repeat of a carrier still in doubt (an earlier owner's mark of a later record of the same
 * commandId, under another key), and a claim that starts past it takes the command's own record
 * for the repeat, and the command never gets a result.
 */
function repeatAfterResult(schedule: Schedule): (partition: number, next: bigint) => void {
  const answered = new Set<string>();
  let read = 0;
  const checkedBelow = new Map<number, number>();
  return (partition, next) => {
    const results = schedule.kafka.committed.get(RESULTS) ?? [];
    for (; read < results.length; read++) answered.add(resultOf(results[read] as OutgoingRecord).commandId);
    const from = checkedBelow.get(partition) ?? 0;
    for (const record of schedule.records) {
      if (record.partition !== partition || record.offset < from || record.offset >= Number(next) || record.kind === 'undecodable') continue;
      if (!answered.has(record.commandId))
        schedule.repeatsPassed.push(
          `${record.commandId}: the offset of p${partition} passed its record at ${record.offset} (to ${next}) before the command had a result`,
        );
    }
    checkedBelow.set(partition, Math.max(from, Number(next)));
  };
}

/** The schedule's command partitions: 0 … partitions − 1. */
function partitionsOf(schedule: Schedule): number[] {
  return Array.from({ length: schedule.partitions }, (_, p) => p);
}

/**
 * The coordinator's rebalance: the partitions of the members named in `changes` change; every
 * other member keeps its own. Each member notices the rebalance, then joins the next generation.
 */
async function rebalance(schedule: Schedule, changes: ReadonlyMap<Incarnation, readonly number[]>, dropped?: Incarnation): Promise<void> {
  for (const [host, partitions] of changes) schedule.assignment.set(host, partitions);
  const members = [...schedule.assignment.keys()];
  for (const host of members) host.consumer?.noticeRebalance();
  await sleep(schedule.prng.int(0, 10));
  // A member the group had dropped joins under a new member id.
  for (const host of members) host.consumer?.join(schedule.assignment.get(host) ?? [], host === dropped);
}

/** A member the group has dropped or that left: it takes part in no rebalance any more. */
function leaveGroup(schedule: Schedule, host: Incarnation): readonly number[] {
  const partitions = schedule.assignment.get(host) ?? [];
  schedule.assignment.delete(host);
  return partitions;
}

/** A new process joins the group and is given `partitions`. */
async function newOwner(schedule: Schedule, partitions: readonly number[]): Promise<Incarnation> {
  const host = await startProcess(schedule);
  await rebalance(schedule, new Map([[host, partitions]]));
  return host;
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed-out'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'timed-out'>((resolve) => (timer = setTimeout(() => resolve('timed-out'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Lane failures the simulated world causes, through any chain of causes: a fence, a lease that
 * lapsed, a failed or unanswered commit, a failed commit not retried while the group rebalances.
 * Anything else that ends a lane is a driver bug.
 */
function isSimulatedFault(failure: unknown): boolean {
  for (let error = failure, depth = 0; error !== undefined && depth < 10; depth++) {
    if (error instanceof FencedError || error instanceof LeaseLostError || error instanceof SimulatedFault) return true;
    if (error instanceof SmsWorkerError && error.code === 'CLAIM_REBALANCING') return true;
    error = error instanceof Error ? error.cause : undefined;
  }
  return false;
}

export interface ShippedLaneOptions {
  /** Ledger on (the default) or off. */
  readonly ledger?: boolean;
  readonly faults?: DriverFaults;
  /** Counts what happened (claim ends, results, calls, Kafka faults). */
  readonly tally?: Map<string, number>;
  /** How long the members get to answer every record, and a process to stop (virtual ms). */
  readonly settleMs?: number;
  /** The ways owners' claims end, drawn from (default: all of them): a known-bad variant's test may keep to the ones it needs. */
  readonly ends?: readonly Exclude<ClaimEnd, 'last'>[];
  /** Stop after the first schedule that breaks this invariant (a known-bad variant: found). */
  readonly stopAt?: ShippedLaneViolation['kind'];
  /** Stop after the first schedule with a violation this says is the one looked for. */
  readonly stopWhen?: (violation: ShippedLaneViolation) => boolean;
  /** Commits now and then lose their ledger marker (SimulatedKafka.lostMarkers). */
  readonly lostMarkers?: boolean;
  /** With lostMarkers, such a commit loses its markers to the result and dead-letter partitions too, half the time (SimulatedKafka.publishedMarkerDraws). */
  readonly lostResultMarkers?: boolean;
  /** Counts the moves of the protocol's tables the shipped machines make over the run. */
  readonly coverage?: TransitionCoverage;
  /** PROVIDER_RETRY_AMBIGUOUS in every schedule (true) or none (false); by default one schedule in five (Schedule.retryAmbiguous). */
  readonly retryAmbiguous?: boolean;
  /** Record handlers that throw now and then in every schedule (true) or none (false); by default one schedule in ten (Schedule.handlerCrashes). */
  readonly handlerCrashes?: boolean;
  /**
   * With the ledger off, the claim's and the read-back's admin reads of the group offset are
   * stale now and then too (no KIP-447): a limitation of running without the ledger, which answers
   * again what a stale read hides (docs/guarantees.md). Off by default, so that the ledger-off
   * schedules check everything else; a test shows the limitation.
   */
  readonly staleWithoutLedger?: boolean;
}

/** A crash leaves in doubt what its process had marked or called: those may end UNKNOWN. */
function excuseCrash(schedule: Schedule, host: Incarnation): void {
  // Its own marks only (a live process hands its over); a mark it inherited in doubt was excused by its own crash.
  const mine = (by: string | undefined): boolean => by !== undefined && host.markOwners.has(by.slice(0, by.lastIndexOf('.')));
  for (const partition of partitionsOf(schedule))
    // With lost markers, also the marks of its transactions whose ledger records stay open: a settle may commit them.
    for (const mark of [...(schedule.kafka.lastCheckpoint(partition)?.open ?? []), ...schedule.kafka.hangingMarks(partition)])
      if (mine(mark.by)) schedule.excused.add(mark.commandId);
  for (const call of schedule.calls) if (call.process === host.name) schedule.excused.add(call.commandId);
}

/** One schedule: owners, each ended as ClaimEnd says, then a last one; returns what it broke. */
export async function runShippedLaneSchedule(seed: number, options: ShippedLaneOptions = {}): Promise<ShippedLaneViolation[]> {
  const prng = new Prng(seed);
  // One partition in half the schedules, two or three in the others (a process works them together: its slots, marks and bytes in hand are shared).
  const partitions = prng.chance(0.5) ? 1 : prng.int(2, 3);
  // A cap of 2 to 12 messages' price: commands held at it wait until they expire.
  const spendCap = prng.chance(1 / 3) ? PRICE_MICROS * BigInt(prng.int(2, 12)) : undefined;
  const schedule: Schedule = {
    seed,
    prng,
    ledger: options.ledger ?? true,
    retryAmbiguous: options.retryAmbiguous ?? new Prng(seed + RETRY_AMBIGUOUS_SEED).chance(0.2),
    staleWithoutLedger: options.staleWithoutLedger ?? false,
    brokerOutages: new Prng(seed + BROKER_OUTAGE_SEED),
    markLingerMs: MARK_LINGERS[new Prng(seed + MARK_LINGER_SEED).int(0, MARK_LINGERS.length - 1)] ?? 0,
    handlerCrashes: (options.handlerCrashes ?? new Prng(seed + HANDLER_CRASHES_SEED).chance(0.1)) ? new Prng(seed + HANDLER_CRASHES_SEED + 1) : undefined,
    kafka: Object.assign(new SimulatedKafka(prng, options.faults, new Prng(seed + STALE_READS_SEED)), {
      lostMarkers: options.lostMarkers ?? false,
      publishedMarkerDraws: options.lostMarkers === true && options.lostResultMarkers === true ? new Prng(seed + RESULT_MARKERS_SEED) : undefined,
    }),
    partitions,
    records: records(prng, seed, partitions, spendCap === undefined ? null : SPEND_EXPIRY_MS),
    assignment: new Map(),
    calls: [],
    accounts: prng.chance(0.5) ? ['default'] : ['default', 'backup'],
    metrics: sharedMetrics(),
    faults: options.faults ?? {},
    closers: [],
    driverErrors: [],
    silences: [],
    unboundedUnknown: [],
    repeatsPassed: [],
    ends: [],
    processes: 0,
    hosts: [],
    tallied: [],
    velocity: velocityOf(prng),
    spendCap,
    excused: new Set(),
    handlerThrows: 0,
    settleMs: options.settleMs ?? SETTLE_MS,
  };
  schedule.kafka.offsetCommitted = repeatAfterResult(schedule);
  const owners = prng.int(0, 3);
  const play = async (): Promise<void> => {
    let owner = await newOwner(schedule, partitionsOf(schedule));
    for (let n = 1; n <= owners; n++) {
      const end = prng.pick(options.ends ?? CLAIM_ENDS);
      schedule.ends.push(end);
      await sleep(prng.int(0, 30));
      owner = await endOwnership(schedule, owner, end);
    }
    schedule.ends.push('last');
    await runLast(schedule);
  };
  // Every wait inside is bounded but the ones on the shipped code (a claim waiting for its own lane
  // to hand over, a release): this bounds those, so that a driver bug cannot hang the run.
  const budgetMs = schedule.settleMs * (owners + 3);
  try {
    if ((await within(play(), budgetMs)) === 'timed-out') schedule.driverErrors.push(`the schedule did not finish within ${budgetMs} ms`);
  } catch (error) {
    schedule.driverErrors.push(`the schedule failed: ${String(error)}`);
  }
  for (const close of schedule.closers) close();
  tallyOf(schedule, options.tally);
  const violations = check(schedule);
  if (violations[0] !== undefined) violations[0].trace = [...schedule.kafka.trace, ...schedule.ends.map((end, i) => `owner ${i + 1} ended: ${end}`)];
  return violations;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Whether `done` came true within `ms`, looked at every 5 ms (the world's state, which tells no one when it changes). */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  const looked = within(
    (async () => {
      while (!done()) await sleep(5);
    })(),
    ms,
  );
  return (await looked) !== 'timed-out';
}

/**
 * Ends `owner`'s ownership of its partitions as `end` says, through the group's events to the
 * consumers (the shipped pipelines react); other members keep theirs. Returns the next owner (the
 * same process, for a keep or a reclaim).
 */
async function endOwnership(schedule: Schedule, owner: Incarnation, end: Exclude<ClaimEnd, 'last'>): Promise<Incarnation> {
  const { prng } = schedule;
  const mine = schedule.assignment.get(owner) ?? [];
  switch (end) {
    case 'crash': {
      die(schedule, owner);
      // The group gives its partitions away once its session has run out.
      await sleep(SESSION_MS);
      return newOwner(schedule, mine);
    }
    case 'zombie': {
      // Cut off from the group: its lease lapses (and it stops calling) a margin before the group
      // drops it; its calls and transactions under way go on. Its next heartbeat, a little later,
      // finds it dropped: it joins again as a new member, a rebalance of the whole group, and is
      // given nothing (the others keep theirs).
      owner.cutOff = true;
      return givenAway(schedule, owner, SESSION_MS, () => void (owner.cutOff = false));
    }
    case 'retire': {
      // A graceful stop (SourcePipeline.release): the lanes retire and commit, the member leaves.
      if (owner.pipeline !== undefined && (await within(owner.pipeline.release(), schedule.settleMs)) === 'timed-out')
        schedule.driverErrors.push(`${owner.name} did not stop within ${schedule.settleMs} ms`);
      leaveGroup(schedule, owner);
      return newOwner(schedule, mine);
    }
    case 'move': {
      // A rebalance gives some of its partitions (all, for one) to a new member: their lanes retire
      // as moved, handing over what they have under way, while the new owner claims at once.
      const moving = mine.length <= 1 ? mine : mine.filter((_p, i) => i === 0 || prng.chance(0.5));
      const next = await startProcess(schedule);
      await rebalance(
        schedule,
        new Map([
          [owner, mine.filter((p) => !moving.includes(p))],
          [next, moving],
        ]),
      );
      return next;
    }
    case 'reclaim': {
      // Its consumer crashes and restarts in place: out of the group, it joins again as a new member
      // and is given its partitions back; each claim waits for its own earlier lane.
      owner.consumer?.crashAndRestart(new SimulatedFault('simulated: the consumer crashed'));
      await sleep(prng.int(0, 20));
      await rebalance(schedule, new Map([[owner, mine]]));
      return owner;
    }
    case 'dropped':
      // Its consumer crashes and restarts in place, and the group, its old member gone, gives its
      // partitions to another member before it joins again (as a new member, given nothing). Its
      // lanes go on meanwhile, out of the group: none of them is current any more.
      owner.consumer?.crashAndRestart(new SimulatedFault('simulated: the consumer crashed'));
      return givenAway(schedule, owner, 0);
    case 'stall':
      // Its rejoin fails and is tried again in place past its session (no LeaveGroup, no crash): its
      // lanes hold, no heartbeat renews its lease, so they retire once it lapses and hand over what
      // they hold (SourcePipeline's hold watch); the group drops it and gives its partitions to
      // another member; then its join goes through, as a new member, given nothing.
      owner.consumer?.noticeRebalance();
      owner.consumer?.joinRetried();
      return givenAway(schedule, owner, SESSION_MS + prng.int(0, 100));
    case 'coordinator':
      await coordinatorRestart(schedule);
      return owner;
    case 'late-fence':
      return lateFence(schedule, owner);
    case 'keep': {
      // The partitions stay with their members in the very next generation.
      await rebalance(schedule, new Map());
      return owner;
    }
    case 'away': {
      // Its join misses a generation (tried again in place), in which another member has its
      // partitions; the next generation gives them back. Its lanes held all along: their state is stale.
      owner.consumer?.noticeRebalance();
      const other = await startProcess(schedule);
      schedule.assignment.delete(owner);
      schedule.assignment.set(other, mine);
      for (const host of schedule.assignment.keys()) host.consumer?.noticeRebalance();
      for (const [host, partitions] of schedule.assignment) host.consumer?.join(partitions);
      owner.consumer?.joinRetried();
      await sleep(prng.int(0, 150));
      await rebalance(
        schedule,
        new Map([
          [other, []],
          [owner, mine],
        ]),
      );
      return owner;
    }
  }
}

/** A process dies (every I/O of it hangs from now on): the group drops it once its session has run out. */
function die(schedule: Schedule, host: Incarnation): void {
  markedWaitingBounded(schedule, host);
  host.dead = true;
  excuseCrash(schedule, host);
  leaveGroup(schedule, host);
}

/**
 * The group drops `owner` (after `awayMs`) and gives its partitions to a new member; a moment later
 * `owner`, back (`back`), joins again as a new member and is given nothing. Returns the new owner.
 */
async function givenAway(schedule: Schedule, owner: Incarnation, awayMs: number, back?: () => void): Promise<Incarnation> {
  const mine = leaveGroup(schedule, owner);
  await sleep(awayMs);
  const next = await newOwner(schedule, mine);
  await sleep(schedule.prng.int(0, 100));
  back?.();
  await rebalance(schedule, new Map([[owner, []]]), owner);
  return next;
}

/**
 * The group coordinator restarts: every member stops hearing from the group at once and keeps its
 * member id; the restarted coordinator loads the group with every member and starts their sessions
 * afresh. Half the time the members heartbeat on in their generation once it is back (their
 * heartbeats failed meanwhile: nothing moves, and a claim whose lease lapsed meanwhile stops
 * sending until the group confirms it again); else each had heard "not the coordinator" and
 * rejoins as itself with its own partitions (its lanes held meanwhile): kept if its lease held,
 * else claimed afresh by the same process, which takes its own marks and answers from memory.
 * Mostly short; now and then past the lease.
 */
async function coordinatorRestart(schedule: Schedule): Promise<void> {
  const { prng } = schedule;
  const members = [...schedule.assignment.keys()];
  const rejoin = prng.chance(0.5);
  schedule.tallied.push(rejoin ? 'coordinator rejoin' : 'coordinator in place');
  // Half the time the one broker restarts with it: every Kafka request fails until it is back.
  const brokerDown = schedule.brokerOutages.chance(0.5);
  if (brokerDown) {
    schedule.tallied.push('broker restart');
    schedule.kafka.down = true;
    schedule.kafka.trace.push('the broker went down');
  }
  for (const host of members) {
    if (!rejoin) host.cutOff = true;
    else {
      host.consumer?.noticeRebalance();
      host.consumer?.joinRetried();
    }
  }
  await sleep(prng.chance(0.3) ? prng.int(SESSION_MS, 2 * SESSION_MS) : prng.int(20, SESSION_MS / 2));
  if (brokerDown) {
    schedule.kafka.down = false;
    schedule.kafka.trace.push('the broker is back');
  }
  for (const host of members) {
    if (!rejoin) host.cutOff = false;
    else host.consumer?.join(schedule.assignment.get(host) ?? []);
  }
}

/**
 * `owner`'s process stalls right after sending a fence (InitProducerId) of one of its partitions,
 * past its session: the group gives its partitions away; the fence lands once the next owner has
 * fenced the partition itself (kafkajs sent it again after the pause), fencing that owner; then the
 * process dies. The next owner must claim the partition again on its own (nobody rebalances).
 */
async function lateFence(schedule: Schedule, owner: Incarnation): Promise<Incarnation> {
  const { prng, kafka } = schedule;
  const partition = prng.pick(schedule.assignment.get(owner) ?? []);
  const before = partition === undefined ? 0 : kafka.epochOf(partition);
  const mine = schedule.assignment.get(owner) ?? [];
  die(schedule, owner);
  await sleep(SESSION_MS);
  const next = await newOwner(schedule, mine);
  if (partition === undefined) return next;
  if (await until(() => kafka.epochOf(partition) !== before, schedule.settleMs)) schedule.tallied.push('late fence on a live claim');
  await sleep(prng.int(0, 80));
  kafka.lateFence(partition, owner.name);
  return next;
}

/** Every record is answered: what was committed leaves the next claim nothing to take. */
function allAnswered(schedule: Schedule): boolean {
  return partitionsOf(schedule).every((partition) => leftToTake(schedule, partition).length === 0);
}

/** The records of `partition` the next claim would take (recoveryPlan): none once every one is answered. */
function leftToTake(schedule: Schedule, partition: number): SimRecord[] {
  const { kafka } = schedule;
  const { start, answered } = recoveryPlan(kafka.groupOffset(partition), schedule.ledger ? kafka.lastCheckpoint(partition) : undefined);
  return schedule.records.filter((r) => r.partition === partition && BigInt(r.offset) >= start && !answered.has(BigInt(r.offset)));
}

/**
 * The end, without Kafka faults from now: once every record is answered the members stop
 * gracefully, and no other live process may still have a lane of any partition.
 */
async function runLast(schedule: Schedule): Promise<void> {
  schedule.kafka.faulty = false;
  if (!(await until(() => allAnswered(schedule), schedule.settleMs)))
    schedule.driverErrors.push(`the members did not answer every record within ${schedule.settleMs} ms`);
  // Every member stops gracefully, together (a rollout's last step).
  const members = [...schedule.assignment.keys()];
  const stopped = await Promise.all(members.map((host) => (host.pipeline === undefined ? 'stopped' : within(host.pipeline.release(), schedule.settleMs))));
  members.forEach((host, i) => {
    if (stopped[i] === 'timed-out') schedule.driverErrors.push(`${host.name} did not stop within ${schedule.settleMs} ms`);
  });
  // No live process may keep a lane of any partition (a zombie's, a moved one's) past then.
  const lanesOf = (host: Incarnation): number[] => partitionsOf(schedule).filter((p) => host.pipeline?.lanes.waitingOn(`${TOPIC}:${p}`) !== undefined);
  const lingering = (): Incarnation[] => schedule.hosts.filter((h) => !h.dead && lanesOf(h).length > 0);
  if (!(await until(() => lingering().length === 0, schedule.settleMs)))
    for (const host of lingering())
      for (const p of lanesOf(host))
        schedule.driverErrors.push(
          `${host.name} still has a lane of partition ${p}: ${JSON.stringify(host.pipeline?.lanes.waitingOn(`${TOPIC}:${p}`), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
        );
}

let metrics: WorkerMetrics | undefined;
/** One registry for every schedule: the lanes only count into it. */
function sharedMetrics(): WorkerMetrics {
  metrics ??= createMetrics();
  return metrics;
}

interface PublishedResult {
  readonly commandId: string;
  readonly outcome: string;
  /** The record it answers (Avro: the offset as a string). */
  readonly source: { readonly partition: number; readonly offset: string };
}

/** A committed result record's command and outcome (past its 5-byte registry frame). */
function resultOf(record: OutgoingRecord): PublishedResult {
  return resultType.fromBuffer(record.value.subarray(5)) as PublishedResult;
}

function publishedResults(kafka: SimulatedKafka): (PublishedResult & { readonly by: string })[] {
  return kafka.committedOrHanging(RESULTS).map((r) => ({ ...resultOf(r), by: kafka.resultsBy.get(r) ?? '?' }));
}

/** A handover of a record of the command (its first, or a repeat under another key) was not written: the broker was down. */
function handoverLost(schedule: Schedule, commandId: string): boolean {
  return schedule.records.some((r) => r.kind !== 'undecodable' && r.commandId === commandId && schedule.kafka.lostHandovers.has(`${r.partition}:${r.offset}`));
}

function check(schedule: Schedule): ShippedLaneViolation[] {
  const { seed, kafka, calls } = schedule;
  const out: ShippedLaneViolation[] = [];
  const add = (kind: ShippedLaneViolation['kind'], detail: string): void => void out.push({ seed, kind, detail });
  for (const error of schedule.driverErrors) add('no-driver-error', error);
  for (const silence of schedule.silences) add('heartbeats-within-session', silence);
  for (const kept of kafka.keptAfterFence) add('keep-only-unfenced', kept);
  for (const death of schedule.unboundedUnknown) add('unknown-is-bounded', death);
  for (const passed of schedule.repeatsPassed) add('repeat-after-result', passed);
  const results = publishedResults(kafka);
  const deadLetters = kafka.committedOrHanging(DEAD_LETTERS);
  for (const record of schedule.records) {
    if (record.kind === 'repeat') continue;
    if (record.kind === 'undecodable') {
      const letters = deadLetters.filter((l) => deadLetterSource(l) === `${record.partition}@${record.offset}`).length;
      if (letters !== 1) add('exactly-one-result', `${record.partition}@${record.offset} (undecodable) has ${letters} dead letters`);
      continue;
    }
    const id = record.commandId;
    const own = calls.filter((c) => c.commandId === id);
    const accepted = own.filter((c) => c.accepted).length;
    // A request that may have reached the service (answered ok, or ambiguously) counts as a send,
    // whether or not the service happened to accept it: a second one is a second send at worst.
    const reached = own.filter((c) => c.answer === 'ok' || MAY_HAVE_SENT.has(c.answer));
    // Under PROVIDER_RETRY_AMBIGUOUS one process may send again what it may have sent (the operator's choice); no other process may.
    const reachedBy = new Set(reached.map((c) => c.process)).size;
    // At most once is the ledger's promise: without it a new claim may call again what an earlier one called.
    if ((schedule.retryAmbiguous ? reachedBy : reached.length) > 1 && schedule.ledger)
      add(
        'at-most-one-send',
        `${id}: ${reached.length} requests may have reached the service (accepted ${accepted})${schedule.retryAmbiguous ? `, by ${reachedBy} processes` : ''} (${own.map((c) => `${c.process}:${c.answer}`).join(', ')})`,
      );
    for (const call of own) if (!call.underCommittedMark) add('call-under-committed-mark', `${id}: ${call.process} called before the ledger held its mark`);
    const mine = results.filter((r) => r.commandId === id);
    if (mine.length !== 1) {
      add(
        'exactly-one-result',
        `${id} @${record.partition}:${record.offset}: ${mine.length} results (${mine.map((r) => `${r.outcome} by ${r.by}`).join(', ')}); claims ${schedule.ends.join(', ')}`,
      );
      continue;
    }
    const outcome = mine[0]?.outcome;
    if (outcome === 'SENT' && (schedule.ledger && !schedule.retryAmbiguous ? accepted !== 1 : accepted < 1))
      add('result-tells-the-truth', `${id}: SENT, accepted ${accepted} times`);
    // (Without the ledger a later claim's call may fail where an earlier claim's was accepted: its result tells of the last.)
    if (outcome === 'FAILED' && accepted !== 0 && (schedule.ledger || own.length <= 1))
      add('result-tells-the-truth', `${id}: FAILED, but the service accepted it`);
    // Every call answered for sure (sent, or surely not): the process that made it knows, and hands it over.
    const answered = own.length > 0 && own.every((c) => !MAY_HAVE_SENT.has(c.answer));
    if (outcome === 'UNKNOWN' && (own.length === 0 || answered) && !schedule.excused.has(id) && !handoverLost(schedule, id))
      add(
        'unknown-has-a-cause',
        `${id}: UNKNOWN, ${own.length === 0 ? 'never called' : `every call answered (${own.map((c) => c.answer).join(', ')})`}, and no crash left it in doubt`,
      );
  }
  // Where the next claim would start (recoveryPlan): results published ahead of the group offset
  // move only the checkpoint's `next` until a later record's transaction moves the offset.
  out.push(...velocityViolations(schedule), ...spendViolations(schedule), ...keyOrderViolations(schedule));
  // A claim whose records past it were all answered ahead by an earlier owner skips them without a
  // transaction: they stay behind the offset, answered in the checkpoint, until a later record's
  // transaction moves it. What counts is what the next claim would do: take nothing again.
  for (const partition of partitionsOf(schedule)) {
    const redone = leftToTake(schedule, partition);
    if (redone.length > 0)
      add('exactly-one-result', `the next claim of partition ${partition} would take ${redone.map((r) => `@${r.offset} (${r.kind})`).join(', ')} again`);
  }
  return out;
}

/**
 * key-order: each process's calls of commands with the same key (of one partition) start in offset
 * order (the calls are listed as they started). A command called again (failed over, retried, sent
 * again by a later claim with the ledger off) is not out of order. Commands whose commandId has
 * more than one record (repeats, under the same key or another) are left out: which of their
 * records carries the call is the repeat window's choice. Per process, not over every process: a
 * record an earlier owner answered without a call (a velocity limit, a paused route) and did not
 * commit is decided again by the next owner, which may call it although the earlier owner had
 * called later records of its key (found at seed 28 with the ledger off: the first owner's
 * velocity counts refused it, the next owner's, fresh, let it through).
 */
function keyOrderViolations(schedule: Schedule): ShippedLaneViolation[] {
  const records = new Map<string, SimRecord[]>();
  for (const r of schedule.records) if (r.kind !== 'undecodable') records.set(r.commandId, [...(records.get(r.commandId) ?? []), r]);
  const keys = new Map<string, { max: SimRecord; offsets: Set<number> }>();
  const out: ShippedLaneViolation[] = [];
  for (const call of schedule.calls) {
    const own = records.get(call.commandId);
    const record = own?.length === 1 ? own[0] : undefined;
    if (record === undefined) continue;
    const keyOf = `${call.process}|${record.partition}|${record.key}`;
    const key = keys.get(keyOf);
    if (key === undefined) {
      keys.set(keyOf, { max: record, offsets: new Set([record.offset]) });
      continue;
    }
    if (record.offset < key.max.offset && !key.offsets.has(record.offset))
      out.push({
        seed: schedule.seed,
        kind: 'key-order',
        detail:
          `key ${record.key} of partition ${record.partition}: ${call.commandId} (@${record.offset}) first called by ${call.process} after ${key.max.commandId} (@${key.max.offset}), a later record of its key; ` +
          `calls of the key: ${schedule.calls
            .filter(
              (c) => c.process === call.process && records.get(c.commandId)?.some((r) => r.partition === record.partition && r.key === record.key) === true,
            )
            .map((c) => `${c.commandId}:${c.process}:${c.answer}`)
            .join(', ')}`,
      });
    key.offsets.add(record.offset);
    if (record.offset > key.max.offset) key.max = record;
  }
  return out;
}

/**
 * Each process counts its own recipients (the limits are deployment-wide, shared by owned
 * partitions): the commands one process called, over all its partitions, per region and prefix, and
 * per tenant, never exceed the limits (all of a schedule is within one minute).
 */
function velocityViolations(schedule: Schedule): ShippedLaneViolation[] {
  const { velocity, seed } = schedule;
  if (velocity === undefined) return [];
  const byId = new Map(schedule.records.filter((r) => r.kind === 'command').map((r) => [r.commandId, r]));
  const called = new Map<string, Set<string>>();
  for (const call of schedule.calls) called.set(call.process, (called.get(call.process) ?? new Set()).add(call.commandId));
  const out: ShippedLaneViolation[] = [];
  for (const [process, ids] of called) {
    const commands = [...ids].map((id) => byId.get(id)).filter((r): r is SimRecord => r !== undefined);
    const over = (what: string, limit: number, key: (r: SimRecord) => string | undefined): void => {
      const counts = new Map<string, number>();
      for (const r of commands) {
        const k = key(r);
        if (k !== undefined) counts.set(k, (counts.get(k) ?? 0) + 1);
      }
      for (const [k, n] of counts)
        if (n > limit)
          out.push({ seed, kind: 'within-velocity-limits', detail: `${process} called ${n} commands to ${what} ${k}, over its limit of ${limit}` });
    };
    const { limits } = velocity.settings;
    over('region', limits.region.minute, (r) => r.to?.region);
    over('prefix', limits.prefix.minute, (r) => r.to?.prefix);
    over('acme’s region', velocity.acmeRegionPerMinute, (r) => (r.tenant === 'acme' ? r.to?.region : undefined));
    over('a tenant’s prefix', velocity.othersPrefixPerMinute, (r) => (r.tenant === 'beta' ? r.to?.prefix : undefined));
  }
  return out;
}

/**
 * Each process caps its own spend (SpendCap): what the service charged its calls (every accepted
 * call one message at PRICE_MICROS) stays within the cap, unless the calls made before the process
 * knew any price (one at a time, each with no estimate) were charged more than that: then within
 * those and the one that told the price (docs/guards.md).
 */
function spendViolations(schedule: Schedule): ShippedLaneViolation[] {
  const { spendCap, seed } = schedule;
  if (spendCap === undefined) return [];
  const charged = new Map<string, { total: bigint; beforePrice: bigint }>();
  const priced = new Set<string>();
  for (const call of schedule.calls) {
    const before = !priced.has(call.process);
    if (call.answer === 'ok') priced.add(call.process);
    if (!call.accepted) continue;
    const sum = charged.get(call.process) ?? { total: 0n, beforePrice: 0n };
    charged.set(call.process, { total: sum.total + PRICE_MICROS, beforePrice: sum.beforePrice + (before ? PRICE_MICROS : 0n) });
  }
  return [...charged]
    .filter(([, sum]) => sum.total > (spendCap > sum.beforePrice ? spendCap : sum.beforePrice))
    .map(([process, sum]) => ({
      seed,
      kind: 'within-spend-cap' as const,
      detail: `${process} was charged ${sum.total} micro-units, over its cap of ${spendCap} (and the ${sum.beforePrice} charged until it knew a price)`,
    }));
}

/** Micro-units as the decimal a setting is written in ("0.045000"). */
function microsToDecimal(micros: bigint): string {
  return `${micros / 1_000_000n}.${String(micros % 1_000_000n).padStart(6, '0')}`;
}

/** Where a dead letter's record came from: `partition@offset`. */
function deadLetterSource(letter: OutgoingRecord): string {
  const decoded = deadLetterType.fromBuffer(letter.value.subarray(5)) as {
    partition?: unknown;
    offset?: unknown;
    source?: { partition?: unknown; offset?: unknown };
  };
  return `${Number(decoded.source?.partition ?? decoded.partition)}@${Number(decoded.source?.offset ?? decoded.offset)}`;
}

function tallyOf(schedule: Schedule, tally: Map<string, number> | undefined): void {
  if (tally === undefined) return;
  const count = (key: string, n = 1): void => void tally.set(key, (tally.get(key) ?? 0) + n);
  for (const end of schedule.ends) count(`claim ${end}`);
  for (const what of schedule.tallied) count(what);
  for (const result of publishedResults(schedule.kafka)) count(`result ${result.outcome}`);
  count('calls', schedule.calls.length);
  count('commit failed', schedule.kafka.faults.fail);
  count('commit answer lost', schedule.kafka.faults.lost);
  count('group offset read stale', schedule.kafka.faults.staleReads);
  count('ledger marker lost', schedule.kafka.faults.hung);
  count('result markers lost too', schedule.kafka.faults.hungPublished);
  count('results left open at the end', schedule.kafka.stillHanging);
  const handovers = partitionsOf(schedule)
    .flatMap((partition) => schedule.kafka.committed.get(logKey(LEDGER, partition)) ?? [])
    .filter((r) => r.key !== null && r.key.toString() === handoverKey(GROUP, TOPIC)).length;
  count(`partitions ${schedule.partitions}`);
  count('handovers written', handovers);
  if (schedule.velocity !== undefined) count(`velocity ${schedule.velocity.settings.mode}`);
  if (schedule.spendCap !== undefined) count('spend cap');
  if (schedule.retryAmbiguous) count('retry ambiguous');
  count(`mark linger ${schedule.markLingerMs} ms`);
  count('record handler threw', schedule.handlerThrows);
  // A process that called a command again after an answer that may hide a send (kept under PROVIDER_RETRY_AMBIGUOUS).
  const seen = new Map<string, ServiceCall>();
  for (const call of schedule.calls) {
    const earlier = seen.get(`${call.process}|${call.commandId}`);
    if (earlier !== undefined && MAY_HAVE_SENT.has(earlier.answer)) count('called again after an ambiguous answer');
    seen.set(`${call.process}|${call.commandId}`, call);
  }
}

/**
 * Runs `count` schedules from `firstSeed`, one at a time, each on a virtual clock of its own
 * (virtual-time.ts): the seed alone replays a schedule, interleaving included.
 */
export async function runShippedLaneSchedules(firstSeed: number, count: number, options: ShippedLaneOptions = {}): Promise<ShippedLaneViolation[]> {
  const violations: ShippedLaneViolation[] = [];
  const restoreCoverage = options.coverage?.install();
  try {
    for (let seed = firstSeed; seed < firstSeed + count; seed++) {
      // A schedule whose work hangs with nothing left to wait for is that schedule's violation, not the run's end.
      const found = await onVirtualTime(seed, () => runShippedLaneSchedule(seed, options)).catch((error: unknown) => [
        { seed, kind: 'no-driver-error' as const, detail: `the schedule failed: ${String(error)}` },
      ]);
      violations.push(...found);
      if (options.stopAt !== undefined && found.some((v) => v.kind === options.stopAt)) break;
      if (options.stopWhen !== undefined && found.some(options.stopWhen)) break;
    }
  } finally {
    restoreCoverage?.();
  }
  return violations;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      schedules: { type: 'string', default: '500' },
      seed: { type: 'string', default: '1' },
      ledger: { type: 'string', default: 'on' },
      variant: { type: 'string', default: 'correct' },
      settle: { type: 'string' },
      'lost-markers': { type: 'string', default: 'off' },
      'lost-result-markers': { type: 'string', default: 'off' },
    },
  });
  const variant = values.variant as ShippedVariant;
  if (!SHIPPED_VARIANTS.includes(variant)) throw new Error(`--variant must be one of ${SHIPPED_VARIANTS.join(', ')}`);
  const { restore, faults } = installVariant(variant);
  const started = Date.now();
  const tally = new Map<string, number>();
  const coverage = new TransitionCoverage();
  const violations = await runShippedLaneSchedules(Number(values.seed), Number(values.schedules), {
    coverage,
    ledger: values.ledger !== 'off',
    lostMarkers: values['lost-markers'] === 'on' || values['lost-result-markers'] === 'on',
    lostResultMarkers: values['lost-result-markers'] === 'on',
    tally,
    faults,
    ...(values.settle !== undefined && { settleMs: Number(values.settle) }),
  });
  restore();
  console.log(
    `shipped-lane simulation: ${values.schedules} schedules from seed ${values.seed}, ledger ${values.ledger}, lost markers ${values['lost-markers']}, lost result markers ${values['lost-result-markers']}, variant ${variant}, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  console.log(
    [...tally]
      .sort()
      .map(([key, n]) => `${key} ${n}`)
      .join(', '),
  );
  console.log(coverage.summary());
  const byKind = violationsByKind(violations);
  console.log(
    violations.length === 0 ? '0 violations' : [...byKind].map(([kind, { count, firstSeed }]) => `${kind}: ${count} (first at seed ${firstSeed})`).join('\n'),
  );
  for (const v of violations.slice(0, 8)) console.log(`  seed ${v.seed} ${v.kind}: ${v.detail}`);
  const traced = violations.find((v) => v.trace !== undefined);
  if (traced !== undefined) console.log(`\nseed ${traced.seed}, what happened:\n${(traced.trace ?? []).map((line) => `  ${line}`).join('\n')}`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
