import type { RunOptions, ViolationKind } from '../../tools/simulate/model.ts';
import { runMany } from '../../tools/simulate/runner.ts';

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
