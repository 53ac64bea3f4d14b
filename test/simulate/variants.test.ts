import { describe, expect, it } from 'vitest';
import type { LedgerMode, RunOptions, SimVariant, ViolationKind } from '../../tools/simulate/model.ts';
import { runSchedule } from '../../tools/simulate/runner.ts';

/** The first seed (from 1) at which each kind of violation shows, within `budget` schedules. */
function firstSeeds(
  variant: SimVariant,
  ledger: LedgerMode,
  budget: number,
  lateFences = false,
  consumerRestarts = false,
  repeatKeys: RunOptions['repeatKeys'] = 'same',
): Map<ViolationKind, number> {
  const options: RunOptions = {
    variant,
    ledger,
    leaseLapses: false,
    lateFences,
    consumerRestarts,
    rejoinStalls: false,
    crashesAfterFailure: false,
    repeatKeys,
  };
  const first = new Map<ViolationKind, number>();
  for (let seed = 1; seed <= budget; seed++) {
    const { violation } = runSchedule(seed, options);
    if (violation !== undefined && !first.has(violation.kind)) first.set(violation.kind, seed);
  }
  console.log(`${variant} (ledger ${ledger}, ${budget} schedules): ${[...first].map(([kind, seed]) => `${kind} first at seed ${seed}`).join('; ')}`);
  return first;
}

/**
 * Each known-bad variant of the protocol is caught, for the invariant it breaks. (The seeds the
 * log prints replay with `npm run simulate -- --seed <seed> --variant <variant> --lease-lapses off
 * --crashes-after-failure off --repeat-keys same --trace`.) Neither the machine refusing a move nor the model
 * contradicting itself counts.
 */
// A budget of schedules, not a timing target: with coverage on and the machine shared (CI runs the
// unit tests with instrumentation), 10,000 schedules took over vitest's 5 s default once.
const SIMULATION_TIMEOUT_MS = 60_000;
/** Schedules within which the partition left lost after a late fence is caught. */
const LATE_FENCE_BUDGET = 3_000;

describe('known-bad variants are caught', { timeout: SIMULATION_TIMEOUT_MS }, () => {
  it('send-before-mark-commits: a crash between the call and its mark’s commit sends twice', () => {
    const first = firstSeeds('send-before-mark-commits', 'on', 300);
    expect([...first.keys()]).toEqual(['at-most-one-send']);
  });

  it('commit-past-unfinished: an offset committed past a record still in hand loses it, or answers it twice', () => {
    const first = firstSeeds('commit-past-unfinished', 'both', 300);
    expect(first.has('nothing-lost')).toBe(true);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('read-ledger-before-fence: what an earlier owner commits between the read and the fence is answered again', () => {
    const first = firstSeeds('read-ledger-before-fence', 'both', 1_500);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('refence-after-fenced: a fenced claim that takes its producer back commits its stale offset and checkpoint', () => {
    const first = firstSeeds('refence-after-fenced', 'both', 300);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('mark-without-permit: records marked far ahead of a free slot come back UNKNOWN, never requested, beyond what a death allows', () => {
    const first = firstSeeds('mark-without-permit', 'on', 4_000);
    expect([...first.keys()]).toEqual(['unknown-is-bounded']);
  });

  it('marks-ahead-fixed: mark permits a fixed pool of twice the slots (before issue 50): a process that dies with its slots busy leaves more commands marked and never called than its free slots and the marks ahead allow', () => {
    const first = firstSeeds('marks-ahead-fixed', 'on', 2_000);
    expect([...first.keys()]).toEqual(['unknown-is-bounded']);
  });

  it('keep-without-checks: a claim kept after a missed generation carries stale state and a fenced producer', () => {
    // Until 2026-11-28 the fenced claim also left its partition lost for good (nothing-lost, first at
    // seed 755); a lost partition is claimed again now, and what stays is the stale state (key-order
    // at seed 3,644; since a marks-only transaction's retry reads the ledger back against the
    // claim's floor, the schedules draw differently: at-most-one-send first at seed 6,003).
    const first = firstSeeds('keep-without-checks', 'both', 8_000);
    expect(first.size).toBeGreaterThan(0);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('resend-ahead-unread: a failed transaction that published results ahead of the offset, sent again without reading the ledger back, answers twice', () => {
    const first = firstSeeds('resend-ahead-unread', 'on', 2_000);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('read-back-by-offset: a failed transaction that moved the offset, read back by the group offset (stale without KIP-447) rather than the ledger, answers twice', () => {
    const first = firstSeeds('read-back-by-offset', 'on', 1_000);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('resend-when-unread: a failed transaction whose read-back fails, taken as not committed and sent again, answers twice', () => {
    const first = firstSeeds('resend-when-unread', 'on', 2_000);
    expect(first.has('exactly-one-result')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('reinitialise-anytime: a failed transaction retried while its group rebalances, or after its process left the group, fences the next owner', () => {
    const first = firstSeeds('reinitialise-anytime', 'on', 1_000);
    expect(first.size).toBeGreaterThan(0);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('handover-withdraws-calls: a retiring claim that hands over a record whose call is under way as withdrawn lets the next owner send it again', () => {
    const first = firstSeeds('handover-withdraws-calls', 'on', 1_000);
    expect(first.has('at-most-one-send')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('handover-by-offset: a handover matched by the record alone, not the mark it names, settles a later owner’s mark with a stale withdrawal', () => {
    const first = firstSeeds('handover-by-offset', 'on', 1_000);
    expect(first.has('at-most-one-send')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('lost-until-next-generation: a partition fenced by a former member’s late fence stays lost when no rebalance follows (its fencer died), and its records never get a result', () => {
    const first = firstSeeds('lost-until-next-generation', 'both', LATE_FENCE_BUDGET, true);
    expect(first.has('nothing-lost')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('current-out-of-group: a process whose consumer crashed (and left its group) goes on sending while the group gives its partitions to another member, which sends them too', () => {
    // 3,000: since kept calls give their slots back and the marks ahead are paced (issue 50) the
    // schedules draw differently; at-most-one-send first at seed 1,914.
    const first = firstSeeds('current-out-of-group', 'both', 3_000, false, true);
    expect(first.has('at-most-one-send')).toBe(true);
    expect(first.has('machine-threw') || first.has('model-error')).toBe(false);
  });

  it('repeat-before-untaken-carrier: the offset passes a repeat whose command’s record (an earlier owner’s mark in doubt, after it) has no result yet', () => {
    // Repeats under other keys only: under the same key the earlier owner cannot mark the later record first.
    const first = firstSeeds('repeat-before-untaken-carrier', 'on', 1_500, false, false, 'any');
    expect([...first.keys()]).toEqual(['repeat-after-result']);
  });
});
