/**
 * `npm run simulate -- [--schedules N] [--seed S] [--variant V] [--ledger on|off|both]
 *   [--lost-markers on|off] [--lost-result-markers on|off] [--trace] [--accounts on|off] [--threads N]`
 *
 * Runs seeded schedules of the worker's own code (tools/simulate/shipped-lane.ts: the shipped
 * SourcePipeline, PartitionOwnership, LaneRouter and PartitionLanes with their PartitionMachines,
 * the record handler with its admission, the FailoverSender and GuardedSenders) over a simulated
 * Kafka, consumer group and messaging service, through crashes, zombies, fences, rebalances,
 * retirements and lost commit answers, and checks its invariants after each. Schedule i uses seed
 * S + i on a virtual clock of its own, so the seed alone replays it, interleaving included. With
 * `--ledger both` (the default) three schedules in four run with the ledger on, the rest with it
 * off. Exit 1 on a violation; a known-bad variant (shipped-variants.ts, injected from outside the
 * shipped code) stops at its first.
 *
 * Then, with the correct code and unless --accounts off: as many schedules of the send path over
 * several accounts (tools/simulate/failover.ts: the shipped FailoverSender over one shipped
 * GuardedSender per account, 2 or 3 simulated accounts), checking that no command is sent through
 * two accounts.
 */
import { parseArgs } from 'node:util';
import { choice, integer } from './cli-args.ts';
import { simulateAccounts, violationsByKind } from './failover.ts';
import { runInThreads } from './in-threads.ts';
import { CLAIM_ENDS, type ShippedLaneViolation } from './shipped-lane.ts';
import { SHIPPED_VARIANTS, type ShippedVariant } from './shipped-variants.ts';
import { TransitionCoverage } from './transition-coverage.ts';

interface Run {
  readonly variant: ShippedVariant;
  readonly lostMarkers: boolean;
  readonly lostResultMarkers: boolean;
}

/** The flags that replay one schedule exactly. */
function replayCommand(seed: number, ledger: boolean, run: Run): string {
  const flags = [`--seed ${seed}`, `--ledger ${ledger ? 'on' : 'off'}`];
  if (run.variant !== 'correct') flags.push(`--variant ${run.variant}`);
  if (run.lostResultMarkers) flags.push('--lost-result-markers on');
  else if (run.lostMarkers) flags.push('--lost-markers on');
  return `npm run simulate -- ${flags.join(' ')} --trace`;
}

/** Each schedule that broke something, by the invariant it broke first. */
function bySchedule(violations: readonly ShippedLaneViolation[]): ShippedLaneViolation[] {
  const first = new Map<number, ShippedLaneViolation>();
  for (const v of violations) if (!first.has(v.seed)) first.set(v.seed, v);
  return [...first.values()];
}

/** Runs one ledger mode's schedules and reports them; returns the schedules that broke something. */
async function simulate(
  seed: number,
  schedules: number,
  ledger: boolean,
  run: Run,
  coverage: TransitionCoverage,
  trace: boolean,
  threads: number,
): Promise<number> {
  const started = Date.now();
  const tally = new Map<string, number>();
  const violations = await runInThreads({ firstSeed: seed, count: schedules, ledger, ...run }, threads, tally, coverage);
  const broken = bySchedule(violations);
  for (const v of broken.slice(0, 3)) {
    console.log(`\nVIOLATION ${v.kind} (seed ${v.seed}): ${v.detail}`);
    const lines = v.trace ?? [];
    const shown = trace ? lines : lines.slice(-30);
    if (shown.length > 0) console.log(trace ? '  what happened:' : `  last ${shown.length} events:`);
    for (const line of shown) console.log(`    ${line}`);
    console.log(`  replay: ${replayCommand(v.seed, ledger, run)}`);
  }
  if (broken.length > 3) console.log(`\n(${broken.length - 3} more schedules with violations not shown)`);
  if (broken.length > 0)
    console.log(
      `\nby invariant (each schedule by its first): ${[...violationsByKind(broken)].map(([kind, k]) => `${kind} ${k.count} (first seed ${k.firstSeed})`).join('; ')}`,
    );
  const ran = tally.get('claim last') ?? 0;
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `ledger ${ledger ? 'on' : 'off'}: schedules ${ran}, violations ${broken.length}, ${Math.round(ran / Math.max(seconds, 1e-9)).toLocaleString('en')} schedules/s, ${seconds.toFixed(1)} s` +
      `; ${(tally.get('calls') ?? 0).toLocaleString('en')} calls, ${CLAIM_ENDS.map((end) => `${(tally.get(`claim ${end}`) ?? 0).toLocaleString('en')} ${end}`).join(', ')}` +
      (run.variant !== 'correct' && broken.length > 0 ? ' (stopped at the first violation)' : ''),
  );
  return broken.length;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      schedules: { type: 'string' },
      seed: { type: 'string' },
      variant: { type: 'string' },
      ledger: { type: 'string' },
      'lost-markers': { type: 'string' },
      'lost-result-markers': { type: 'string' },
      trace: { type: 'boolean', default: false },
      accounts: { type: 'string' },
      threads: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(
      'npm run simulate -- [--schedules N] [--seed S] [--variant V] [--ledger on|off|both] [--lost-markers on|off] [--lost-result-markers on|off] [--trace] [--accounts on|off] [--threads N]\n' +
        `  variants: ${SHIPPED_VARIANTS.join(', ')}`,
    );
    return 0;
  }
  const seed = integer('seed', values.seed, 1);
  // A seed alone replays that one schedule.
  const schedules = integer('schedules', values.schedules, values.seed === undefined ? 500 : 1);
  const run: Run = {
    variant: choice('variant', values.variant, SHIPPED_VARIANTS, 'correct'),
    lostMarkers: choice('lost-markers', values['lost-markers'], ['on', 'off'], 'off') === 'on',
    lostResultMarkers: choice('lost-result-markers', values['lost-result-markers'], ['on', 'off'], 'off') === 'on',
  };
  // Worker threads the schedules are split over (1: this one); a schedule's outcome is its seed's alone.
  const threads = integer('threads', values.threads, 1);
  const ledger = choice('ledger', values.ledger, ['on', 'off', 'both'], 'both');
  const [on, off] = ledger === 'both' ? [Math.ceil((schedules * 3) / 4), Math.floor(schedules / 4)] : ledger === 'on' ? [schedules, 0] : [0, schedules];
  console.log(
    `simulate: the shipped code, variant ${run.variant}, seeds ${seed}..${seed + Math.max(on, off) - 1}` +
      `${run.lostResultMarkers ? ', lost markers (results too)' : run.lostMarkers ? ', lost markers' : ''}`,
  );
  const coverage = new TransitionCoverage();
  let broken = 0;
  if (on > 0) broken += await simulate(seed, on, true, run, coverage, values.trace, threads);
  if (off > 0 && (run.variant === 'correct' || broken === 0)) broken += await simulate(seed, off, false, run, coverage, values.trace, threads);
  if (run.variant === 'correct') console.log(coverage.summary());
  // Not for a known-bad variant, nor for one schedule replayed.
  const replay = values.seed !== undefined && values.schedules === undefined;
  const accounts = choice('accounts', values.accounts, ['on', 'off'], run.variant !== 'correct' || replay ? 'off' : 'on') === 'on';
  const accountsFailed = accounts && (await simulateAccounts(seed, schedules));
  return broken > 0 || accountsFailed ? 1 : 0;
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 2;
}
