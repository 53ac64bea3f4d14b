import { injectFaults } from './faults.ts';
import { Group } from './group.ts';
import type { Checks } from './invariants.ts';
import type { Coverage } from './coverage.ts';
import { TIMING, Violation, type RunOptions, type Settings, type ViolationKind } from './model.ts';
import { Proc } from './process.ts';
import { World } from './world.ts';

export interface ScheduleResult {
  readonly seed: number;
  readonly settings: Settings;
  readonly violation: { readonly kind: ViolationKind; readonly message: string } | undefined;
  readonly events: number;
  readonly requests: number;
  /** unknown-is-bounded's counts: UNKNOWN never requested, and what the deaths allowed. */
  readonly unknown: Checks['unknownBound'];
  /** Every traced line (only with `trace`). */
  readonly trace: readonly string[];
  readonly coverage: Coverage | undefined;
}

/** One schedule, fully determined by its seed (and the options). */
export function runSchedule(seed: number, options: RunOptions): ScheduleResult {
  const world = new World(seed, options);
  const procs: Proc[] = [];
  for (let id = 1; id <= world.settings.processes; id++) procs.push(new Proc(world, id));
  const group = new Group(world);
  for (const proc of procs) proc.groupConfirms = () => group.confirms(proc);
  let violation: ScheduleResult['violation'];
  try {
    if (world.tracing) world.trace(`seed ${seed}: ${describeSettings(world.settings)}; logs ${world.logs.map((l, p) => `p${p}=${l.length}`).join(' ')}`);
    for (const proc of procs) group.members.add(proc);
    group.rebalance();
    injectFaults(world, group, procs);
    while (world.clock.step()) {
      if (world.clock.ran > TIMING.maxEvents) throw new Violation('nothing-lost', `the schedule did not settle within ${TIMING.maxEvents} events`);
    }
    world.checks.final(
      world.logs,
      world.logs.map((_, p) => world.kafka.committed(p)),
      world.logs.map((_, p) => new Set((world.kafka.checkpoint(p)?.done ?? []).map((d) => Number(d.offset)))),
    );
  } catch (error) {
    const v = error instanceof Violation ? error : new Violation('model-error', error instanceof Error ? (error.stack ?? error.message) : String(error));
    violation = { kind: v.kind, message: v.message };
    if (world.tracing) world.trace(`VIOLATION ${v.kind}: ${v.message}`);
  }
  return {
    seed,
    settings: world.settings,
    violation,
    events: world.clock.ran,
    requests: world.service.requests,
    unknown: world.checks.unknownBound,
    trace: world.lines,
    coverage: world.coverage,
  };
}

export function describeSettings(s: Settings): string {
  return [
    `ledger ${s.ledger ? 'on' : 'off'}`,
    `${s.processes} processes`,
    `${s.partitions} partition(s)`,
    `slots ${s.slots}`,
    s.markPermits ? `permits ${s.permits}` : 'no permits',
    `run-ahead ${s.maxRunAhead}${s.lowRunAheadProcess === undefined ? '' : ` (1 in P${s.lowRunAheadProcess})`}`,
    `commit interval ${s.commitIntervalMs}`,
    `mark linger ${s.markLingerMs}`,
    s.retryAmbiguous ? 'ambiguous retried' : 'ambiguous final',
    s.staleOffsets ? 'stale offsets' : 'exact offsets',
    `faults until ${s.faultsUntil}`,
  ].join(', ');
}

export interface RunSummary {
  readonly schedules: number;
  readonly violations: ScheduleResult[];
  /** Violations counted (only the first few are kept). */
  readonly violationCount: number;
  /** Schedules by the invariant each broke first, with the first seed of each. */
  readonly byKind: ReadonlyMap<ViolationKind, { readonly schedules: number; readonly firstSeed: number }>;
  readonly events: number;
  readonly ms: number;
  readonly coverage: Coverage | undefined;
}

/** `count` schedules from `seed` on (seed, seed+1, …); `stopAtFirst`: end at the first violation. */
export function runMany(count: number, seed: number, options: RunOptions, stopAtFirst: boolean, keep = 5): RunSummary {
  const started = performance.now();
  const violations: ScheduleResult[] = [];
  let violationCount = 0;
  const byKind = new Map<ViolationKind, { schedules: number; firstSeed: number }>();
  let events = 0;
  let coverage: Coverage | undefined;
  let schedules = 0;
  for (let i = 0; i < count; i++) {
    const result = runSchedule(seed + i, options);
    schedules += 1;
    events += result.events;
    if (result.coverage !== undefined) {
      if (coverage === undefined) coverage = result.coverage;
      else coverage.merge(result.coverage);
    }
    if (result.violation === undefined) continue;
    violationCount += 1;
    const seen = byKind.get(result.violation.kind);
    byKind.set(result.violation.kind, { schedules: (seen?.schedules ?? 0) + 1, firstSeed: seen?.firstSeed ?? seed + i });
    if (violations.length < keep) violations.push(result);
    if (stopAtFirst) break;
  }
  return { schedules, violations, violationCount, byKind, events, ms: performance.now() - started, coverage };
}
