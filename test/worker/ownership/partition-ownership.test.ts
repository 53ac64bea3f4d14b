import { describe, expect, it, vi } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import type { Checkpoint } from '../../../src/worker/lane/ledger-checkpoint.ts';
import { PartitionOwnership, type OwnershipEffects } from '../../../src/worker/ownership/partition-ownership.ts';

const TOPIC = 'commands';

interface Recorded {
  fenced: string[];
  paused: string[];
  resumed: { topic: string; partitions: readonly number[] }[];
  reclaimed: { topic: string; partition: number; offset: bigint }[];
  ledgerReads: number;
  /** How far each ledger read went, in order. */
  ledgerReadEnds: string[];
}

function ownershipWith(options: {
  groupOffset?: bigint;
  checkpoint?: Checkpoint;
  recent?: { offset: bigint; commandId: string }[];
  dedupWindow?: number;
  sessionTimeoutMs?: number;
  now?: () => number;
  failRecent?: boolean;
  /** Each ledger read, in turn (the last repeats); overrides `checkpoint`. */
  checkpoints?: (Checkpoint | undefined)[];
  localLane?: boolean;
  /** Whether a producer carries over to the next generation (a kept claim). */
  carry?: boolean;
  /** The handover step (default: at once, `localLane`). */
  handover?: () => Promise<boolean>;
}): { ownership: PartitionOwnership; recorded: Recorded; lostGauge: () => Promise<number> } {
  const recorded: Recorded = { fenced: [], paused: [], resumed: [], reclaimed: [], ledgerReads: 0, ledgerReadEnds: [] };
  const effects: OwnershipEffects = {
    fence: async (topic, partition) => void recorded.fenced.push(`${topic}:${partition}`),
    groupOffset: async () => options.groupOffset ?? 0n,
    checkpoint: async (_partition, upTo) => {
      recorded.ledgerReads += 1;
      recorded.ledgerReadEnds.push(`${upTo}${recorded.fenced.length > 0 ? ' after fencing' : ''}`);
      const list = options.checkpoints;
      return list === undefined ? options.checkpoint : list[Math.min(recorded.ledgerReads, list.length) - 1];
    },
    recentCommandIds: async () => {
      if (options.failRecent === true) throw new Error('reader down');
      return options.recent ?? [];
    },
    handover: options.handover ?? (async () => options.localLane ?? false),
    carry: () => options.carry ?? true,
    pauseLost: (topic, partition) => void recorded.paused.push(`${topic}:${partition}`),
    resumeAll: (topic, partitions) => void recorded.resumed.push({ topic, partitions }),
    reclaimLost: (topic, partition, offset) => void recorded.reclaimed.push({ topic, partition, offset }),
  };
  const metrics = createMetrics();
  const ownership = new PartitionOwnership({
    effects,
    dedupWindow: options.dedupWindow ?? 100,
    sessionTimeoutMs: options.sessionTimeoutMs ?? 30_000,
    log: createLogger('silent'),
    metrics,
    ...(options.now !== undefined && { now: options.now }),
  });
  // The group confirmed this member (as a heartbeat or a join does): claims may fence.
  ownership.confirm();
  /** sms_worker_lost_partitions now. */
  const lostGauge = async (): Promise<number> => (await metrics.lostPartitions.get()).values[0]?.value ?? 0;
  return { ownership, recorded, lostGauge };
}

/** An ownership over these effects (the rest do nothing: no earlier owner, no ledger, nothing read), confirmed by the group. */
function ownershipOver(effects: Partial<OwnershipEffects>, dedupWindow: number): PartitionOwnership {
  const ownership = new PartitionOwnership({
    effects: {
      handover: async () => false,
      fence: async () => undefined,
      groupOffset: async () => 0n,
      checkpoint: async () => undefined,
      recentCommandIds: async () => [],
      carry: () => false,
      pauseLost: () => undefined,
      resumeAll: () => undefined,
      reclaimLost: () => undefined,
      ...effects,
    },
    dedupWindow,
    sessionTimeoutMs: 30_000,
    log: createLogger('silent'),
    metrics: createMetrics(),
  });
  ownership.confirm();
  return ownership;
}

describe('PartitionOwnership: no claim without the lease', () => {
  it('does not fence a partition while no heartbeat confirms this member (a process frozen or cut off)', async () => {
    let now = 1_000_000;
    const { ownership, recorded } = ownershipWith({ sessionTimeoutMs: 10_000, now: () => now });
    now += 60_000;
    await expect(ownership.claim(TOPIC, 0)).rejects.toThrow(/not claiming/);
    expect(recorded.fenced).toEqual([]);
    ownership.confirm();
    await ownership.claim(TOPIC, 0);
    expect(recorded.fenced).toEqual([`${TOPIC}:0`]);
  });
});

describe('PartitionOwnership recovery', () => {
  it('starts at the ledger checkpoint when the group offset is behind it, and inherits its open marks', async () => {
    const marks = [
      { offset: 11n, commandId: 'a', at: 1 },
      { offset: 14n, commandId: 'b', at: 2 },
    ];
    const { ownership } = ownershipWith({ groupOffset: 9n, checkpoint: { next: 11n, open: marks } });
    const claim = await ownership.claim(TOPIC, 0);
    expect(claim.start).toBe(11n);
    expect(claim.position.committed).toBe(11n);
    expect([...claim.inDoubt.keys()]).toEqual([11n, 14n]);
    // Inherited marks stay open (listed by every checkpoint) until their results commit.
    expect([...claim.open.keys()]).toEqual([11n, 14n]);
    expect(claim.open).not.toBe(claim.inDoubt);
  });

  it('starts at the group offset when it is ahead, dropping marks below it', async () => {
    const { ownership } = ownershipWith({ groupOffset: 20n, checkpoint: { next: 15n, open: [{ offset: 16n, commandId: 'a', at: 1 }] } });
    const claim = await ownership.claim(TOPIC, 0);
    expect(claim.start).toBe(20n);
    expect(claim.inDoubt.size).toBe(0);
  });

  it('rebuilds the dedup window from the records before the start; a reader failure fails the claim rather than leave it empty (a repeat would be sent again)', async () => {
    const { ownership } = ownershipWith({ groupOffset: 5n, recent: [{ offset: 3n, commandId: 'seen' }] });
    expect((await ownership.claim(TOPIC, 0)).dedup.firstOffset('seen')).toBe(3n);
    const failing = ownershipWith({ groupOffset: 5n, failRecent: true }).ownership;
    await expect(failing.claim(TOPIC, 0)).rejects.toMatchObject({ code: 'REPEAT_WINDOW_UNREADABLE', retryable: true });
  });

  it('fences once per partition and generation; a new generation fences again', async () => {
    const { ownership, recorded } = ownershipWith({});
    const [a, b] = await Promise.all([ownership.claim(TOPIC, 0), ownership.claim(TOPIC, 0)]);
    expect(a).toBe(b);
    expect(recorded.fenced).toEqual([`${TOPIC}:0`]);
    ownership.joined(TOPIC, [0]);
    const c = await ownership.claim(TOPIC, 0);
    expect(c).not.toBe(a);
    expect(c.generation).toBe(1);
    expect(recorded.fenced).toEqual([`${TOPIC}:0`, `${TOPIC}:0`]);
  });

  it('retries a failed claim at the next use', async () => {
    let failures = 1;
    const flaky = ownershipOver(
      {
        fence: async () => {
          if (failures-- > 0) throw new Error('broker away');
        },
      },
      0,
    );
    await expect(flaky.claim(TOPIC, 0)).rejects.toThrow('broker away');
    await expect(flaky.claim(TOPIC, 0)).resolves.toMatchObject({ start: 0n });
  });
});

describe('PartitionOwnership: work done while the claim waits for the earlier owner', () => {
  it('reads the window up to the group offset and connects the producer during the handover, then reads only the records committed since the start moved', async () => {
    // The earlier owner commits offsets 10..11 while this claim waits for it: the group offset goes 10 → 12.
    const log = Array.from({ length: 12 }, (_, i) => ({ offset: BigInt(i), commandId: `id-${i}` }));
    let groupOffset = 10n;
    const reads: { start: bigint; count: number; fenced: boolean }[] = [];
    let fenced = false;
    const prepared: string[] = [];
    let handoverDone!: (local: boolean) => void;
    const ownership = ownershipOver(
      {
        handover: () => new Promise<boolean>((resolve) => (handoverDone = resolve)),
        prepareFence: (topic, partition) => void prepared.push(`${topic}:${partition}${fenced ? ' after fencing' : ''}`),
        fence: async () => void (fenced = true),
        groupOffset: async () => groupOffset,
        recentCommandIds: async (_topic, _partition, start, count) => {
          reads.push({ start, count, fenced });
          const from = start - BigInt(count) > 0n ? start - BigInt(count) : 0n;
          return log.filter((r) => r.offset >= from && r.offset < start);
        },
      },
      8,
    );
    const claiming = ownership.claim(TOPIC, 0);
    await new Promise((resolve) => setTimeout(resolve, 5));
    // Read before the fence, while the handover still waits; the producer is connected meanwhile too.
    expect(reads).toEqual([{ start: 10n, count: 8, fenced: false }]);
    expect(prepared).toEqual([`${TOPIC}:0`]);
    groupOffset = 12n;
    handoverDone(true);
    const claim = await claiming;
    expect(reads).toEqual([
      { start: 10n, count: 8, fenced: false },
      { start: 12n, count: 2, fenced: true },
    ]);
    // The window a read at the start would give: offsets 4..11.
    expect(claim.start).toBe(12n);
    expect(claim.dedup.size).toBe(8);
    expect(claim.dedup.firstOffset('id-3')).toBeUndefined();
    for (let i = 4; i < 12; i += 1) expect(claim.dedup.firstOffset(`id-${i}`)).toBe(BigInt(i));
  });

  it('a window read ahead (before joining) serves the partition’s first claim, completed with what was committed since; an old one is read afresh', async () => {
    const log = Array.from({ length: 12 }, (_, i) => ({ offset: BigInt(i), commandId: `id-${i}` }));
    let groupOffset = 10n;
    let now = 1_000;
    const reads: { partition: number; start: bigint; count: number }[] = [];
    const ownership = new PartitionOwnership({
      effects: {
        handover: async () => false,
        fence: async () => undefined,
        groupOffset: async () => groupOffset,
        checkpoint: async () => undefined,
        recentCommandIds: async (_topic, partition, start, count) => {
          reads.push({ partition, start, count });
          const from = start - BigInt(count) > 0n ? start - BigInt(count) : 0n;
          return log.filter((r) => r.offset >= from && r.offset < start);
        },
        carry: () => false,
        pauseLost: () => undefined,
        resumeAll: () => undefined,
        reclaimLost: () => undefined,
      },
      dedupWindow: 8,
      sessionTimeoutMs: 30_000,
      log: createLogger('silent'),
      metrics: createMetrics(),
      now: () => now,
    });
    ownership.confirm();
    await ownership.readWindowsAhead(TOPIC, 2);
    expect(reads).toEqual([
      { partition: 0, start: 10n, count: 8 },
      { partition: 1, start: 10n, count: 8 },
    ]);
    reads.length = 0;
    groupOffset = 12n;
    ownership.joined(TOPIC, [0]);
    const claim = await ownership.claim(TOPIC, 0);
    // Only the two records committed since the read ahead.
    expect(reads).toEqual([{ partition: 0, start: 12n, count: 2 }]);
    for (let i = 4; i < 12; i += 1) expect(claim.dedup.firstOffset(`id-${i}`)).toBe(BigInt(i));
    expect(claim.dedup.size).toBe(8);
    // Partition 1's window, read 31 s before its claim, is read again whole.
    reads.length = 0;
    now += 31_000;
    ownership.confirm();
    await ownership.claim(TOPIC, 1);
    expect(reads.every((r) => r.partition === 1 && r.start === 12n && r.count === 8)).toBe(true);
    expect(reads.length).toBeGreaterThan(0);
  });

  it('drops a window read ahead that no claim took within 30 s, with or without a rebalance', async () => {
    vi.useFakeTimers();
    try {
      const ownership = ownershipOver({ groupOffset: async () => 10n, recentCommandIds: async () => [{ offset: 9n, commandId: 'id-9' }] }, 8);
      await ownership.readWindowsAhead(TOPIC, 3);
      expect(ownership.windowsReadAhead).toBe(3);
      await vi.advanceTimersByTimeAsync(29_000);
      expect(ownership.windowsReadAhead).toBe(3);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(ownership.windowsReadAhead).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('reads the whole window after the fence when the early read failed', async () => {
    const reads: bigint[] = [];
    const ownership = ownershipOver(
      {
        handover: async () => true,
        groupOffset: async () => 5n,
        recentCommandIds: async (_topic, _partition, start, count) => {
          reads.push(BigInt(count));
          if (reads.length === 1) throw new Error('reader down for a moment');
          return [{ offset: start - 2n, commandId: 'seen' }];
        },
      },
      100,
    );
    const claim = await ownership.claim(TOPIC, 0);
    expect(reads).toEqual([100n, 100n]);
    expect(claim.dedup.firstOffset('seen')).toBe(3n);
  });
});

describe('PartitionOwnership lost partitions', () => {
  it('never re-fences a partition lost in this generation; the next generation resumes and claims it', async () => {
    const { ownership, recorded, lostGauge } = ownershipWith({});
    ownership.joined(TOPIC, [0, 1]);
    await ownership.claim(TOPIC, 0);
    await ownership.claim(TOPIC, 1);
    const fencedBefore = recorded.fenced.length;

    ownership.lose(TOPIC, 1, 5n);
    ownership.lose(TOPIC, 1, 5n);
    expect(ownership.isLost(TOPIC, 1)).toBe(true);
    expect(await lostGauge()).toBe(1);
    expect(ownership.isLost(TOPIC, 0)).toBe(false);
    expect(recorded.paused).toEqual([`${TOPIC}:1`]);
    // The lane router checks isLost before claiming; a release (transient error) does not clear it.
    ownership.release(TOPIC, 1);
    expect(ownership.isLost(TOPIC, 1)).toBe(true);
    expect(recorded.fenced.length).toBe(fencedBefore);

    ownership.joined(TOPIC, [1]);
    expect(ownership.isLost(TOPIC, 1)).toBe(false);
    expect(await lostGauge()).toBe(0);
    expect(recorded.resumed).toEqual([{ topic: TOPIC, partitions: [1] }]);
    await ownership.claim(TOPIC, 1);
    expect(recorded.fenced.at(-1)).toBe(`${TOPIC}:1`);
  });

  it('claims a lost partition again once two heartbeats confirm this member’s generation (a late fence from a former member), at most three times a generation', async () => {
    const { ownership, recorded, lostGauge } = ownershipWith({});
    ownership.joined(TOPIC, [0, 1]);
    await ownership.claim(TOPIC, 1);
    ownership.lose(TOPIC, 1, 7n);
    expect(await lostGauge()).toBe(1);
    // The first confirmation may be a heartbeat sent before a later generation began: not enough.
    ownership.heartbeat();
    expect(ownership.isLost(TOPIC, 1)).toBe(true);
    expect(recorded.reclaimed).toEqual([]);
    ownership.heartbeat();
    expect(ownership.isLost(TOPIC, 1)).toBe(false);
    expect(recorded.reclaimed).toEqual([{ topic: TOPIC, partition: 1, offset: 7n }]);
    const fencedBefore = recorded.fenced.length;
    await ownership.claim(TOPIC, 1);
    expect(recorded.fenced.length).toBe(fencedBefore + 1);
    expect(await lostGauge()).toBe(0);

    // A fencer that keeps coming back: the fourth loss in this generation waits for the next one.
    for (let loss = 2; loss <= 4; loss += 1) {
      ownership.lose(TOPIC, 1, 7n);
      ownership.heartbeat();
      ownership.heartbeat();
      ownership.heartbeat();
    }
    expect(recorded.reclaimed.length).toBe(3);
    expect(ownership.isLost(TOPIC, 1)).toBe(true);
    expect(await lostGauge()).toBe(1);
    ownership.joined(TOPIC, [1]);
    expect(ownership.isLost(TOPIC, 1)).toBe(false);
    expect(await lostGauge()).toBe(0);
  });

  it('does not count heartbeats toward a reclaim while the group rebalances, nor once this member leaves', () => {
    const { ownership, recorded } = ownershipWith({});
    ownership.joined(TOPIC, [0, 1]);
    ownership.lose(TOPIC, 0, 0n);
    ownership.heartbeat();
    ownership.rebalancing();
    ownership.heartbeat();
    ownership.heartbeat();
    expect(recorded.reclaimed).toEqual([]);
    ownership.joined(TOPIC, [0, 1]);
    ownership.lose(TOPIC, 1, 0n);
    ownership.leaving();
    ownership.heartbeat();
    ownership.heartbeat();
    expect(recorded.reclaimed).toEqual([]);
    expect(ownership.isLost(TOPIC, 1)).toBe(true);
  });

  it('does not resume anything at a join when nothing was lost', () => {
    const { ownership, recorded } = ownershipWith({});
    ownership.joined(TOPIC, [0]);
    ownership.joined(TOPIC, [0]);
    expect(recorded.resumed).toEqual([]);
  });
});

describe('PartitionOwnership lease', () => {
  it('holds while heartbeats are recent and expires after a freeze longer than the session timeout minus the margin', () => {
    let now = 1_000_000;
    const { ownership } = ownershipWith({ sessionTimeoutMs: 10_000, now: () => now });
    now += 60_000;
    expect(ownership.leaseHolds()).toBe(false);
    ownership.joined(TOPIC, []);
    expect(ownership.leaseHolds()).toBe(true);
    // Margin: min(2 s, timeout / 4) = 2 s, so the lease lasts 8 s after the last confirmation.
    now += 7_999;
    expect(ownership.leaseHolds()).toBe(true);
    ownership.confirm();
    now += 7_999;
    expect(ownership.leaseHolds()).toBe(true);
    // A freeze: no heartbeat for longer than the lease.
    now += 1;
    expect(ownership.leaseHolds()).toBe(false);
    now += 60_000;
    expect(ownership.leaseHolds()).toBe(false);
    ownership.confirm();
    expect(ownership.leaseHolds()).toBe(true);
  });

  it('uses a quarter of a short session timeout as the margin', () => {
    let now = 0;
    const { ownership } = ownershipWith({ sessionTimeoutMs: 4_000, now: () => now });
    ownership.confirm();
    now += 2_999;
    expect(ownership.leaseHolds()).toBe(true);
    now += 1;
    expect(ownership.leaseHolds()).toBe(false);
  });
});

describe('PartitionOwnership: taking a partition from another process', () => {
  it('fences at once, without waiting for the earlier owner’s marks: they are in doubt, for the lane to look for their handovers', async () => {
    const fresh: Checkpoint = { next: 5n, open: [{ offset: 5n, commandId: 'c5', at: Date.now(), by: 'other.1' }] };
    const { ownership, recorded } = ownershipWith({ checkpoint: fresh });
    const claim = await ownership.claim(TOPIC, 0);
    // One read of the ledger, after fencing; none before it.
    expect(recorded.ledgerReadEnds).toEqual(['end after fencing']);
    expect(recorded.fenced).toEqual([`${TOPIC}:0`]);
    expect([...claim.inDoubt.values()]).toEqual(fresh.open);
  });
});

describe('PartitionOwnership: keeping a claim across a rebalance', () => {
  async function claimedInGeneration1(options: Parameters<typeof ownershipWith>[0] = {}) {
    const made = ownershipWith(options);
    made.ownership.joined(TOPIC, [0, 1]);
    const claim = await made.ownership.claim(TOPIC, 0);
    await made.ownership.claim(TOPIC, 1);
    made.recorded.fenced.length = 0;
    return { ...made, claim };
  }

  it('keeps a holding claim assigned again in the very next generation: same claim, next generation, no fence, no ledger read', async () => {
    const { ownership, recorded, claim } = await claimedInGeneration1();
    const reads = recorded.ledgerReads;
    ownership.rebalancing();
    const kept = ownership.joined(TOPIC, [0], true, [claim]);
    expect([...kept]).toEqual([claim]);
    expect(claim.generation).toBe(2);
    expect(await ownership.claim(TOPIC, 0)).toBe(claim);
    expect(ownership.isCurrent(claim)).toBe(true);
    expect(recorded.fenced).toEqual([]);
    expect(recorded.ledgerReads).toBe(reads);
  });

  it('claims afresh when a generation may have been missed, the partition moved, or the producer does not carry over', async () => {
    const cases: [boolean, number[], boolean][] = [
      [false, [0], true],
      [true, [1], true],
      [true, [0], false],
    ];
    for (const [next, partitions, carry] of cases) {
      const { ownership, recorded, claim } = await claimedInGeneration1({ carry });
      ownership.rebalancing();
      const kept = ownership.joined(TOPIC, partitions, next, [claim]);
      expect(kept.size).toBe(0);
      expect(ownership.isCurrent(claim)).toBe(false);
      if (partitions.includes(0)) {
        expect(await ownership.claim(TOPIC, 0)).not.toBe(claim);
        expect(recorded.fenced).toContain(`${TOPIC}:0`);
      }
    }
  });

  it('does not keep a claim once the lease lapsed after it was made (another member may have owned the partition)', async () => {
    let now = 1_000_000;
    const { ownership, claim } = await claimedInGeneration1({ sessionTimeoutMs: 10_000, now: () => now });
    now += 60_000;
    ownership.rebalancing();
    expect(ownership.joined(TOPIC, [0], true, [claim]).size).toBe(0);
  });

  it('does not fence while the group is rebalancing: a claim under way then fails and is made in the new generation', async () => {
    const { ownership, recorded } = ownershipWith({});
    ownership.joined(TOPIC, []);
    ownership.rebalancing();
    await expect(ownership.claim(TOPIC, 3)).rejects.toThrow(/rebalancing/);
    expect(recorded.fenced).toEqual([]);
    ownership.joined(TOPIC, [3]);
    await ownership.claim(TOPIC, 3);
    expect(recorded.fenced).toEqual([`${TOPIC}:3`]);
  });
});

describe('PartitionOwnership: a consumer restarting in place (out of the group until it joins again)', () => {
  it('no claim is current and none fences until the next join, which keeps nothing and claims afresh', async () => {
    // Each claim's handover step (waiting for an earlier owner) resolves when the test says so.
    const waiting: ((local: boolean) => void)[] = [];
    const { ownership, recorded } = ownershipWith({ handover: () => new Promise<boolean>((resolve) => waiting.push(resolve)) });
    ownership.joined(TOPIC, [0]);
    waiting.shift()?.(false);
    const claim = await ownership.claim(TOPIC, 0);
    const pending = ownership.claim(TOPIC, 1);
    expect(ownership.isCurrent(claim)).toBe(true);
    ownership.outOfGroup();
    expect(ownership.isCurrent(claim)).toBe(false);
    // A claim that was waiting for an earlier owner does not fence once the member is out.
    waiting.shift()?.(false);
    await expect(pending).rejects.toMatchObject({ code: 'CLAIM_STALE' });
    expect(recorded.fenced).toEqual([`${TOPIC}:0`]);
    // Joined again (even were it taken for the very next generation): nothing kept, fenced afresh.
    const kept = ownership.joined(TOPIC, [0], true, [claim]);
    expect(kept.size).toBe(0);
    waiting.shift()?.(false);
    const again = await ownership.claim(TOPIC, 0);
    expect(again).not.toBe(claim);
    expect(ownership.isCurrent(again)).toBe(true);
    expect(recorded.fenced).toEqual([`${TOPIC}:0`, `${TOPIC}:0`]);
  });
});

describe('PartitionOwnership: stopping', () => {
  it('a claim still under way when the worker stops (it left the group while its lanes finish) never fences', async () => {
    let handOver: (local: boolean) => void = () => undefined;
    const { ownership, recorded } = ownershipWith({ handover: () => new Promise<boolean>((resolve) => (handOver = resolve)) });
    const pending = ownership.claim(TOPIC, 5);
    // Its handover step waits for this process's earlier lane of the partition; meanwhile the worker stops.
    ownership.stop();
    handOver(true);
    await expect(pending).rejects.toThrow(/stopping/);
    expect(recorded.fenced).toEqual([]);
  });

  it('a claim stays current while its lanes finish as a member (ledger off), and not once the process leaves its group (ledger on): no producer is started again then', async () => {
    const { ownership } = ownershipWith({});
    ownership.joined(TOPIC, [0]);
    const claim = await ownership.claim(TOPIC, 0);
    expect(ownership.isCurrent(claim)).toBe(true);
    ownership.stop();
    expect(ownership.isCurrent(claim)).toBe(true);
    ownership.leaving();
    expect(ownership.isCurrent(claim)).toBe(false);
  });

  it('says when the group is rebalancing (no producer is initialised again then)', () => {
    const { ownership } = ownershipWith({});
    ownership.joined(TOPIC, [0]);
    expect(ownership.isRebalancing).toBe(false);
    ownership.rebalancing();
    expect(ownership.isRebalancing).toBe(true);
    ownership.joined(TOPIC, [0]);
    expect(ownership.isRebalancing).toBe(false);
  });
});
