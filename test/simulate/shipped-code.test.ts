/**
 * The simulation runs the shipped protocol code, not a copy: a bug injected into a shipped module
 * (here by patching its class, as a careless change would) is found by the simulation, with a
 * seed. The partition machine has been shipped code in the simulation from the start; ownership's
 * decisions (protocol/ownership.ts) are since 2026-12-06 — before, tools/simulate/process.ts had
 * its own copy, and a keep without its checks passed 20,000 schedules.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OwnershipMachine, type HeldClaim } from '../../src/worker/protocol/ownership.ts';
import { SendPath } from '../../src/worker/protocol/send-path.ts';
import { firstViolation, QUIET_WORLD } from '../helpers/simulation.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

// Budgets of schedules, not timing targets (coverage instrumentation slows them in CI).
describe('a bug injected into the shipped protocol code is found by the simulation', { timeout: 120_000 }, () => {
  it('ownership keeps a claim across a missed generation and a lapsed lease (neither checked)', () => {
    const join = OwnershipMachine.prototype.join;
    vi.spyOn(OwnershipMachine.prototype, 'join').mockImplementation(function (
      this: OwnershipMachine,
      partitions: readonly number[],
      _next: boolean,
      holding: readonly HeldClaim[],
    ) {
      // The bug: every join taken for the very next one, every claim for made after the last lapse.
      return join.call(
        this,
        partitions,
        true,
        holding.map((claim) => ({ ...claim, claimedAt: Number.POSITIVE_INFINITY })),
      );
    });
    // First at seed 6,003 (at-most-one-send) since a marks-only retry reads the ledger back (3,644 before).
    const found = firstViolation(QUIET_WORLD, 8_000);
    console.log(`keep without checks in the shipped OwnershipMachine: ${found?.kind ?? 'nothing'} at seed ${found?.seed ?? '-'}`);
    expect(found).toBeDefined();
    expect(found?.kind).not.toBe('machine-threw');
    expect(found?.kind).not.toBe('model-error');
  });

  it('ownership counts a claim current while its consumer is out of the group (crashed, rejoining as a new member)', () => {
    const isCurrent = OwnershipMachine.prototype.isCurrent;
    const mayFence = OwnershipMachine.prototype.mayFence;
    vi.spyOn(OwnershipMachine.prototype, 'isCurrent').mockImplementation(function (this: OwnershipMachine, generation: number, partition: number) {
      return this.state === 'out-of-group' ? generation === this.generation && !this.isLost(partition) : isCurrent.call(this, generation, partition);
    });
    vi.spyOn(OwnershipMachine.prototype, 'mayFence').mockImplementation(function (this: OwnershipMachine, generation: number) {
      return this.state === 'out-of-group' ? generation === this.generation && !this.isStopping : mayFence.call(this, generation);
    });
    const found = firstViolation({ ...QUIET_WORLD, consumerRestarts: true }, 3_000);
    console.log(`out of the group taken for current in the shipped OwnershipMachine: ${found?.kind ?? 'nothing'} at seed ${found?.seed ?? '-'}`);
    expect(found).toBeDefined();
    expect(found?.kind).not.toBe('machine-threw');
    expect(found?.kind).not.toBe('model-error');
  });

  it('the send path lets a record call before the transaction carrying its mark commits', () => {
    const want = SendPath.prototype.want;
    vi.spyOn(SendPath.prototype, 'want').mockImplementation(function (this: SendPath<unknown>, offset: bigint, leaseHolds: boolean, at: number, clock: number) {
      want.call(this, offset, leaseHolds, at, clock);
      // The bug: the mark counted committed as soon as it is open.
      this.marksCommitted([offset]);
    });
    const found = firstViolation({ ...QUIET_WORLD, ledger: 'on' }, 1_000);
    console.log(`a call before its mark commits in the shipped SendPath: ${found?.kind ?? 'nothing'} at seed ${found?.seed ?? '-'}`);
    expect(found?.kind).toBe('at-most-one-send');
  });
});
