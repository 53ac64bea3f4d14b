/**
 * A seeded simulation of one partition through a succession of claims, each driven by the shipped
 * code: `PartitionLane` (the effect interpreter around the partition machine), the shipped record
 * handler, and a shipped `FailoverSender` over one or two shipped `GuardedSender`s with their real
 * gates and holds. Only I/O is swapped:
 * - Kafka: `SimulatedKafka`, one partition's committed log (ledger checkpoints, results, dead
 *   letters, the group offset) behind the worker's own port (`PartitionProducers`): transactions
 *   that commit atomically, producers fenced by a newer generation, commits that fail or whose
 *   answer is lost after they committed;
 * - the service: `SimulatedService`, a `ProviderClient` whose answers come from the seed (and
 *   which records, per command, every call and whether the service accepted it);
 * - the codec: the real Avro types, without a registry.
 *
 * Each claim is built by the shipped `buildClaim` from what the log committed after it fenced, and
 * hands over through the shipped `ledgerHandovers` (ledger on). A claim ends by a crash (its
 * process dies: every call and transaction it has under way hangs, nothing more of it happens), as
 * a zombie, retired, moved or reclaimed by its own process (ClaimEnd); the last claim runs without
 * Kafka faults until every record is answered. Then, per command:
 * - at-most-one-send: the service accepted it at most once, over all claims and accounts;
 * - call-under-committed-mark: every call started while the ledger's committed checkpoint held the
 *   record's mark (ledger on), so that a crash can never leave a call nobody knows of;
 * - exactly-one-result: each command (not a repeat, not undecodable) has one committed result,
 *   each undecodable record one dead letter, and the group offset passed every record;
 * - result-tells-the-truth: SENT only if the service accepted it; FAILED only if it did not;
 * - unknown-has-a-cause: an UNKNOWN for a command never called, or whose every call was answered
 *   for sure, only in a schedule where a claim crashed (a claim that ends any other way hands over
 *   what it marked, never called or had answered; the same process takes its own from memory);
 * - no-driver-error: no lane failed for anything but the simulated Kafka faults (a machine
 *   assertion, a lane's own bug, shows here).
 *
 * The timers are real (a few ms): a seed replays a schedule's draws, not always its interleaving.
 * Run: `node tools/simulate/shipped-lane.ts [--schedules 500] [--seed 1] [--parallel 8] [--ledger on|off]`.
 */
import { parseArgs } from 'node:util';
import { commandType, deadLetterType, resultType } from '../../src/contracts/avro.ts';
import { commandToAvro, type SendCommand } from '../../src/contracts/command.ts';
import { DEAD_LETTER_CODES } from '../../src/contracts/dead-letter.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../src/contracts/index.ts';
import {
  FencedError,
  type KeyedRecordProducer,
  type OutgoingRecord,
  type PartitionProducers,
  type Transaction,
  type TransactionalSession,
} from '../../src/kafka/ports.ts';
import { createMetrics, type WorkerMetrics } from '../../src/metrics/metrics.ts';
import { createLogger } from '../../src/observability/logger.ts';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from '../../src/provider/types.ts';
import { BytesInHand } from '../../src/worker/bytes-in-hand.ts';
import { FailoverSender, type CommandSender } from '../../src/worker/failover-sender.ts';
import { GuardedSender } from '../../src/worker/guarded-sender.ts';
import { handoverKey } from '../../src/worker/handover-record.ts';
import { ledgerHandovers, type Handovers } from '../../src/worker/handovers.ts';
import { checkpointKey, decodeCheckpoint, recoveryPlan, type Checkpoint } from '../../src/worker/ledger-checkpoint.ts';
import { PartitionLane, type LaneContext } from '../../src/worker/partition-lane.ts';
import { buildClaim, LeaseLostError } from '../../src/worker/protocol/claim.ts';
import { RateLimiter } from '../../src/worker/rate-limiter.ts';
import type { RecordCodec } from '../../src/worker/record-outcomes.ts';
import { RefusalHolds } from '../../src/worker/refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS } from '../../src/worker/refusal-scopes.ts';
import { Semaphore } from '../../src/worker/semaphore.ts';
import { OutageCounter, ServiceGate } from '../../src/worker/service-gate.ts';
import { simulatedFailure, simulatedSuccess, violationsByKind, type Answer } from './failover.ts';
import { Prng } from './prng.ts';

const TOPIC = 'commands';
const PARTITION = 0;
const RESULTS = 'results';
const DEAD_LETTERS = 'dead-letters';
const LEDGER = 'ledger';
const GROUP = 'group';
const LEDGER_KEY = checkpointKey(GROUP, TOPIC);
/** Every repeat in a schedule is within the window. */
const DEDUP_WINDOW = 1_000;
/** How long a claim waits for an earlier owner's handover of a mark in doubt (real ms; the worker: a call's timeout and a margin). */
const HANDOVER_GRACE_MS = 500;
/** How long the last claim gets to answer every record, and an ended claim's lane to settle, real ms (by default). */
const SETTLE_MS = 20_000;

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
const MAY_HIDE_A_SEND: ReadonlySet<Answer> = new Set(['http500', 'reset-after', 'malformed']);

/** A process of the simulation: once dead, every I/O it has under way or starts hangs. */
interface Incarnation {
  readonly name: string;
  dead: boolean;
  /** Its handovers (ledger on): one per process, so a claim it makes again takes its own settlements from memory. */
  handovers?: Handovers;
}

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
  readonly answer: Answer;
  readonly accepted: boolean;
  /** The committed checkpoint held the record's mark when the call started (ledger on). */
  readonly underCommittedMark: boolean;
}

/** One partition's committed Kafka state, and the transactional producers of every claim over it. */
export class SimulatedKafka {
  readonly #prng: Prng;
  /** Records of committed transactions, per topic, in commit order. */
  readonly committed = new Map<string, OutgoingRecord[]>();
  groupOffset = 0n;
  /** The newest generation whose producer was initialised: every older one is fenced. */
  #fencedBy = 0;
  /** Kafka faults (failed commits, lost commit answers) happen only while this holds. */
  faulty = true;
  /** Commits that failed (`fail`) or whose answer was lost (`lost`), for the tally. */
  readonly faults = { fail: 0, lost: 0 };

  constructor(prng: Prng) {
    this.#prng = prng;
  }

  /** The newest committed checkpoint of the partition (what a new claim reads back). */
  lastCheckpoint(): Checkpoint | undefined {
    const ledger = this.committed.get(LEDGER) ?? [];
    for (let i = ledger.length - 1; i >= 0; i--) {
      const record = ledger[i] as OutgoingRecord;
      // The ledger partition also holds handovers (another key): the newest checkpoint is what counts.
      const checkpoint = decodeCheckpoint(record.key === null ? null : Buffer.from(record.key), record.value, LEDGER_KEY);
      if (checkpoint !== undefined) return checkpoint;
    }
    return undefined;
  }

  /** The handovers of one process: written to the ledger partition outside any transaction, read from its tail. */
  handoversFor(host: Incarnation): Handovers {
    const producer: KeyedRecordProducer = {
      connected: true,
      connect: async () => undefined,
      send: async (topic, records) => {
        await io(this.#prng, host);
        this.committed.set(topic, [...(this.committed.get(topic) ?? []), ...records.map((r) => ({ key: r.key, value: r.value }))]);
      },
      disconnect: async () => undefined,
    };
    return ledgerHandovers({
      ledgerTopic: LEDGER,
      key: handoverKey(GROUP, TOPIC),
      producer,
      reader: {
        readAvailable: async (topic, _partition, from) => {
          await io(this.#prng, host);
          const log = this.committed.get(topic) ?? [];
          const records = log
            .slice(Number(from))
            .map((r, i) => ({ offset: from + BigInt(i), key: r.key === null ? null : Buffer.from(r.key), value: r.value }));
          return { records, next: BigInt(log.length) };
        },
      },
      // From the partition's start: a short log, read whole.
      admin: { fetchTopicOffsetsByTimestamp: async () => [{ partition: PARTITION, offset: '0' }] },
      maxRecordBytes: 1_000_000,
      graceMs: HANDOVER_GRACE_MS,
      pollMs: 5,
      log: silent,
    });
  }

  /** The producers of one claim of generation `generation`, run by `host`. */
  producersFor(host: Incarnation, generation: number): PartitionProducers {
    let session: { generation: number } | undefined;
    return {
      forPartition: async (_topic, _partition, asked = generation): Promise<TransactionalSession> => {
        await io(this.#prng, host);
        if (asked < this.#fencedBy) throw new FencedError(`generation ${asked} is fenced by ${this.#fencedBy}`);
        this.#fencedBy = asked;
        const current = { generation: asked };
        session = current;
        return { transaction: async () => this.#begin(host, current) };
      },
      discard: async () => {
        session = undefined;
      },
      has: (_topic, _partition, asked) => session !== undefined && session.generation === asked && asked >= this.#fencedBy,
      carry: () => false,
    };
  }

  async #begin(host: Incarnation, session: { generation: number }): Promise<Transaction> {
    await io(this.#prng, host);
    const sends: { topic: string; messages: OutgoingRecord[] }[] = [];
    let offsets: bigint | undefined;
    let open = true;
    const fenced = (): void => {
      if (session.generation < this.#fencedBy) {
        open = false;
        throw new FencedError(`the producer of generation ${session.generation} was fenced by ${this.#fencedBy}`);
      }
    };
    fenced();
    return {
      send: async (batches) => {
        await io(this.#prng, host);
        fenced();
        if (!open) throw new Error('the transaction is not open');
        for (const batch of batches) sends.push({ topic: batch.topic, messages: [...batch.messages] });
      },
      sendOffsets: async (given) => {
        await io(this.#prng, host);
        fenced();
        const offset = given.topics.flatMap((t) => t.partitions).find((p) => p.partition === PARTITION)?.offset;
        if (offset !== undefined) offsets = BigInt(offset);
      },
      commit: async () => {
        await io(this.#prng, host);
        fenced();
        if (!open) throw new Error('the transaction is not open');
        open = false;
        const fate = this.faulty ? this.#prng.weighted({ ok: 92, fail: 4, lost: 4 }) : 'ok';
        if (fate === 'fail') {
          this.faults.fail += 1;
          throw new Error('simulated: the coordinator is not available (nothing committed)');
        }
        for (const { topic, messages } of sends) this.committed.set(topic, [...(this.committed.get(topic) ?? []), ...messages]);
        if (offsets !== undefined) this.groupOffset = offsets;
        if (fate === 'lost') {
          this.faults.lost += 1;
          throw new Error('simulated: EndTxn timed out (it committed)');
        }
      },
      abort: async () => {
        open = false;
        await io(this.#prng, host);
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
  readonly #markHeld: (commandId: string) => boolean;

  constructor(account: string, prng: Prng, host: Incarnation, calls: ServiceCall[], markHeld: (commandId: string) => boolean) {
    this.#account = account;
    this.#prng = prng;
    this.#host = host;
    this.#calls = calls;
    this.#markHeld = markHeld;
  }

  async send(request: ProviderRequest, options: { correlationId?: string } = {}): Promise<ProviderSuccess> {
    if (this.#host.dead) await hang();
    const commandId = options.correlationId ?? '?';
    const answer = this.#prng.weighted(ANSWER_WEIGHTS as Record<Answer, number>);
    const accepted = answer === 'ok' || (MAY_HIDE_A_SEND.has(answer) && this.#prng.chance(0.5));
    this.#calls.push({ commandId, process: this.#host.name, answer, accepted, underCommittedMark: this.#markHeld(commandId) });
    await io(this.#prng, this.#host, 4);
    if (answer === 'ok') return simulatedSuccess(commandId, this.#account);
    throw simulatedFailure(answer, request.operation);
  }

  close(): void {}
}

/** The codec over the real Avro types, with fixed schema ids instead of a registry. */
function framed(schemaId: number, avro: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeInt32BE(schemaId, 1);
  return Buffer.concat([header, avro]);
}

const codec: RecordCodec = {
  decode: async (value) => {
    if (value === null || value.length < 5 || value[0] !== 0) return { ok: false, code: DEAD_LETTER_CODES.notConfluentFraming, message: 'not framed' };
    return { ok: true, value: commandType.fromBuffer(value.subarray(5)) as unknown, schemaId: value.readInt32BE(1) };
  },
  encodeResult: async (value) => framed(2, resultType.toBuffer(value)),
  encodeDeadLetter: async (value) => framed(3, deadLetterType.toBuffer(value)),
};

/** One record of the partition: a command, a repeat of an earlier one's commandId, or bytes nobody can decode. */
interface SimRecord {
  readonly offset: number;
  readonly commandId: string;
  readonly kind: 'command' | 'repeat' | 'undecodable';
  readonly key: string;
  readonly value: Buffer;
}

function records(prng: Prng, seed: number): SimRecord[] {
  const out: SimRecord[] = [];
  const count = prng.int(5, 40);
  for (let offset = 0; offset < count; offset++) {
    const key = `k${prng.int(0, 5)}`;
    const earlier = out.filter((r) => r.kind === 'command');
    if (earlier.length > 0 && prng.chance(0.08)) {
      const original = prng.pick(earlier);
      out.push({ offset, commandId: original.commandId, kind: 'repeat', key, value: original.value });
    } else if (prng.chance(0.04)) {
      out.push({ offset, commandId: '', kind: 'undecodable', key, value: Buffer.from('not avro') });
    } else {
      const commandId = `s${seed}-c${offset}`;
      const command: SendCommand = {
        commandId,
        createdAt: Date.now(),
        expiresAt: null,
        metadata: {},
        operation: { kind: 'text', to: ['+8613800138000'], signature: 'Acme', content: `hello ${commandId}` },
      };
      out.push({ offset, commandId, kind: 'command', key, value: framed(1, commandType.toBuffer(commandToAvro(command))) });
    }
  }
  return out;
}

/** What the simulation injects into the shipped driver, from outside it (for the tests that prove the checks see a driver bug). */
export interface DriverFaults {
  /** Wraps the sender the record handler is given. */
  readonly sender?: (sender: CommandSender) => CommandSender;
}

export interface ShippedLaneViolation {
  readonly seed: number;
  readonly kind: 'at-most-one-send' | 'call-under-committed-mark' | 'exactly-one-result' | 'result-tells-the-truth' | 'unknown-has-a-cause' | 'no-driver-error';
  readonly detail: string;
}

/**
 * How a claim ends: its process crashes; it turns zombie (its lease lapses, it learns of the
 * rebalance late); it retires and finishes before the next claim starts (`retire`: shutdown, or a
 * rebalance that waits); it retires as the partition moves, handing over what it has under way
 * while the next claim starts at once (`move`); or the same, the next claim made by the same process
 * (`reclaim`: its lane failed while the broker was away, and the partition came back to it).
 */
/** Whether a claim is still its partition's owner (lane-router.ts's `owns`): its lease holds, it is not retired, and no newer claim began. */
interface ClaimOwnership {
  lapsed: boolean;
  retired: boolean;
}

type ClaimEnd = 'crash' | 'zombie' | 'retire' | 'move' | 'reclaim' | 'last';

interface Schedule {
  readonly seed: number;
  readonly prng: Prng;
  readonly ledger: boolean;
  readonly kafka: SimulatedKafka;
  readonly records: readonly SimRecord[];
  readonly calls: ServiceCall[];
  readonly accounts: readonly string[];
  readonly metrics: WorkerMetrics;
  readonly faults: DriverFaults;
  readonly closers: (() => void)[];
  readonly driverErrors: string[];
  readonly ends: ClaimEnd[];
  /** The newest claim's generation. */
  generation: number;
}

const silent = createLogger('silent');

/** The shipped sender of one claim's process: a FailoverSender over a GuardedSender per account. */
function senderFor(schedule: Schedule, host: Incarnation): CommandSender {
  const { prng, calls } = schedule;
  const markHeld = (commandId: string): boolean => {
    if (!schedule.ledger) return true;
    return schedule.kafka.lastCheckpoint()?.open.some((mark) => mark.commandId === commandId) ?? false;
  };
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
        client: new SimulatedService(account, prng, host, calls, markHeld),
        gate,
        holds,
        outages: new OutageCounter(3),
        rateLimiter: new RateLimiter(0),
        fundsPolicy: 'pause',
        fundsPauseMaxMs: 40,
      }),
    );
  }
  const sender = new FailoverSender({ accounts, routing: { rules: [], fallback: [...schedule.accounts] }, priority: 'normal' });
  return schedule.faults.sender?.(sender) ?? sender;
}

/** The lane of claim `generation`, fed the partition's records from its start as a consumer would. */
async function runClaim(
  schedule: Schedule,
  generation: number,
  host: Incarnation,
): Promise<{ lane: PartitionLane; fed: Promise<void>; owner: ClaimOwnership }> {
  const { kafka, records: all, prng } = schedule;
  const owner: ClaimOwnership = { lapsed: false, retired: false };
  schedule.generation = generation;
  // As the shipped claim steps: fence first, then read what is committed (nothing an earlier owner does can commit after).
  const producers = kafka.producersFor(host, generation);
  await producers.forPartition(TOPIC, PARTITION, generation);
  const start = kafka.groupOffset;
  const recent = all.filter((r) => BigInt(r.offset) < start && r.kind !== 'undecodable').map((r) => ({ offset: BigInt(r.offset), commandId: r.commandId }));
  const claim = buildClaim(
    { topic: TOPIC, partition: PARTITION, generation, markOwner: `claim${generation}` },
    start,
    schedule.ledger ? kafka.lastCheckpoint() : undefined,
    recent,
    DEDUP_WINDOW,
  );
  const owns = (): boolean => !host.dead && !owner.lapsed && !owner.retired && schedule.generation === generation;
  const abandon = new AbortController();
  schedule.closers.push(() => abandon.abort());
  let fetchHeld = false;
  let fetchReleased: (() => void) | undefined;
  const ctx: LaneContext = {
    deps: {
      codec,
      sender: senderFor(schedule, host),
      policy: DEFAULT_VALIDATION_POLICY,
      inDoubtPolicy: 'report',
      maxRecordBytes: 1_000_000,
      maxCommandBytes: 1_000_000,
    },
    producers,
    ...(schedule.ledger && { handovers: (host.handovers ??= kafka.handoversFor(host)) }),
    slots: new Semaphore(prng.int(1, 8)),
    metrics: schedule.metrics,
    log: silent,
    target: {
      consumerGroup: GROUP,
      resultTopic: RESULTS,
      deadLetterTopic: DEAD_LETTERS,
      ledgerTopic: schedule.ledger ? LEDGER : undefined,
      maxBatchBytes: 1_000_000,
      latestCheckpoint: async () => {
        await io(prng, host);
        return kafka.lastCheckpoint();
      },
    },
    commitIntervalMs: prng.int(1, 10),
    claim,
    maxRunAhead: prng.int(2, 50),
    bytesInHand: new BytesInHand(1_000_000_000),
    fetchCommittedOffset: async () => {
      await io(prng, host);
      return kafka.groupOffset;
    },
    // As lane-router.ts gives them: sends need the claim current (lease holding, not retired, no
    // newer generation); a claim no longer current commits only with its generation's producer.
    leaseHolds: owns,
    mayCommit: () => owns() || producers.has(TOPIC, PARTITION, generation),
    mayReinitialise: owns,
    abandon: abandon.signal,
    onProgress: () => undefined,
    onBusy: () => undefined,
    holdFetching: (held) => {
      fetchHeld = held;
      if (!held) fetchReleased?.();
    },
  };
  const lane = new PartitionLane(ctx);
  // The consumer: batches of a few records from the claim's start, again from the first record
  // the lane did not take whenever it lets the partition be fetched.
  const fed = (async () => {
    let next = Number(claim.start);
    while (next < all.length && lane.accepting && !host.dead) {
      if (fetchHeld) {
        await new Promise<void>((resolve) => (fetchReleased = resolve));
        continue;
      }
      const batch = all.slice(next, next + prng.int(1, 8));
      let resolved = next - 1;
      lane.accept({
        topic: TOPIC,
        partition: PARTITION,
        highWatermark: String(all.length),
        messages: batch.map((r) => ({ offset: String(r.offset), key: Buffer.from(r.key), value: r.value, timestamp: String(Date.now()) })),
        resolveOffset: (offset) => void (resolved = Math.max(resolved, Number(offset))),
        isRunning: () => !host.dead,
        isStale: () => false,
        heartbeat: async () => undefined,
      });
      next = resolved + 1;
      await new Promise((resolve) => setTimeout(resolve, prng.int(0, 2)));
    }
  })();
  return { lane, fed, owner };
}

async function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed-out'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<'timed-out'>((resolve) => (timer = setTimeout(() => resolve('timed-out'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Lane failures the simulated Kafka causes (fences, failed or unanswered commits): the protocol's to handle, not a driver bug. */
function isSimulatedFault(failure: unknown): boolean {
  if (failure instanceof FencedError || failure instanceof LeaseLostError) return true;
  const text = failure instanceof Error ? `${failure.message} ${String((failure as { cause?: unknown }).cause ?? '')}` : String(failure);
  return /simulated|fenced|fence/i.test(text);
}

export interface ShippedLaneOptions {
  /** Ledger on (the default) or off. */
  readonly ledger?: boolean;
  readonly faults?: DriverFaults;
  /** Counts what happened (claim ends, results, calls, Kafka faults). */
  readonly tally?: Map<string, number>;
  /** How long the last claim gets to answer every record, and an ended claim's lane to end (real ms). */
  readonly settleMs?: number;
}

/** One schedule: claims, each ended by a crash, as a zombie or retired, then a last one; returns what it broke. */
export async function runShippedLaneSchedule(seed: number, options: ShippedLaneOptions = {}): Promise<ShippedLaneViolation[]> {
  const settleMs = options.settleMs ?? SETTLE_MS;
  const prng = new Prng(seed);
  const schedule: Schedule = {
    seed,
    prng,
    ledger: options.ledger ?? true,
    kafka: new SimulatedKafka(prng),
    records: records(prng, seed),
    calls: [],
    accounts: prng.chance(0.5) ? ['default'] : ['default', 'backup'],
    metrics: sharedMetrics(),
    faults: options.faults ?? {},
    closers: [],
    driverErrors: [],
    ends: [],
    generation: 0,
  };
  const watch = (lane: PartitionLane, generation: number): Promise<void> =>
    lane.ended.then((end) => {
      if (end.failure !== undefined && !isSimulatedFault(end.failure)) schedule.driverErrors.push(`claim ${generation}: ${String(end.failure)}`);
    });
  const settling: Promise<unknown>[] = [];
  /** Waits for an ended claim's lane in the background: it must end (retired, failed) within settleMs. */
  const settles = (lane: PartitionLane, host: Incarnation, watched: Promise<void>, generation: number, what: string): void =>
    void settling.push(
      within(watched, settleMs).then((ended) => {
        // A process that crashed meanwhile (it reclaimed the partition, then died) never ends its lanes.
        if (ended === 'timed-out' && !host.dead)
          schedule.driverErrors.push(
            `claim ${generation} (${what}) did not end within ${settleMs} ms: waiting on ${JSON.stringify(lane.waitingOn(), (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`,
          );
      }),
    );
  const claims = prng.int(0, 3);
  let host: Incarnation = { name: 'P1', dead: false };
  for (let generation = 1; generation <= claims + 1; generation++) {
    const last = generation === claims + 1;
    const end: ClaimEnd = last ? 'last' : prng.pick(['crash', 'zombie', 'retire', 'move', 'reclaim'] as const);
    schedule.ends.push(end);
    if (last) schedule.kafka.faulty = false;
    const { lane, fed, owner } = await runClaim(schedule, generation, host);
    const watched = watch(lane, generation);
    if (last) {
      const done = within(
        (async () => {
          await fed;
          while (lane.working > 0 && lane.accepting) await new Promise((resolve) => setTimeout(resolve, 2));
          lane.retire(new Error('the schedule is over'));
          await watched;
        })(),
        settleMs,
      );
      if ((await done) === 'timed-out') schedule.driverErrors.push(`claim ${generation} (the last) did not answer every record within ${settleMs} ms`);
      continue;
    }
    await new Promise((resolve) => setTimeout(resolve, prng.int(0, 30)));
    switch (end) {
      case 'crash':
        host.dead = true;
        break;
      case 'zombie': {
        owner.lapsed = true;
        // Its next heartbeat tells it of the rebalance (ownership retires its claims): a little
        // while after the next claim fenced it, or before.
        setTimeout(
          () => {
            owner.retired = true;
            lane.retire(new Error('a rebalance, learnt late'), true);
          },
          prng.int(0, 40),
        );
        settles(lane, host, watched, generation, 'a zombie');
        break;
      }
      case 'retire':
        owner.retired = true;
        lane.retire(new Error('a rebalance'));
        if ((await within(watched, settleMs)) === 'timed-out') schedule.driverErrors.push(`claim ${generation} did not retire within ${settleMs} ms`);
        break;
      case 'move':
      case 'reclaim':
        owner.retired = true;
        lane.retire(new Error('the partition moved'), true);
        settles(lane, host, watched, generation, end);
        break;
    }
    if (end !== 'reclaim') host = { name: `P${generation + 1}`, dead: false };
  }
  await Promise.all(settling);
  for (const close of schedule.closers) close();
  tallyOf(schedule, options.tally);
  return check(schedule);
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
}

function publishedResults(kafka: SimulatedKafka): PublishedResult[] {
  return (kafka.committed.get(RESULTS) ?? []).map((r) => resultType.fromBuffer(r.value.subarray(5)) as PublishedResult);
}

function check(schedule: Schedule): ShippedLaneViolation[] {
  const { seed, kafka, calls } = schedule;
  const out: ShippedLaneViolation[] = [];
  const add = (kind: ShippedLaneViolation['kind'], detail: string): void => void out.push({ seed, kind, detail });
  for (const error of schedule.driverErrors) add('no-driver-error', error);
  const results = publishedResults(kafka);
  const deadLetters = kafka.committed.get(DEAD_LETTERS) ?? [];
  const interrupted = schedule.ends.some((end) => end === 'crash');
  for (const record of schedule.records) {
    if (record.kind === 'repeat') continue;
    if (record.kind === 'undecodable') {
      const letters = deadLetters.filter((l) => deadLetterOffset(l) === record.offset).length;
      if (letters !== 1) add('exactly-one-result', `@${record.offset} (undecodable) has ${letters} dead letters`);
      continue;
    }
    const id = record.commandId;
    const own = calls.filter((c) => c.commandId === id);
    const accepted = own.filter((c) => c.accepted).length;
    if (accepted > 1) add('at-most-one-send', `${id}: accepted ${accepted} times (${own.map((c) => `${c.process}:${c.answer}`).join(', ')})`);
    for (const call of own) if (!call.underCommittedMark) add('call-under-committed-mark', `${id}: ${call.process} called before the ledger held its mark`);
    const mine = results.filter((r) => r.commandId === id);
    if (mine.length !== 1) {
      add('exactly-one-result', `${id} @${record.offset}: ${mine.length} results (${mine.map((r) => r.outcome).join(', ')})`);
      continue;
    }
    const outcome = mine[0]?.outcome;
    if (outcome === 'SENT' && accepted !== 1) add('result-tells-the-truth', `${id}: SENT, accepted ${accepted} times`);
    if (outcome === 'FAILED' && accepted !== 0) add('result-tells-the-truth', `${id}: FAILED, but the service accepted it`);
    // Every call answered for sure (sent, or surely not): the process that made it knows, and hands it over.
    const answered = own.length > 0 && own.every((c) => !MAY_HIDE_A_SEND.has(c.answer));
    if (outcome === 'UNKNOWN' && (own.length === 0 || answered) && !interrupted)
      add(
        'unknown-has-a-cause',
        `${id}: UNKNOWN, ${own.length === 0 ? 'never called' : `every call answered (${own.map((c) => c.answer).join(', ')})`}, and no claim crashed`,
      );
  }
  // Where the next claim would start (recoveryPlan): results published ahead of the group offset
  // move only the checkpoint's `next` until a later record's transaction moves the offset.
  // A claim whose records past it were all answered ahead by an earlier owner skips them without a
  // transaction: they stay behind the offset, answered in the checkpoint, until a later record's
  // transaction moves it. What counts is what the next claim would do: take nothing again.
  const { start, answered } = recoveryPlan(kafka.groupOffset, schedule.ledger ? kafka.lastCheckpoint() : undefined);
  const redone = schedule.records.filter((r) => BigInt(r.offset) >= start && !answered.has(BigInt(r.offset)));
  if (redone.length > 0) add('exactly-one-result', `the next claim would take ${redone.map((r) => `@${r.offset} (${r.kind})`).join(', ')} again`);
  return out;
}

function deadLetterOffset(letter: OutgoingRecord): number {
  const decoded = deadLetterType.fromBuffer(letter.value.subarray(5)) as { offset?: unknown; source?: { offset?: unknown } };
  const offset = decoded.source?.offset ?? decoded.offset;
  return Number(offset);
}

function tallyOf(schedule: Schedule, tally: Map<string, number> | undefined): void {
  if (tally === undefined) return;
  const count = (key: string, n = 1): void => void tally.set(key, (tally.get(key) ?? 0) + n);
  for (const end of schedule.ends) count(`claim ${end}`);
  for (const result of publishedResults(schedule.kafka)) count(`result ${result.outcome}`);
  count('calls', schedule.calls.length);
  count('commit failed', schedule.kafka.faults.fail);
  count('commit answer lost', schedule.kafka.faults.lost);
  const handovers = (schedule.kafka.committed.get(LEDGER) ?? []).filter((r) => r.key !== null && r.key.toString() === handoverKey(GROUP, TOPIC)).length;
  count('handovers written', handovers);
}

/** Runs `count` schedules from `firstSeed`, `parallel` at a time. */
export async function runShippedLaneSchedules(
  firstSeed: number,
  count: number,
  options: ShippedLaneOptions & { readonly parallel?: number } = {},
): Promise<ShippedLaneViolation[]> {
  const violations: ShippedLaneViolation[] = [];
  let next = firstSeed;
  const worker = async (): Promise<void> => {
    while (next < firstSeed + count) {
      const seed = next;
      next += 1;
      violations.push(...(await runShippedLaneSchedule(seed, options)));
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel ?? 1) }, worker));
  return violations.sort((a, b) => a.seed - b.seed);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      schedules: { type: 'string', default: '500' },
      seed: { type: 'string', default: '1' },
      parallel: { type: 'string', default: '8' },
      ledger: { type: 'string', default: 'on' },
    },
  });
  const started = Date.now();
  const tally = new Map<string, number>();
  const violations = await runShippedLaneSchedules(Number(values.seed), Number(values.schedules), {
    ledger: values.ledger !== 'off',
    tally,
    parallel: Number(values.parallel),
  });
  console.log(
    `shipped-lane simulation: ${values.schedules} schedules from seed ${values.seed}, ledger ${values.ledger}, ${values.parallel} at a time, in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  console.log(
    [...tally]
      .sort()
      .map(([key, n]) => `${key} ${n}`)
      .join(', '),
  );
  const byKind = violationsByKind(violations);
  console.log(
    violations.length === 0 ? '0 violations' : [...byKind].map(([kind, { count, firstSeed }]) => `${kind}: ${count} (first at seed ${firstSeed})`).join('\n'),
  );
  for (const v of violations.slice(0, 8)) console.log(`  seed ${v.seed} ${v.kind}: ${v.detail}`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
