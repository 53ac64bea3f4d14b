/**
 * The worker's lanes without a broker: a real PartitionOwnership over fake effects, fake
 * transactional producers, a real GuardedSender over a recording service client.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/index.ts';
import type { FetchedRecord } from '../../../src/kafka/ports.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { ProviderClient, ProviderRequest, ProviderSuccess } from '../../../src/provider/types.ts';
import { BytesInHand } from '../../../src/worker/source/bytes-in-hand.ts';
import { GuardedSender } from '../../../src/worker/send/guarded-sender.ts';
import { LaneRouter } from '../../../src/worker/ownership/lane-router.ts';
import { PartitionOwnership } from '../../../src/worker/ownership/partition-ownership.ts';
import { RateLimiter } from '../../../src/worker/send/rate-limiter.ts';
import { Semaphore } from '../../../src/worker/semaphore.ts';
import { OutageCounter, ServiceGate } from '../../../src/worker/send/service-gate.ts';
import type { WorkerParts } from '../../../src/worker/parts.ts';
import { codec, providerSuccess, record, recordingBatch, type RecordingBatch } from '../../helpers/command-records.ts';
import { FakeProducers } from '../../helpers/fake-producers.ts';
import { eventually } from '../../../tools/poll.ts';

const TOPIC = 'cmds';
const PARTITION = 0;

class RecordingService implements ProviderClient {
  readonly sent: string[] = [];
  async send(_request: ProviderRequest, options?: { correlationId?: string }): Promise<ProviderSuccess> {
    this.sent.push(options?.correlationId ?? '?');
    return providerSuccess();
  }
  close(): void {}
}

function batchOf(messages: FetchedRecord[]): RecordingBatch {
  return recordingBatch(TOPIC, PARTITION, messages);
}

const range = (from: number, to: number): FetchedRecord[] => Array.from({ length: to - from }, (_, i) => record(from + i, `k${from + i}`));

const tick = (ms = 0): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A claim of PARTITION whose fence waits until `finishFence`, and a batch of records 0–2 whose
 * heartbeats are counted (each answered by `heartbeat`).
 */
function fencingClaim(heartbeat: () => Promise<void>): ReturnType<typeof harness> & {
  batch: RecordingBatch;
  heartbeats: () => number;
  finishFence: () => void;
} {
  let finishFence = (): void => undefined;
  const parts = harness(Promise.resolve(), new Promise<void>((resolve) => (finishFence = resolve)));
  parts.ownership.joined(TOPIC, [PARTITION]);
  let beats = 0;
  const batch: RecordingBatch = {
    ...batchOf(range(0, 3)),
    heartbeat: async () => {
      beats += 1;
      await heartbeat();
    },
  };
  return { ...parts, batch, heartbeats: () => beats, finishFence: () => finishFence() };
}

const gates: ServiceGate[] = [];
afterEach(() => {
  for (const gate of gates.splice(0)) gate.close();
});

/**
 * `handoverDone`: a claim's handover (an earlier lane of this process finishing) waits for it too;
 * `fenceDone`: so does its fence.
 */
function harness(
  handoverDone: Promise<void> = Promise.resolve(),
  fenceDone: Promise<void> = Promise.resolve(),
  now: () => number = Date.now,
  commitIntervalMs = 5,
): {
  lanes: LaneRouter;
  ownership: PartitionOwnership;
  producers: FakeProducers;
  service: RecordingService;
  slots: Semaphore;
} {
  const config = loadConfig({
    KAFKA_BROKERS: 'localhost:9092',
    SCHEMA_REGISTRY_URL: 'http://localhost:8081',
    PROVIDER_BASE_URL: 'https://uni.example.test',
    PROVIDER_ACCESS_KEY_ID: 'test-key',
    COMMAND_TOPIC: TOPIC,
    LEDGER_ENABLED: 'false',
    COMMIT_INTERVAL_MS: String(commitIntervalMs),
  });
  const producers = new FakeProducers();
  const service = new RecordingService();
  const gate = new ServiceGate({
    backoff: { insufficient_funds: { initialMs: 600_000, maxMs: 600_000 }, circuit_open: { initialMs: 600_000, maxMs: 600_000 } },
  });
  gates.push(gate);
  const sender = new GuardedSender({ client: service, gate, outages: new OutageCounter(5), rateLimiter: new RateLimiter(0), fundsPolicy: 'pause' });
  const log = createLogger('silent');
  const metrics = createMetrics();
  // The ownership's handover goes to the lanes, made below with the ownership in their parts.
  const made: { lanes?: LaneRouter } = {};
  const ownership = new PartitionOwnership({
    effects: {
      handover: async (topic, partition) => {
        await handoverDone;
        return made.lanes === undefined ? false : made.lanes.handover(topic, partition);
      },
      fence: async () => fenceDone,
      groupOffset: async (topic, partition) => producers.groupOffset(topic, partition),
      checkpoint: async () => undefined,
      recentCommandIds: async () => [],
      carry: () => false,
      pauseLost: () => undefined,
      resumeAll: () => undefined,
      reclaimLost: () => undefined,
    },
    dedupWindow: 0,
    sessionTimeoutMs: 30_000,
    log,
    metrics,
    now,
  });
  // Only what LaneRouter touches; the rest of the wiring is not part of this test.
  const parts = {
    source: { priority: 'normal', topic: TOPIC, consumerGroup: config.consumerGroup, ledgerTopic: config.topics.ledger, markLingerMs: 0 },
    ownership,
    producers,
    codec,
    sender,
    maxRecordBytes: 1_000_000,
    tracer: undefined,
    fetchPauses: { hold: () => undefined, release: () => undefined, stopFetching: () => undefined },
    consumer: { seek: () => undefined },
    admin: { fetchOffsets: async () => [{ topic: TOPIC, partitions: [{ partition: PARTITION, offset: String(producers.groupOffset(TOPIC, PARTITION)) }] }] },
  } as unknown as WorkerParts;
  const slots = new Semaphore(1);
  const lanes = new LaneRouter({
    parts,
    config,
    slots,
    markPermits: new Semaphore(2),
    bytesInHand: new BytesInHand(1_000_000_000),
    metrics,
    log,
    abandon: new AbortController().signal,
    onProgress: () => undefined,
    onBusy: () => undefined,
  });
  made.lanes = lanes;
  return { lanes, ownership, producers, service, slots };
}

describe('LaneRouter', () => {
  it('a batch that must claim while the lease has lapsed (no heartbeat went out while no broker answered) heartbeats first, and the claim goes on', async () => {
    let clock = 1_000_000;
    const { lanes, ownership, producers, service } = harness(undefined, undefined, () => clock);
    ownership.joined(TOPIC, [PARTITION]);
    // The broker was down for longer than the session: no heartbeat confirmed the member meanwhile.
    clock += 60_000;
    expect(ownership.leaseHolds()).toBe(false);
    let beats = 0;
    const batch: RecordingBatch = {
      ...batchOf(range(0, 3)),
      // kafkajs's heartbeat, answered: its HEARTBEAT event confirms the member (source-pipeline.ts).
      heartbeat: async () => {
        beats += 1;
        ownership.heartbeat();
      },
    };
    // Without the heartbeat first the claim refused (LEASE_EXPIRED), kafkajs retried the batch, and
    // no heartbeat ever went out: the member sat out its session until the group dropped it.
    await lanes.accept(batch);
    expect(beats).toBeGreaterThanOrEqual(1);
    await eventually(() => producers.groupOffset(TOPIC, PARTITION) === 3n, 5_000, 'the three commands committed');
    expect([...service.sent].sort()).toEqual(['c0', 'c1', 'c2']);
  });

  it('after a rebalance retired a lane, a batch fetched before the new generation does not open a lane that commits past the records the retired lane gave up', async () => {
    const { lanes, ownership, producers, service, slots } = harness();
    ownership.joined(TOPIC, [PARTITION]);
    // Nothing can send yet: the test holds the only in-flight slot.
    await slots.acquire();
    const first = batchOf(range(0, 5));
    await lanes.accept(first);
    expect(first.resolved).toEqual(['0', '1', '2', '3', '4']);
    await tick(20);

    // The group is rebalancing: the commands waiting for a slot give up unsent.
    lanes.retireAll(new Error('the group is rebalancing'));
    await tick(20);
    slots.release();

    // kafkajs may still hand over a batch it fetched before the rejoin, after the records the
    // retired lane took; the claim is still the current generation's.
    const late = batchOf(range(5, 10));
    await lanes.accept(late);
    await tick(50);
    expect(service.sent).toEqual([]);
    expect(producers.groupOffset(TOPIC, PARTITION)).toBe(0n);
    expect(late.resolved).toEqual([]);

    // The new generation fetches from the committed offset: every command is sent, once.
    ownership.joined(TOPIC, [PARTITION]);
    lanes.retireAll(new Error('a new group generation'));
    await lanes.accept(batchOf(range(0, 10)));
    await eventually(() => producers.groupOffset(TOPIC, PARTITION) === 10n, 5_000, 'all ten commands to be committed');
    expect([...service.sent].sort()).toEqual(['c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9']);
  });

  it('a crash of the consumer retires every lane at once, one holding for a rebalance included, rather than at the rejoin', async () => {
    const { lanes, ownership, service, slots } = harness();
    ownership.joined(TOPIC, [PARTITION]);
    // Nothing can send yet: the test holds the only in-flight slot.
    await slots.acquire();
    await lanes.accept(batchOf(range(0, 3)));
    await tick(20);
    ownership.rebalancing();
    lanes.holdAll();
    expect(lanes.holding()).toHaveLength(1);

    // kafkajs's crash: the member is out of its group, and its partitions may be another's at once.
    ownership.outOfGroup();
    expect(lanes.retireUnkeepable(new Error('the consumer crashed'))).toBe(1);
    expect(lanes.holding()).toEqual([]);
    // A lane retiring already is not counted again (the watch of a lapsed lease warns only when one retired).
    expect(lanes.retireUnkeepable(new Error('the lease lapsed while the group rebalanced'))).toBe(0);
    slots.release();
    await tick(50);
    // The commands waiting for a slot were given up unsent; the next owner (or this process's next claim) sends them.
    expect(service.sent).toEqual([]);
  });

  it('a batch waiting for its claim keeps the member heartbeating (kafkajs heartbeats only between batches) and leaves as soon as a heartbeat finds the group rebalancing', async () => {
    let finishHandover = (): void => undefined;
    const { lanes, ownership, service } = harness(new Promise<void>((resolve) => (finishHandover = resolve)));
    ownership.joined(TOPIC, [PARTITION]);
    let beats = 0;
    let rebalancing = false;
    const batch: RecordingBatch = {
      ...batchOf(range(0, 3)),
      heartbeat: async () => {
        beats += 1;
        if (rebalancing) throw Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' });
      },
    };
    const accepted = lanes.accept(batch);
    await tick(350);
    expect(beats).toBeGreaterThanOrEqual(2);

    rebalancing = true;
    await expect(accepted).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
    expect(batch.resolved).toEqual([]);
    finishHandover();
    await tick(50);
    expect(service.sent).toEqual([]);
  });

  it("a batch whose claim has begun to fence keeps heartbeating; one that finds the group rebalancing ends the batch only once the claim is done (a fence under way after a rejoin could land after the next owner's)", async () => {
    const { lanes, batch, heartbeats, finishFence } = fencingClaim(async () => {
      throw Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' });
    });
    let left = false;
    const accepted = lanes.accept(batch);
    accepted.catch(() => (left = true));
    await tick(350);
    expect(heartbeats()).toBeGreaterThanOrEqual(1);
    // Still inside the handler: kafkajs cannot rejoin while the fence is under way.
    expect(left).toBe(false);
    finishFence();
    await expect(accepted).rejects.toMatchObject({ type: 'REBALANCE_IN_PROGRESS' });
    expect(batch.resolved).toEqual([]);
  });

  it('a batch whose claim waits long after its fence (a hanging transaction) heartbeats all along, so the member outlives a short session, and is then taken as before', async () => {
    const { lanes, service, batch, heartbeats, finishFence } = fencingClaim(async () => undefined);
    const accepted = lanes.accept(batch);
    await tick(350);
    expect(heartbeats()).toBeGreaterThanOrEqual(2);
    finishFence();
    await accepted;
    expect(batch.resolved).toEqual(['0', '1', '2']);
    await eventually(() => service.sent.length === 3, 5_000, 'the three commands to be sent');
  });

  it('a retirement’s wait for what was done to commit ends with that commit (the lane tells it), well before its bound', async () => {
    // Results wait a minute for their transaction, unless the claim retires (then they commit at once).
    const { lanes, ownership, producers, service } = harness(Promise.resolve(), Promise.resolve(), Date.now, 60_000);
    ownership.joined(TOPIC, [PARTITION]);
    // The first results commit at once (no transaction before them); the next wait for the interval.
    await lanes.accept(batchOf(range(0, 3)));
    await eventually(() => producers.groupOffset(TOPIC, PARTITION) === 3n, 5_000, 'the first three results to commit');
    await lanes.accept(batchOf(range(3, 6)));
    await eventually(() => service.sent.length === 6, 5_000, 'the next three commands to be sent');
    await tick(20);
    expect(producers.groupOffset(TOPIC, PARTITION)).toBe(3n);
    lanes.retireAll(new Error('shutting down'));
    const started = performance.now();
    await lanes.retireCommitted(60_000);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(producers.groupOffset(TOPIC, PARTITION)).toBe(6n);
    // Nothing left to wait for: at once.
    await lanes.retireCommitted(60_000);
  });

  it('a batch whose claim completes while it heartbeats is taken as before', async () => {
    let finishHandover = (): void => undefined;
    const { lanes, ownership, service } = harness(new Promise<void>((resolve) => (finishHandover = resolve)));
    ownership.joined(TOPIC, [PARTITION]);
    const batch = batchOf(range(0, 3));
    const accepted = lanes.accept(batch);
    await tick(250);
    finishHandover();
    await accepted;
    expect(batch.resolved).toEqual(['0', '1', '2']);
    await eventually(() => service.sent.length === 3, 5_000, 'the three commands to be sent');
  });
});
