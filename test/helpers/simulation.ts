import type { RunOptions, ViolationKind } from '../../tools/simulate/model.ts';
import { runMany, runSchedule } from '../../tools/simulate/runner.ts';

/** The correct protocol in a world without the optional faults (each test turns on the one it is about). */
export const QUIET_WORLD: RunOptions = {
  variant: 'correct',
  ledger: 'both',
  leaseLapses: false,
  lateFences: false,
  consumerRestarts: false,
  rejoinStalls: false,
  crashesAfterFailure: false,
  repeatKeys: 'same',
};

/** The first violation within `budget` schedules (seeds 1…budget), and its seed: the same seed replays it. */
export function firstViolation(options: RunOptions, budget: number): { readonly seed: number; readonly kind: ViolationKind } | undefined {
  const summary = runMany(budget, 1, options, true, 1);
  const found = summary.violations[0];
  return found?.violation === undefined ? undefined : { seed: found.seed, kind: found.violation.kind };
}

/** Every violation within `budget` schedules (seeds 1…budget), by kind: how many schedules, and the first seed. */
export function violationsByKind(options: RunOptions, budget: number): Map<ViolationKind, { readonly schedules: number; readonly firstSeed: number }> {
  const kinds = new Map<ViolationKind, { schedules: number; firstSeed: number }>();
  for (let seed = 1; seed <= budget; seed++) {
    const { violation } = runSchedule(seed, options);
    if (violation === undefined) continue;
    const seen = kinds.get(violation.kind);
    kinds.set(violation.kind, { schedules: (seen?.schedules ?? 0) + 1, firstSeed: seen?.firstSeed ?? seed });
  }
  return kinds;
}
