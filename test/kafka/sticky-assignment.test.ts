import { describe, expect, it } from 'vitest';
import { stickyAssigner } from '../../src/kafka/sticky-assigner.ts';
import { AssignerProtocol } from '../../src/kafka/kafkajs.ts';
import { decodeReport, encodeOwned, MAX_OWNED_BYTES, stickyPlan, type Owned } from '../../src/kafka/sticky-assignment.ts';

const T = 'commands';
const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const plan = (members: string[], partitions: number, owned: Record<string, number[]> = {}): Record<string, number[]> => {
  const result = stickyPlan(members, new Map([[T, range(partitions)]]), new Map(Object.entries(owned).map(([m, ps]): [string, Owned] => [m, { [T]: ps }])));
  return Object.fromEntries([...result].map(([m, a]) => [m, a[T] ?? []]));
};
const moved = (before: Record<string, number[]>, after: Record<string, number[]>): number =>
  Object.entries(after).reduce((n, [m, ps]) => n + ps.filter((p) => !(before[m] ?? []).includes(p)).length, 0);

describe('stickyPlan: partitions stay where they are', () => {
  it('spreads a fresh group evenly', () => {
    const p = plan(['b', 'a', 'c'], 12);
    expect(Object.values(p).map((ps) => ps.length)).toEqual([4, 4, 4]);
    expect(
      Object.values(p)
        .flat()
        .sort((x, y) => x - y),
    ).toEqual(range(12));
  });

  it('a join moves only what the newcomer needs (12 partitions, 3 → 4 members: 3 move)', () => {
    const before = { a: [0, 1, 2, 3], b: [4, 5, 6, 7], c: [8, 9, 10, 11] };
    const after = plan(['a', 'b', 'c', 'd'], 12, before);
    expect(after.d).toHaveLength(3);
    expect(moved(before, after)).toBe(3);
    for (const m of ['a', 'b', 'c']) expect(after[m]?.every((p) => before[m as 'a']?.includes(p))).toBe(true);
  });

  it('a leave moves only the leaver’s partitions (4 → 3 members)', () => {
    const before = { a: [0, 1, 2], b: [3, 4, 5], c: [6, 7, 8], d: [9, 10, 11] };
    const after = plan(['a', 'b', 'c'], 12, before);
    expect(moved(before, after)).toBe(3);
    expect(Object.values(after).map((ps) => ps.length)).toEqual([4, 4, 4]);
  });

  it('a rolling update (a surge member joins, an old one leaves) moves each partition at most once per step', () => {
    const s0 = plan(['a', 'b', 'c'], 12);
    const s1 = plan(['a', 'b', 'c', 'd'], 12, s0);
    const { a: _gone, ...rest } = s1;
    const s2 = plan(['b', 'c', 'd'], 12, rest);
    expect(moved(s0, s1)).toBe(3);
    expect(moved(rest, s2)).toBe((s1.a ?? []).length);
  });

  it('a partition reported by two members (one missed a generation) is kept by neither, and still assigned once', () => {
    const after = plan(['a', 'b'], 4, { a: [0, 1], b: [1, 2] });
    expect(after.a).toContain(0);
    expect(after.b).toContain(2);
    expect(Object.values(after).flat().sort()).toEqual([0, 1, 2, 3]);
  });

  it('a member over its share keeps the partitions it lists first (the worker lists its busiest first) and gives up the last', () => {
    const after = plan(['a', 'b'], 4, { a: [3, 0, 2, 1] });
    expect(after.a).toEqual([0, 3]);
    expect(after.b).toEqual([1, 2]);
  });

  it('ignores reported partitions the topic does not have, and balances within one', () => {
    const after = plan(['a', 'b'], 3, { a: [0, 1, 2, 7] });
    expect(after.a).toEqual([0, 1]);
    expect(after.b).toEqual([2]);
  });
});

describe('stickyPlan: members shutting down', () => {
  const planLeaving = (members: string[], partitions: number, owned: Record<string, number[]>, leaving: string[]): Record<string, number[]> => {
    const result = stickyPlan(
      members,
      new Map([[T, range(partitions)]]),
      new Map(Object.entries(owned).map(([m, ps]): [string, Owned] => [m, { [T]: ps }])),
      new Set(leaving),
    );
    return Object.fromEntries([...result].map(([m, a]) => [m, a[T] ?? []]));
  };

  it('gives a member that reports leaving nothing, and its partitions to the others (two pods stopped together: one rebalance, not two)', () => {
    // c has left already; b is still finishing its calls when the rebalance catches it.
    const after = planLeaving(['a', 'b'], 12, { a: [0, 1, 2, 3], b: [4, 5, 6, 7] }, ['b']);
    expect(after).toEqual({ a: range(12), b: [] });
  });

  it('keeps what the staying members own, and splits a leaver’s partitions among them', () => {
    const after = planLeaving(['a', 'b', 'c'], 12, { a: [0, 1, 2, 3], b: [4, 5, 6, 7], c: [8, 9, 10, 11] }, ['c']);
    expect(after.c).toEqual([]);
    expect(after.a?.slice(0, 4)).toEqual([0, 1, 2, 3]);
    expect([4, 5, 6, 7].every((p) => after.b?.includes(p))).toBe(true);
    expect([...(after.a ?? []), ...(after.b ?? [])].sort((x, y) => x - y)).toEqual(range(12));
  });

  it('assigns as usual when every member is leaving (nobody else could take them)', () => {
    const after = planLeaving(['a', 'b'], 4, { a: [0, 1], b: [2, 3] }, ['a', 'b']);
    expect(after).toEqual({ a: [0, 1], b: [2, 3] });
  });

  it('reaches the leader through the join metadata: the assigner gives a member that says it is leaving nothing', async () => {
    const cluster = { findTopicPartitionMetadata: () => range(4).map((partitionId) => ({ partitionId })) };
    const leaving = stickyAssigner({ owned: () => ({ [T]: [2, 3] }), joining: () => undefined, leaving: () => true })({ cluster } as never);
    const staying = stickyAssigner({ owned: () => ({ [T]: [0, 1] }), joining: () => undefined })({ cluster } as never);
    const members = [
      { memberId: 'a', memberMetadata: staying.protocol({ topics: [T] }).metadata },
      { memberId: 'b', memberMetadata: leaving.protocol({ topics: [T] }).metadata },
    ];
    const assignment = await staying.assign({ members, topics: [T], userData: Buffer.alloc(0) } as never);
    const decoded = Object.fromEntries(assignment.map((a) => [a.memberId, AssignerProtocol.MemberAssignment.decode(a.memberAssignment)?.assignment[T] ?? []]));
    expect(decoded).toEqual({ a: range(4), b: [] });
  });
});

describe('owned metadata', () => {
  it('carries leaving only when true, and reads an older member’s report (no leaving) as staying', () => {
    expect(decodeReport(encodeOwned({ [T]: [1] }, true))).toEqual({ owned: { [T]: [1] }, leaving: true });
    expect(encodeOwned({ [T]: [1] }).toString()).toBe(JSON.stringify({ owned: { [T]: [1] } }));
    expect(decodeReport(encodeOwned({ [T]: [1] }))).toEqual({ owned: { [T]: [1] }, leaving: false });
    expect(decodeReport(Buffer.from('{"leaving":"yes"}'))).toEqual({ owned: {}, leaving: false });
  });

  it('round-trips, and reads anything malformed or too large as nothing', () => {
    expect(decodeReport(encodeOwned({ [T]: [1, 2] })).owned).toEqual({ [T]: [1, 2] });
    expect(decodeReport(Buffer.from('not json')).owned).toEqual({});
    expect(decodeReport(Buffer.from(JSON.stringify({ owned: { [T]: [1, -1, 'x', 2.5] } }))).owned).toEqual({ [T]: [1] });
    expect(decodeReport(Buffer.alloc(MAX_OWNED_BYTES + 1, 32)).owned).toEqual({});
    expect(decodeReport(null).owned).toEqual({});
  });
});
