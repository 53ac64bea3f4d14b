import { describe, expect, it } from 'vitest';
import { OwnershipMachine, TimedLease, type HeldClaim } from '../../../src/worker/protocol/ownership.ts';
import { MEMBERSHIP_EVENTS, MEMBERSHIP_STATES, MEMBERSHIP_TRANSITIONS } from '../../../src/worker/protocol/table.ts';
import { moveMembership } from '../../../src/worker/protocol/assertions.ts';

const SESSION_MS = 10_000;
/** The lease: the session less min(2 s, a quarter of it). */
const LEASE_MS = 8_000;

function machine(): { readonly m: OwnershipMachine; readonly clock: { now: number } } {
  const clock = { now: 1_000_000 };
  const now = (): number => clock.now;
  return { m: new OwnershipMachine(new TimedLease(SESSION_MS, now), now), clock };
}

const held = (partition: number, generation: number, claimedAt: number): HeldClaim => ({ partition, generation, claimedAt });

describe('membership moves', () => {
  it('has exactly one move for every state and event', () => {
    for (const from of Object.keys(MEMBERSHIP_STATES) as (keyof typeof MEMBERSHIP_STATES)[])
      for (const event of Object.keys(MEMBERSHIP_EVENTS) as (keyof typeof MEMBERSHIP_EVENTS)[])
        expect(MEMBERSHIP_TRANSITIONS.filter((t) => t.from === from && t.event === event)).toHaveLength(1);
  });

  it('leaving is for good: no join or crash brings the process back into its group', () => {
    for (const event of Object.keys(MEMBERSHIP_EVENTS) as (keyof typeof MEMBERSHIP_EVENTS)[]) expect(moveMembership('left', event)).toBe('left');
  });

  it('out of the group stays out through a rebalance, until its join as a new member', () => {
    expect(moveMembership('out-of-group', 'rebalance')).toBe('out-of-group');
    expect(moveMembership('out-of-group', 'joined')).toBe('member');
  });
});

describe('OwnershipMachine', () => {
  it('counts the generations of its own joins', () => {
    const { m } = machine();
    m.join([0, 1], false, []);
    m.rebalance();
    expect(m.isRebalancing).toBe(true);
    m.join([1], true, []);
    expect([m.generation, m.state, m.assigned]).toEqual([2, 'member', [1]]);
  });

  it('keeps a held claim in the very next generation when it is assigned again, not lost, and made after the last lapse', () => {
    const { m, clock } = machine();
    m.join([0, 1, 2], false, []);
    const claimedAt = clock.now;
    m.lose(2, 5n);
    clock.now += 1_000;
    m.rebalance();
    const { keepable, lost } = m.join([0, 2], true, [held(0, 1, claimedAt), held(1, 1, claimedAt), held(2, 1, claimedAt)]);
    expect(keepable.map((c) => c.partition)).toEqual([0]);
    expect(lost).toEqual([2]);
    expect(m.isLost(2)).toBe(false);
  });

  it('keeps nothing when a generation was missed, or the claim is of an older one', () => {
    const { m, clock } = machine();
    m.join([0], false, []);
    expect(m.join([0], false, [held(0, 1, clock.now)]).keepable).toEqual([]);
    expect(m.join([0], true, [held(0, 1, clock.now)]).keepable).toEqual([]);
  });

  it('keeps no claim made before the lease lapsed, though the join is the next one', () => {
    const { m, clock } = machine();
    m.join([0], false, []);
    const before = clock.now;
    clock.now += LEASE_MS + 1;
    m.rebalance();
    const { keepable } = m.join([0], true, [held(0, 1, before)]);
    expect(keepable).toEqual([]);
    const after = clock.now;
    m.rebalance();
    expect(m.join([0], true, [held(0, 2, after)]).keepable.map((c) => c.partition)).toEqual([0]);
  });

  it('keeps nothing at the join after its consumer crashed (a new member)', () => {
    const { m, clock } = machine();
    m.join([0], false, []);
    m.consumerCrashed();
    expect(m.isCurrent(1, 0)).toBe(false);
    expect(m.mayFence(1)).toBe(false);
    expect(m.join([0], true, [held(0, 1, clock.now)]).keepable).toEqual([]);
    expect(m.state).toBe('member');
  });

  it('lets a claim fence only in its own generation, as a member that is not stopping', () => {
    const { m } = machine();
    m.join([0], false, []);
    expect(m.mayFence(1)).toBe(true);
    expect(m.mayFence(0)).toBe(false);
    m.rebalance();
    expect(m.mayFence(1)).toBe(false);
    expect(m.isCurrent(1, 0)).toBe(true);
    m.join([0], true, []);
    m.stop();
    expect(m.mayFence(2)).toBe(false);
    expect(m.isCurrent(2, 0)).toBe(true);
    m.leave();
    expect(m.isCurrent(2, 0)).toBe(false);
  });

  it('lets a failed transaction initialise its producer again only while the claim may send and the group is not rebalancing', () => {
    const { m, clock } = machine();
    m.join([0, 1], false, []);
    expect(m.mayReinitialise(1, 0)).toBe(true);
    // An older claim, a lost partition.
    expect(m.mayReinitialise(0, 0)).toBe(false);
    m.lose(1, 0n);
    expect(m.mayReinitialise(1, 1)).toBe(false);
    // The group rebalances: the partition may be another member's until the new assignment.
    m.rebalance();
    expect(m.isCurrent(1, 0)).toBe(true);
    expect(m.mayReinitialise(1, 0)).toBe(false);
    m.join([0], true, []);
    expect(m.mayReinitialise(2, 0)).toBe(true);
    // The lease lapsed.
    clock.now += LEASE_MS + 1;
    expect(m.mayReinitialise(2, 0)).toBe(false);
    m.confirm();
    expect(m.mayReinitialise(2, 0)).toBe(true);
    // Out of the group after a consumer crash, or left.
    m.consumerCrashed();
    expect(m.mayReinitialise(2, 0)).toBe(false);
    m.join([0], false, []);
    m.leave();
    expect(m.mayReinitialise(3, 0)).toBe(false);
  });

  it("gives a lane its claim's standing: sends only while the lease holds and the claim is current, following a kept claim into the next generation", () => {
    const { m, clock } = machine();
    m.join([0, 1], false, []);
    const claim = { partition: 0, generation: 1 };
    const standing = m.standing(claim);
    expect([standing.maySend(), standing.mayReinitialise()]).toEqual([true, true]);
    // The group rebalances: a lane may still send (its claim is current until the new assignment) but not re-initialise.
    m.rebalance();
    expect([standing.maySend(), standing.mayReinitialise()]).toEqual([true, false]);
    m.join([0], true, [held(0, 1, clock.now)]);
    expect(standing.maySend()).toBe(false);
    // Kept: the claim moves to the next generation, and its standing with it (read at each ask).
    claim.generation = 2;
    expect([standing.maySend(), standing.mayReinitialise()]).toEqual([true, true]);
    clock.now += LEASE_MS + 1;
    expect([standing.maySend(), standing.mayReinitialise()]).toEqual([false, false]);
    m.confirm();
    expect(standing.maySend()).toBe(true);
    m.lose(0, 0n);
    expect([standing.maySend(), standing.mayReinitialise()]).toEqual([false, false]);
  });

  it('claims a lost partition again after two confirmed heartbeats, at most three times a generation', () => {
    const { m } = machine();
    m.join([0], false, []);
    const reclaimedAt: number[] = [];
    for (let beat = 1; beat <= 12; beat++) {
      if (!m.isLost(0)) m.lose(0, 3n);
      if (m.heartbeat().some((lost) => lost.partition === 0 && lost.resumeAt === 3n)) reclaimedAt.push(beat);
    }
    expect(reclaimedAt).toEqual([2, 4, 6]);
    expect(m.isLost(0)).toBe(true);
    expect(m.awaitsConfirmation(0)).toBe(false);
  });

  it('claims nothing again while rebalancing or stopping', () => {
    const { m } = machine();
    m.join([0], false, []);
    m.lose(0, 0n);
    m.rebalance();
    expect([m.heartbeat(), m.heartbeat(), m.heartbeat()].flat()).toEqual([]);
    m.join([0], true, []);
    m.lose(0, 0n);
    m.stop();
    expect([m.heartbeat(), m.heartbeat(), m.heartbeat()].flat()).toEqual([]);
  });

  it('a lease lapses a session less its margin after the last confirmation', () => {
    const { m, clock } = machine();
    expect(m.leaseHolds()).toBe(false);
    m.confirm();
    clock.now += LEASE_MS - 1;
    expect(m.leaseHolds()).toBe(true);
    clock.now += 1;
    expect(m.leaseHolds()).toBe(false);
  });
});
