/**
 * The shipped-lane simulation (tools/simulate/shipped-lane.ts) runs the worker's own lane, record
 * handler and senders over a simulated Kafka and service. Its checks must see a bug in that
 * driver code: each test here injects one into a shipped module from outside (patching its class,
 * as a careless change would) and expects the simulation to report it with a seed.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SpendHolds } from '../../src/worker/guard/spend-holds.ts';
import { GuardedSender } from '../../src/worker/guarded-sender.ts';
import { OwnershipMachine } from '../../src/worker/protocol/ownership.ts';
import { PartitionMachine, type Effect } from '../../src/worker/protocol/partition-machine.ts';
import type { SendHooks } from '../../src/worker/send-outcome.ts';
import { runShippedLaneSchedules, type ShippedLaneViolation } from '../../tools/simulate/shipped-lane.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

const kinds = (violations: readonly ShippedLaneViolation[]): string[] => [...new Set(violations.map((v) => v.kind))].sort();

function report(name: string, violations: readonly ShippedLaneViolation[]): void {
  const first = violations[0];
  console.log(
    `${name}: ${violations.length} violations (${kinds(violations).join(', ') || 'none'}), first ${first === undefined ? '-' : `seed ${first.seed} ${first.kind}: ${first.detail}`}`,
  );
  // What happened in the first schedule that broke something (claims, commits, handovers), on request.
  const traced = violations.find((v) => v.trace !== undefined);
  if (traced !== undefined && process.env['SHIPPED_LANE_TRACE'] !== undefined) console.log(`seed ${traced.seed}:\n${(traced.trace ?? []).join('\n')}`);
}

/** A lane that carries out the machine's effects as `rewrite` turns them (a bug in the effect interpreter, injected from outside). */
function rewriteEffects(rewrite: (effects: Effect<unknown>[]) => Effect<unknown>[]): void {
  const drain = PartitionMachine.prototype.drain;
  vi.spyOn(PartitionMachine.prototype, 'drain').mockImplementation(function (this: PartitionMachine<unknown>) {
    return rewrite(drain.call(this));
  });
}

// Budgets of schedules, not timing targets (the clock is virtual, but coverage slows the code in CI).
describe('the shipped lane, handler and senders in the simulation', { timeout: 360_000 }, () => {
  it('ledger on: no command sent twice, every call under a committed mark, one result each, no UNKNOWN without a cause, through crashes, zombies, retirements, moves, reclaims and kept claims, within the velocity limits and spend caps', async () => {
    const tally = new Map<string, number>();
    const violations = await runShippedLaneSchedules(1, 2_000, { tally });
    report('ledger on', violations);
    expect(violations).toEqual([]);
    // The schedules did what they claim: every way of ending a claim, and every kind of result.
    for (const key of [
      'claim crash',
      'claim zombie',
      'claim retire',
      'claim move',
      'claim reclaim',
      'claim keep',
      'claim away',
      'kept',
      'partitions 3',
      'spend cap',
      'result EXPIRED',
      'result SENT',
      'result FAILED',
      'result UNKNOWN',
      'commit failed',
      'commit answer lost',
    ]) {
      expect(tally.get(key), key).toBeGreaterThan(0);
    }
  });

  it('ledger off: one result each, and no UNKNOWN without a cause', async () => {
    const violations = await runShippedLaneSchedules(1, 500, { ledger: false });
    report('ledger off', violations);
    // Without the ledger nothing stops a new claim from calling again what an earlier one called:
    // at-most-one-send is the ledger's promise, and the simulation checks it only with the ledger on.
    expect(violations).toEqual([]);
  });

  it('a sender that calls without waiting for its mark to commit: found', async () => {
    const send = GuardedSender.prototype.send;
    vi.spyOn(GuardedSender.prototype, 'send').mockImplementation(function (this: GuardedSender, request, correlationId, signal, expiresAt, hooks, footprint) {
      // The bug: the mark is asked for, but the call goes ahead before its transaction commits.
      const eager: SendHooks | undefined = hooks && {
        ...hooks,
        beforeSend: async (s, account) => {
          void hooks.beforeSend?.(s, account);
          return true;
        },
      };
      return send.call(this, request, correlationId, signal, expiresAt, eager, footprint);
    });
    const violations = await runShippedLaneSchedules(1, 50, { settleMs: 1_000 });
    report('call before the mark commits', violations);
    expect(kinds(violations)).toContain('call-under-committed-mark');
  });

  it('a lane that drops the machine’s refuse-call (the record must not call): found', async () => {
    rewriteEffects((effects) => effects.filter((effect) => effect.type !== 'refuse-call'));
    const violations = await runShippedLaneSchedules(1, 50, { settleMs: 1_000 });
    report('refuse-call dropped', violations);
    // Its records wait for an answer that never comes: the claim never ends.
    expect(kinds(violations)).toContain('no-driver-error');
  });

  it('a lane that carries out refuse-call as call (a zombie calls after its lease lapsed): found', async () => {
    rewriteEffects((effects) => effects.map((effect) => (effect.type === 'refuse-call' ? { type: 'call', offset: effect.offset } : effect)));
    const violations = await runShippedLaneSchedules(1, 50, { settleMs: 1_000 });
    report('refuse-call taken for call', violations);
    expect(kinds(violations)).toContain('at-most-one-send');
  });

  it('ownership that keeps a claim without checking the generation or the lease (a member that missed a generation goes on with stale state): found', async () => {
    const join = OwnershipMachine.prototype.join;
    vi.spyOn(OwnershipMachine.prototype, 'join').mockImplementation(function (this: OwnershipMachine, partitions, next, holding) {
      const decided = join.call(this, partitions, next, holding);
      // The bug: every held claim of a partition assigned again is kept.
      return { ...decided, keepable: holding.filter((claim) => partitions.includes(claim.partition)) };
    });
    const violations = await runShippedLaneSchedules(1, 200, { settleMs: 1_000 });
    report('kept without checks', violations);
    // Kafka's fencing keeps the stale lane from committing anything; ownership's own promise is what breaks.
    expect(kinds(violations)).toContain('keep-only-unfenced');
  });

  it('spend holds that let every send through (the cap never holds one): found', async () => {
    vi.spyOn(SpendHolds.prototype, 'take').mockImplementation(async () => 0n);
    const violations = await runShippedLaneSchedules(1, 100, { settleMs: 1_000 });
    report('spend cap ignored', violations);
    expect(kinds(violations)).toContain('within-spend-cap');
  });

  it('a schedule that broke something replays from its seed alone, interleaving included (the clock is virtual)', async () => {
    rewriteEffects((effects) => effects.map((effect) => (effect.type === 'refuse-call' ? { type: 'call', offset: effect.offset } : effect)));
    const batch = await runShippedLaneSchedules(1, 50, { settleMs: 1_000 });
    const seed = batch[0]?.seed;
    expect(seed).toBeDefined();
    const details = (violations: readonly ShippedLaneViolation[]): string[] => violations.filter((v) => v.seed === seed).map((v) => `${v.kind}: ${v.detail}`);
    const alone = await runShippedLaneSchedules(seed ?? 0, 1, { settleMs: 1_000 });
    expect(details(alone)).toEqual(details(batch));
    expect(alone[0]?.trace).toEqual(batch[0]?.trace);
  });
  it('a lane that drops the machine’s handover effects (a claim that moves tells the next owner nothing): found', async () => {
    rewriteEffects((effects) => effects.filter((effect) => effect.type !== 'handover'));
    const violations = await runShippedLaneSchedules(1, 100, { settleMs: 1_000 });
    report('handover dropped', violations);
    expect(kinds(violations)).toContain('unknown-has-a-cause');
  });
});
