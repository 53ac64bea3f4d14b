/**
 * A partition's lane without a broker: a fake fetched batch, fake transactional
 * producers that record every transaction, a real GuardedSender over a scripted service client,
 * and the real Avro encoding behind a codec double (no registry).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { commandRecordBytes } from '../../../src/contracts/dead-letter.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../../src/contracts/index.ts';
import { FencedError, type FetchedRecord } from '../../../src/kafka/ports.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { ProviderError } from '../../../src/provider/provider-error.ts';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from '../../../src/provider/types.ts';
import { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import type { Checkpoint, OpenMark } from '../../../src/worker/lane/ledger-checkpoint.ts';
import { PartitionLane, type LaneContext } from '../../../src/worker/lane/partition-lane.ts';
import { PartitionMachine } from '../../../src/worker/protocol/partition-machine.ts';
import { ProtocolViolation } from '../../../src/worker/protocol/assertions.ts';
import type { PartitionClaim } from '../../../src/worker/ownership/partition-ownership.ts';
import { BytesInHand } from '../../../src/worker/source/bytes-in-hand.ts';
import { RateLimiter } from '../../../src/worker/send/rate-limiter.ts';
import { Semaphore } from '../../../src/worker/semaphore.ts';
import { OutageCounter, ServiceGate, type GateBackoffs } from '../../../src/worker/send/service-gate.ts';
import { FakeProducers } from '../../helpers/fake-producers.ts';
import { testClaim } from '../../helpers/claims.ts';
import { eventually, within } from '../../../tools/poll.ts';
import { codec, providerSuccess, record, recordingBatch, type RecordingBatch } from '../../helpers/command-records.ts';

const TOPIC = 'cmds';
const PARTITION = 0;
const RESULTS = 'results';
const DLQ = 'dlq';
const LEDGER = 'ledger';
/** Probes far in the future: a blocked gate stays shut for the test. */
const NO_PROBES: GateBackoffs = {
  insufficient_funds: { initialMs: 600_000, maxMs: 600_000 },
  circuit_open: { initialMs: 600_000, maxMs: 600_000 },
};

/** The request surely did not reach the service (connection refused). */
function refused(retryable: boolean): ProviderError {
  return new ProviderError({
    operation: 'sms.message.send',
    code: 'ECONNREFUSED',
    message: 'connection refused',
    providerMessage: '',
    failureClass: 'transport',
    retryable,
    attempts: 1,
    httpStatus: undefined,
    requestId: undefined,
    retryAfterMs: undefined,
    answered: false,
  });
}

/** The service answered 105400: it refused the command, surely did not send it. */
function insufficientFunds(): ProviderError {
  return new ProviderError({
    operation: 'sms.message.send',
    code: '105400',
    message: 'the service answered 105400 InsufficientFunds',
    providerMessage: 'InsufficientFunds',
    failureClass: 'insufficient-funds',
    retryable: false,
    attempts: 1,
    httpStatus: 400,
    requestId: undefined,
    retryAfterMs: undefined,
    answered: true,
  });
}

interface Call {
  readonly commandId: string;
  /** The partition's committed offset when the call was made. */
  readonly committedOffset: bigint;
  /** The open marks of the newest committed checkpoint when the call was made. */
  readonly committedMarks: readonly bigint[];
}

/**
 * The messaging service, scripted: `auto` answers every call at once; `hold` keeps each call
 * pending until the test answers it (`answer`). `script` may decide per call instead.
 */
class ScriptedService implements ProviderClient {
  readonly calls: Call[] = [];
  readonly #pending = new Map<string, { resolve: (s: ProviderSuccess) => void; reject: (e: unknown) => void }>();
  readonly #waiters: { count: number; resolve: () => void }[] = [];
  mode: 'auto' | 'hold' = 'auto';
  script: ((commandId: string, call: number) => ProviderError | undefined) | undefined;
  inFlight = 0;
  maxInFlight = 0;

  readonly producers: FakeProducers;

  constructor(producers: FakeProducers) {
    this.producers = producers;
  }

  async send(_request: ProviderRequest, options?: { correlationId?: string }): Promise<ProviderSuccess> {
    const commandId = options?.correlationId ?? '?';
    const checkpoints = this.producers.checkpoints(LEDGER);
    this.calls.push({
      commandId,
      committedOffset: this.producers.groupOffset(TOPIC, PARTITION),
      committedMarks: checkpoints.at(-1)?.open.map((m) => m.offset) ?? [],
    });
    for (const waiter of this.#waiters.filter((w) => this.calls.length >= w.count)) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    const failure = this.script?.(commandId, this.calls.length);
    if (failure !== undefined) throw failure;
    if (this.mode === 'auto') return providerSuccess();
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      return await new Promise<ProviderSuccess>((resolve, reject) => this.#pending.set(commandId, { resolve, reject }));
    } finally {
      this.inFlight -= 1;
    }
  }

  /** Answers a held call with success. */
  answer(commandId: string): void {
    const pending = this.#pending.get(commandId);
    if (pending === undefined) throw new Error(`no call for ${commandId} is pending`);
    this.#pending.delete(commandId);
    pending.resolve(providerSuccess());
  }

  /** Answers a held call with a failure. */
  fail(commandId: string, error: ProviderError): void {
    const pending = this.#pending.get(commandId);
    if (pending === undefined) throw new Error(`no call for ${commandId} is pending`);
    this.#pending.delete(commandId);
    pending.reject(error);
  }

  get pending(): string[] {
    return [...this.#pending.keys()];
  }

  /** Resolves once `count` calls have been made in all. */
  callsReach(count: number): Promise<void> {
    if (this.calls.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ count, resolve }));
  }

  close(): void {}
}

function batchOf(messages: FetchedRecord[]): RecordingBatch {
  return recordingBatch(TOPIC, PARTITION, messages);
}

function claimOf(start = 0n, inDoubt: OpenMark[] = []): PartitionClaim {
  return testClaim({ topic: TOPIC, partition: PARTITION, start, inDoubt });
}

const gates: ServiceGate[] = [];
afterEach(() => {
  for (const gate of gates.splice(0)) gate.close();
});

interface Harness {
  readonly producers: FakeProducers;
  readonly service: ScriptedService;
  readonly claim: PartitionClaim;
  readonly gate: ServiceGate;
  readonly abandon: AbortController;
  readonly ctx: LaneContext;
  /** Whether the lane asked the consumer to stop fetching the partition (the run-ahead bound). */
  readonly fetching: { held: boolean; holds: number };
}

function harness(
  options: {
    bytesInHand?: BytesInHand;
    ledger?: boolean;
    maxRunAhead?: number;
    commitIntervalMs?: number;
    slots?: number;
    claim?: PartitionClaim;
    breakerThreshold?: number;
    rateLimiter?: RateLimiter;
  } = {},
): Harness {
  const producers = new FakeProducers();
  const service = new ScriptedService(producers);
  const gate = new ServiceGate({ backoff: NO_PROBES });
  gates.push(gate);
  const sender = new GuardedSender({
    client: service,
    gate,
    outages: new OutageCounter(options.breakerThreshold ?? 5),
    rateLimiter: options.rateLimiter ?? new RateLimiter(0),
    fundsPolicy: 'pause',
  });
  const claim = options.claim ?? claimOf();
  const abandon = new AbortController();
  const fetching = { held: false, holds: 0 };
  const ctx: LaneContext = {
    deps: { codec, sender, policy: DEFAULT_VALIDATION_POLICY, inDoubtPolicy: 'report', maxRecordBytes: 1_000_000, maxCommandBytes: 1_000_000 },
    producers,
    slots: new Semaphore(options.slots ?? 100),
    metrics: createMetrics(),
    log: createLogger('silent'),
    target: {
      consumerGroup: 'g',
      resultTopic: RESULTS,
      deadLetterTopic: DLQ,
      ledgerTopic: options.ledger === true ? LEDGER : undefined,
      maxBatchBytes: 1_000_000,
    },
    commitIntervalMs: options.commitIntervalMs ?? 5,
    claim,
    maxRunAhead: options.maxRunAhead ?? 1_000,
    bytesInHand: options.bytesInHand ?? new BytesInHand(1_000_000_000),
    fetchCommittedOffset: async (topic, partition) => producers.groupOffset(topic, partition),
    standing: { maySend: () => true, mayReinitialise: () => true },
    abandon: abandon.signal,
    onProgress: () => undefined,
    onBusy: () => undefined,
    holdFetching: (held) => {
      fetching.held = held;
      if (held) fetching.holds += 1;
    },
  };
  return { producers, service, claim, gate, abandon, ctx, fetching };
}

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds (the batch runs on timers and promises of its own): the one polling helper, every millisecond. */
const until = (condition: () => boolean, what: string, timeoutMs = 2_000): Promise<true> =>
  eventually(() => condition() || undefined, timeoutMs, what, { interval: { initialMs: 1, maxMs: 1, jitter: 0 } });

/**
 * Runs one batch through a lane as the consumer would: records the lane does not take (the
 * run-ahead bound) are offered again once it lets the partition be fetched; when every record is
 * done (or the lane failed, or was abandoned) the lane is retired: it commits what is left. Rejects with its failure.
 */
async function processBatch(batch: RecordingBatch, ctx: LaneContext, fetching?: Harness['fetching']): Promise<void> {
  const lane = new PartitionLane(ctx);
  let remaining = [...batch.messages];
  for (;;) {
    const offer = { ...batch, messages: remaining, resolveOffset: (offset: string) => batch.resolveOffset(offset) };
    lane.accept(offer);
    remaining = remaining.filter((m) => !batch.resolved.includes(m.offset));
    if (remaining.length === 0 || !lane.accepting || ctx.abandon.aborted) break;
    if (fetching === undefined) throw new Error('the lane left records but the test does not watch its fetch holds');
    await until(() => !fetching.held || !lane.accepting || ctx.abandon.aborted, 'the lane lets the partition be fetched again', 10_000);
  }
  await until(() => lane.working === 0 || !lane.accepting || ctx.abandon.aborted, 'every record is done', 10_000);
  lane.retire(new Error('test done'));
  const end = await lane.ended;
  if (end.failure !== undefined) throw end.failure;
}

describe('PartitionLane: the happy path', () => {
  it('publishes one result per command and commits the offset after the last record', async () => {
    const h = harness();
    const batch = batchOf([record(0, 'a'), record(1, 'b'), record(2, null)]);
    await processBatch(batch, h.ctx, h.fetching);
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c0', 'c1', 'c2']);
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(3n);
    expect(h.claim.position.committed).toBe(3n);
    expect(batch.resolved.at(-1)).toBe('2');
  });

  it('skips records below the claim start (answered by an earlier owner) without sending them', async () => {
    const h = harness({ claim: claimOf(2n) });
    await processBatch(batchOf([record(0, 'a'), record(1, 'a'), record(2, 'a')]), h.ctx, h.fetching);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c2']);
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c2']);
  });
});

describe('PartitionLane: the partition protocol breaking a rule', () => {
  it('a machine assertion as a record finishes fails the claim, reported, instead of an unhandled rejection', async () => {
    const broken = new Error('partition protocol: record 0 cannot go from marking to done on finished');
    vi.spyOn(PartitionMachine.prototype, 'finished').mockImplementation(() => {
      throw broken;
    });
    const unhandled: unknown[] = [];
    const listener = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const h = harness();
      const lane = new PartitionLane(h.ctx);
      lane.accept(batchOf([record(0, 'a')]));
      const end = await within(2_000, 'the lane ends', lane.ended);
      expect(end.failure).toBe(broken);
      await tick(10);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', listener);
      vi.restoreAllMocks();
    }
  });
});

describe('PartitionLane: a claim invariant broken', () => {
  it('is logged at error level naming the invariant, counted, and fails the claim (the partition is claimed afresh)', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', {}, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const h = harness({ ledger: true });
    const lane = new PartitionLane({ ...h.ctx, log });
    lane.accept(batchOf([record(0, 'a')]));
    await until(() => h.claim.position.committed === 1n, 'the first result committed');
    // A driver bug: the claim's committed position moved back behind the machine's back.
    h.claim.position.committed = 0n;
    lane.accept(batchOf([record(1, 'b')]));
    const end = await within(2_000, 'the lane ends', lane.ended);
    expect(end.failure).toBeInstanceOf(ProtocolViolation);
    const reported = lines.filter((line) => line.level === 50 && line.invariant === 'offset-only-forward');
    expect(reported).toHaveLength(1);
    expect(reported[0]).toMatchObject({ topic: TOPIC, partition: PARTITION });
    const counted = (await h.ctx.metrics.protocolViolations.get()).values;
    expect(counted).toEqual([expect.objectContaining({ labels: { invariant: 'offset-only-forward' }, value: 1 })]);
    // Nothing of the claim commits after it: record 1 is never sent, its result never published.
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0']);
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c0']);
  });
  it('lets no call through once its machine finds a record about to call without a committed mark, and gives back its slot and bytes', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = createLogger('info', {}, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const h = harness({ ledger: true, slots: 1 });
    h.service.mode = 'hold';
    const lane = new PartitionLane({ ...h.ctx, log });
    lane.accept(batchOf([record(0, 'a'), record(1, 'b')]));
    await h.service.callsReach(1);
    await until(() => lane.claim.open.has(1n) && h.producers.checkpoints(LEDGER).some((c) => c.open.some((m) => m.offset === 1n)), 'record 1 marked');
    // A driver bug: record 1's mark dropped while it waits for the one slot.
    h.claim.open.delete(1n);
    h.service.answer('c0');
    const end = await within(2_000, 'the lane ends', lane.ended);
    expect(end.failure).toMatchObject({ invariant: 'calls-under-committed-marks' });
    expect(lines.filter((line) => line.level === 50 && line.invariant === 'calls-under-committed-marks')).toHaveLength(1);
    await tick(20);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0']);
    // It failed through the machine: what its records held of the process goes back.
    await within(1_000, 'the one slot is free again', h.ctx.slots.acquire());
    expect(h.ctx.bytesInHand.used).toBe(0);
  });
});

describe('PartitionLane: per-key order', () => {
  it('sends a key’s commands one after another, and other keys alongside', async () => {
    const h = harness();
    h.service.mode = 'hold';
    const done = processBatch(batchOf([record(0, 'a'), record(1, 'a'), record(2, 'b'), record(3, 'a'), record(4, null), record(5, null)]), h.ctx, h.fetching);
    await h.service.callsReach(4);
    await tick(20);
    // The first of key a, the first of key b, and both keyless records (no ordering promise).
    expect(h.service.pending.sort()).toEqual(['c0', 'c2', 'c4', 'c5']);
    h.service.answer('c2');
    h.service.answer('c4');
    h.service.answer('c5');
    await tick(20);
    expect(h.service.pending).toEqual(['c0']);
    h.service.answer('c0');
    await h.service.callsReach(5);
    expect(h.service.pending).toEqual(['c1']);
    h.service.answer('c1');
    await h.service.callsReach(6);
    h.service.answer('c3');
    await done;
    const order = h.service.calls.map((c) => c.commandId);
    expect(order.filter((id) => ['c0', 'c1', 'c3'].includes(id))).toEqual(['c0', 'c1', 'c3']);
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5']);
  });

  it('commits results in offset order even when later records finish first', async () => {
    const h = harness();
    h.service.mode = 'hold';
    const done = processBatch(batchOf([record(0, 'a'), record(1, 'b'), record(2, 'c')]), h.ctx, h.fetching);
    await h.service.callsReach(3);
    h.service.answer('c2');
    h.service.answer('c1');
    await tick(30);
    // Nothing can commit while offset 0 is open: the offset would skip it.
    expect(h.producers.committedKeys(RESULTS)).toEqual([]);
    h.service.answer('c0');
    await done;
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c0', 'c1', 'c2']);
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(3n);
  });
});

describe('PartitionLane: marks ahead of the calls', () => {
  it('marks at most one permit-bound wave ahead of the calls under way (what a crash can leave UNKNOWN)', async () => {
    const h = harness({ ledger: true, slots: 2 });
    const ctx: LaneContext = { ...h.ctx, markPermits: new Semaphore(2) };
    h.service.mode = 'hold';
    const records = Array.from({ length: 10 }, (_, i) => record(i, `k${i}`));
    const done = processBatch(batchOf(records), ctx, h.fetching);
    await h.service.callsReach(2);
    await tick(50);
    // Two calls under way, two more marked and waiting for a slot: never all ten.
    const marked = Math.max(...h.producers.checkpoints(LEDGER).map((c) => c.open.length));
    expect(marked).toBe(4);
    for (let i = 0; i < 10; i += 1) {
      await h.service.callsReach(i + 1);
      h.service.answer(`c${i}`);
    }
    await done;
    expect(h.producers.committedKeys(RESULTS)).toHaveLength(10);
  });
});

describe('PartitionLane: the run-ahead bound', () => {
  it.each([false, true])('never has more than MAX_RUN_AHEAD records past the committed offset (ledger %s)', async (ledger) => {
    const h = harness({ ledger, maxRunAhead: 3 });
    h.service.mode = 'hold';
    const records = Array.from({ length: 10 }, (_, i) => record(i, `k${i}`));
    const done = processBatch(batchOf(records), h.ctx, h.fetching);
    for (let answered = 0; answered < records.length; answered++) {
      await until(() => h.service.pending.length > 0, `a call is pending (${answered} answered)`);
      await tick(15);
      // Every call is for a record less than 3 past the committed offset at the time of the call.
      for (const call of h.service.calls) expect(BigInt(call.commandId.slice(1)) - call.committedOffset).toBeLessThan(3n);
      expect(h.service.pending.length).toBeLessThanOrEqual(3);
      h.service.answer(h.service.pending.sort((x, y) => Number(x.slice(1)) - Number(y.slice(1)))[0] ?? '');
    }
    await done;
    expect(h.service.maxInFlight).toBe(3);
    // The partition was not fetched while the bound was reached, and fetched again after.
    expect(h.fetching.holds).toBeGreaterThan(0);
    expect(h.fetching.held).toBe(false);
    expect(h.producers.committedKeys(RESULTS)).toEqual(records.map((_, i) => `c${i}`));
  });
});

describe('PartitionLane: commit scheduling', () => {
  it('results alone commit at most once per COMMIT_INTERVAL_MS: the first at once after a quiet interval, the next wait for it', async () => {
    const h = harness({ commitIntervalMs: 60_000 });
    h.service.mode = 'hold';
    const lane = new PartitionLane(h.ctx);
    lane.accept(batchOf([record(0, 'a'), record(1, 'b')]));
    await h.service.callsReach(2);
    // Nothing committed within the interval before: c0's result commits without waiting for it.
    h.service.answer('c0');
    await until(() => h.producers.committed.length === 1, 'the first result commits at once');
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c0']);
    // c1 finishes right after: it waits for the interval since that transaction.
    h.service.answer('c1');
    await tick(200);
    expect(h.producers.committed).toHaveLength(1);
    // Retiring commits what is done.
    lane.retire(new Error('test done'));
    await lane.ended;
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c0', 'c1']);
  });

  it('marks commit at once, before the send, however long the commit interval', async () => {
    const h = harness({ ledger: true, commitIntervalMs: 60_000 });
    h.service.mode = 'hold';
    const done = processBatch(batchOf([record(0, 'a')]), h.ctx, h.fetching);
    // Far sooner than the 60 s interval: the mark's transaction did not wait for it.
    await within(10_000, 'the send after its mark', h.service.callsReach(1));
    // The send started only once a committed checkpoint listed its mark.
    expect(h.service.calls[0]?.committedMarks).toEqual([0n]);
    const [markTx] = h.producers.committed;
    expect(markTx?.offsets).toBeUndefined();
    expect(markTx?.sends.map((s) => s.topic)).toEqual([LEDGER]);
    h.service.answer('c0');
    await done;
  });

  it('marks a wave of sends in one extra commit', async () => {
    const h = harness({ ledger: true, commitIntervalMs: 60_000 });
    h.service.mode = 'hold';
    const done = processBatch(batchOf([0, 1, 2, 3, 4].map((i) => record(i, `k${i}`))), h.ctx, h.fetching);
    await h.service.callsReach(5);
    expect(h.producers.transactions).toHaveLength(1);
    expect(h.producers.checkpoints(LEDGER)).toEqual([
      { next: 0n, open: [0, 1, 2, 3, 4].map((i) => expect.objectContaining({ offset: BigInt(i), commandId: `c${i}` })) },
    ]);
    for (const id of ['c0', 'c1', 'c2', 'c3', 'c4']) h.service.answer(id);
    await done;
    // The mark commit, then the results (at the end of the batch: the interval is long).
    expect(h.producers.transactions).toHaveLength(2);
  });
});

describe('PartitionLane: ledger checkpoints', () => {
  it('every checkpoint lists exactly the open marks, and the records answered ahead of the offset', async () => {
    const h = harness({ ledger: true, commitIntervalMs: 5 });
    h.service.mode = 'hold';
    const done = processBatch(batchOf([record(0, 'a'), record(1, 'b'), record(2, 'c'), record(3, 'd')]), h.ctx, h.fetching);
    await h.service.callsReach(4);
    h.service.answer('c1');
    h.service.answer('c3');
    // c1 and c3 are answered while c0 is still under way: their results commit without waiting for it.
    await until(() => h.producers.committedKeys(RESULTS).length === 2, 'c1 and c3 published ahead of c0');
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c1', 'c3']);
    expect(h.producers.groupOffset(TOPIC, PARTITION) ?? 0n).toBe(0n);
    h.service.answer('c0');
    await until(() => h.producers.groupOffset(TOPIC, PARTITION) === 2n, 'offsets 0-1 commit');
    h.service.answer('c2');
    await done;
    const open = (c: Checkpoint): bigint[] => c.open.map((m) => m.offset);
    const answered = (c: Checkpoint): bigint[] => (c.done ?? []).map((d) => d.offset);
    const checkpoints = h.producers.checkpoints(LEDGER);
    expect({ next: checkpoints[0]?.next, open: open(checkpoints[0]!) }).toEqual({ next: 0n, open: [0n, 1n, 2n, 3n] });
    // Once c1 and c3 are published: open marks are 0 and 2 only, 1 and 3 answered.
    expect(checkpoints.some((c) => c.next === 0n && open(c).join() === '0,2' && answered(c).join() === '1,3')).toBe(true);
    expect(checkpoints.some((c) => c.next === 2n && open(c).join() === '2' && answered(c).join() === '3')).toBe(true);
    for (const c of checkpoints) {
      // A record is open or answered, never both, and nothing below the offset is listed.
      expect(open(c).filter((o) => answered(c).includes(o))).toEqual([]);
      expect([...open(c), ...answered(c)].every((o) => o >= c.next)).toBe(true);
    }
    expect(checkpoints.at(-1)).toEqual({ next: 4n, open: [] });
    // Each result exactly once, the ones answered early first.
    expect(h.producers.committedKeys(RESULTS).slice(2).sort()).toEqual(['c0', 'c2']);
    expect(h.claim.open.size).toBe(0);
  });

  it('keeps inherited marks open until their results commit, and never sends them again (report)', async () => {
    const inherited: OpenMark = { offset: 1n, commandId: 'c1', at: 1_700_000_000_000 };
    const h = harness({ ledger: true, claim: claimOf(0n, [inherited]) });
    await processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0']);
    const checkpoints = h.producers.checkpoints(LEDGER);
    // c1's UNKNOWN result is published with c0's mark, ahead of c0: the checkpoint lists it as
    // answered (no longer open); the final commit lists nothing.
    expect(checkpoints[0]).toEqual({ next: 0n, open: [expect.objectContaining({ offset: 0n })], done: [{ offset: 1n, commandId: 'c1' }] });
    expect(checkpoints.at(-1)).toEqual({ next: 2n, open: [] });
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c1', 'c0']);
  });

  it('drops a withdrawn mark (surely not sent) from the next checkpoint', async () => {
    const h = harness({ ledger: true, commitIntervalMs: 5, breakerThreshold: 1 });
    h.service.mode = 'hold';
    // c0's connection is refused: surely not sent; the circuit opens and c0 waits at the gate.
    h.service.script = (commandId) => (commandId === 'c0' ? refused(true) : undefined);
    const done = processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching);
    await h.service.callsReach(2);
    await until(() => h.gate.reason === 'circuit_open', 'the circuit opens');
    // c1 ends (a FAILED result that leaves the gate shut): the commit it schedules cannot move
    // the offset past the open c0, but publishes c1's result and writes a checkpoint without c0's mark.
    h.service.fail('c1', refused(false));
    await until(() => h.producers.checkpoints(LEDGER).length === 2, 'a second checkpoint');
    expect(h.producers.checkpoints(LEDGER).map((c) => c.open.map((m) => m.offset))).toEqual([[0n, 1n], []]);
    expect(h.producers.checkpoints(LEDGER)[1]?.done).toEqual([{ offset: 1n, commandId: 'c1' }]);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0', 'c1']);
    // A forced stop: c0 gives up unsent; the offset stays at 0, and the checkpoint keeps c1 answered.
    h.abandon.abort();
    await done;
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c1']);
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(0n);
    expect(h.producers.checkpoints(LEDGER).at(-1)).toEqual({ next: 0n, open: [], done: [{ offset: 1n, commandId: 'c1' }] });
  });
});

describe('PartitionLane: a refused command held at the funds pause', () => {
  it('withdraws its mark: the next checkpoint does not list a command the service refused (105400)', async () => {
    const h = harness({ ledger: true, commitIntervalMs: 5 });
    h.service.mode = 'hold';
    h.service.script = (commandId) => (commandId === 'c0' ? insufficientFunds() : undefined);
    const done = processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching);
    await h.service.callsReach(2);
    await until(() => h.gate.reason === 'insufficient_funds', 'the funds pause');
    h.service.fail('c1', refused(false));
    await until(() => h.producers.checkpoints(LEDGER).some((c) => c.open.every((m) => m.offset !== 0n)), 'a checkpoint without c0');
    h.abandon.abort();
    await done;
    expect(
      h.producers
        .checkpoints(LEDGER)
        .at(-1)
        ?.open.map((m) => m.offset),
    ).not.toContain(0n);
  });
});

describe('PartitionLane: fencing', () => {
  it('a fenced mark commit ends the batch with FencedError and nothing is sent', async () => {
    const h = harness({ ledger: true });
    h.producers.fate = () => 'fenced';
    await expect(processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching)).rejects.toBeInstanceOf(FencedError);
    expect(h.service.calls).toEqual([]);
    expect(h.producers.committed).toEqual([]);
  });

  it('no send follows a fenced commit', async () => {
    const h = harness({ ledger: true });
    // The first mark commits; every later commit is fenced (another instance took over).
    h.producers.fate = (tx) => (tx.id === 0 ? 'ok' : 'fenced');
    await expect(processBatch(batchOf([record(0, 'a'), record(1, 'a'), record(2, 'a')]), h.ctx, h.fetching)).rejects.toBeInstanceOf(FencedError);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0']);
    expect(h.producers.committedKeys(RESULTS)).toEqual([]);
  });
});

describe('PartitionLane: an ambiguous commit', () => {
  it('does not resend results whose transaction committed although the client saw it fail', async () => {
    const h = harness();
    h.producers.fate = (tx) => (tx.id === 0 ? 'lost-answer' : 'ok');
    await processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching);
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c0', 'c1']);
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(2n);
    expect(h.service.calls).toHaveLength(2);
  });

  it('resends the results of a transaction that did not commit', async () => {
    const h = harness();
    h.producers.fate = (tx) => (tx.id === 0 ? 'fail' : 'ok');
    await processBatch(batchOf([record(0, 'a'), record(1, 'b')]), h.ctx, h.fetching);
    expect(h.producers.transactions[0]?.state).toBe('aborted');
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c0', 'c1']);
    expect(h.service.calls).toHaveLength(2);
  });
});

describe('PartitionLane: retiring gives up what waits in the handler', () => {
  it('a command waiting for a rate-limit token when its partition moves is given up unsent at once: it takes no token and does not hold the lane open', async () => {
    const limiter = new RateLimiter(1);
    limiter.pause(); // as during a rebalance: no token for now
    const h = harness({ rateLimiter: limiter });
    const lane = new PartitionLane(h.ctx);
    lane.accept(batchOf([record(0, 'a')]));
    await until(() => limiter.waiting === 1, 'the command waiting for a token');
    lane.retire(new Error('the partition moved'));
    expect(await lane.ended).toEqual({});
    expect(limiter.waiting).toBe(0);
    expect(h.service.calls).toHaveLength(0);
    expect(h.producers.committedKeys(RESULTS)).toEqual([]);
  });
});

describe('PartitionLane: fetching is decoupled from sending', () => {
  it('takes the next batch while an earlier call is still under way: a later key does not wait for the slowest send', async () => {
    const h = harness();
    h.service.mode = 'hold';
    const lane = new PartitionLane(h.ctx);
    const first = batchOf([record(0, 'a')]);
    lane.accept(first);
    await h.service.callsReach(1);
    // accept returned with c0's call still pending; the next fetch brings c1 (another key).
    const second = batchOf([record(1, 'b')]);
    lane.accept(second);
    await h.service.callsReach(2);
    expect(h.service.pending.sort()).toEqual(['c0', 'c1']);
    expect([...first.resolved, ...second.resolved]).toEqual(['0', '1']);
    h.service.answer('c1');
    await tick(20);
    // c1 finished first, but the committed offset never passes c0, whose result is not in yet.
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(0n);
    h.service.answer('c0');
    await until(() => h.producers.groupOffset(TOPIC, PARTITION) === 2n, 'both results committed');
    expect(h.producers.committedKeys(RESULTS).sort()).toEqual(['c0', 'c1']);
    lane.retire(new Error('test done'));
    expect(await lane.ended).toEqual({});
  });

  it('keeps per-key order across batches: a key’s next command waits for its previous one, even from a later batch', async () => {
    const h = harness();
    h.service.mode = 'hold';
    const lane = new PartitionLane(h.ctx);
    lane.accept(batchOf([record(0, 'a')]));
    await h.service.callsReach(1);
    lane.accept(batchOf([record(1, 'a'), record(2, 'b')]));
    await h.service.callsReach(2);
    await tick(20);
    expect(h.service.pending.sort()).toEqual(['c0', 'c2']);
    h.service.answer('c0');
    await h.service.callsReach(3);
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0', 'c2', 'c1']);
    h.service.answer('c1');
    h.service.answer('c2');
    await until(() => h.producers.groupOffset(TOPIC, PARTITION) === 3n, 'all committed');
    lane.retire(new Error('test done'));
    await lane.ended;
  });

  it('never dispatches a record fetched twice', async () => {
    const h = harness();
    const lane = new PartitionLane(h.ctx);
    lane.accept(batchOf([record(0, 'a'), record(1, 'b')]));
    lane.accept(batchOf([record(0, 'a'), record(1, 'b'), record(2, 'c')]));
    await until(() => h.producers.groupOffset(TOPIC, PARTITION) === 3n, 'all committed');
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0', 'c1', 'c2']);
    lane.retire(new Error('test done'));
    await lane.ended;
  });
});

describe('PartitionLane: retiring (a rebalance, shutdown)', () => {
  it('lets the call under way finish and commit; a command waiting for a slot gives up unsent and is not committed', async () => {
    const h = harness({ ledger: true, slots: 1 });
    h.service.mode = 'hold';
    const lane = new PartitionLane(h.ctx);
    lane.accept(batchOf([record(0, 'a'), record(1, 'b')]));
    await h.service.callsReach(1);
    await tick(20);
    lane.retire(new Error('the group is rebalancing'));
    // No more records once retired.
    const later = batchOf([record(2, 'c')]);
    lane.accept(later);
    expect(later.resolved).toEqual([]);
    h.service.answer('c0');
    expect(await lane.ended).toEqual({});
    expect(h.service.calls.map((c) => c.commandId)).toEqual(['c0']);
    expect(h.producers.committedKeys(RESULTS)).toEqual(['c0']);
    expect(h.producers.groupOffset(TOPIC, PARTITION)).toBe(1n);
    // c1 was marked but never sent: the last checkpoint does not list it (the next owner sends it).
    expect(h.producers.checkpoints(LEDGER).at(-1)?.open).toEqual([]);
  });

  it('a retiring lane whose producer is gone commits nothing (it never initialises one: that would fence the new owner)', async () => {
    const h = harness();
    let current = true;
    const lane = new PartitionLane({ ...h.ctx, standing: { maySend: () => current, mayReinitialise: () => current } });
    h.service.mode = 'hold';
    lane.accept(batchOf([record(0, 'a')]));
    await h.service.callsReach(1);
    current = false;
    h.producers.present = false;
    lane.retire(new Error('rebalance'));
    h.service.answer('c0');
    const end = await lane.ended;
    expect(end.failure).toBeInstanceOf(FencedError);
    expect(h.producers.committed).toEqual([]);
  });
});

describe('PartitionLane: the bytes in hand (MAX_BYTES_IN_HAND)', () => {
  it('stops fetching the partition when the process holds as many record bytes as it may, and fetches it again once they are done', async () => {
    const records = Array.from({ length: 6 }, (_, i) => record(i, `k${i}`));
    const size = commandRecordBytes(records[0] ?? record(0, 'k0'));
    const budget = new BytesInHand(2 * size);
    const h = harness({ bytesInHand: budget });
    h.service.mode = 'hold';
    const done = processBatch(batchOf(records), h.ctx, h.fetching);
    await h.service.callsReach(2);
    await tick(30);
    // Two records in hand: the third did not fit, the partition is not fetched meanwhile.
    expect(h.service.calls).toHaveLength(2);
    expect(h.fetching.held).toBe(true);
    expect(budget.used).toBe(2 * size);
    for (let i = 0; i < records.length; i += 1) {
      await h.service.callsReach(i + 1);
      h.service.answer(`c${i}`);
    }
    await done;
    expect(h.producers.committedKeys(RESULTS)).toEqual(records.map((_, i) => `c${i}`));
    expect(budget.used).toBe(0);
  });
});

describe('PartitionLane: handing over when the partition moves (ledger on)', () => {
  it('hands over the result of a call that ends after the partition moved, commits nothing more, and ends only once that handover is written', async () => {
    const h = harness({ ledger: true });
    const writes: { offset: bigint; settlement: string; release: () => void }[] = [];
    const ctx: LaneContext = {
      ...h.ctx,
      handovers: {
        write: (_partition, offset, _mark, settlement) => new Promise<void>((release) => void writes.push({ offset, settlement: settlement.kind, release })),
        lookout: () => {
          throw new Error('no mark in doubt here');
        },
      },
    };
    h.service.mode = 'hold';
    const lane = new PartitionLane(ctx);
    lane.accept(batchOf([record(0, 'a')]));
    await h.service.callsReach(1);
    const transactionsBefore = h.producers.committedKeys(RESULTS).length;
    lane.retire(new Error('moved'), true);
    let ended = false;
    void lane.ended.then(() => (ended = true));
    h.service.answer('c0');
    await until(() => writes.length === 1, 'the handover of the call’s result');
    expect(writes.map((w) => [w.offset, w.settlement])).toEqual([[0n, 'result']]);
    await tick(20);
    expect(ended).toBe(false);
    writes[0]?.release();
    await until(() => ended, 'the lane to end after its handover is written');
    // Its result was handed over, not committed: the next owner publishes it.
    expect(h.producers.committedKeys(RESULTS).length).toBe(transactionsBefore);
  });
});
