import { Coverage } from './coverage.ts';
import { Checks } from './invariants.ts';
import { Kafka } from './kafka.ts';
import { Violation, type CommandRecord, type RunOptions, type Settings, type SimVariant } from './model.ts';
import { Prng } from './prng.ts';
import { Scheduler } from './scheduler.ts';
import { Service } from './service.ts';

/**
 * One schedule's world: its settings and command logs (drawn from the seed), virtual time, Kafka,
 * the service, the invariant checks, and the trace. Processes and the group live on top of it.
 */
export class World {
  readonly seed: number;
  readonly variant: SimVariant;
  readonly options: RunOptions;
  readonly prng: Prng;
  readonly settings: Settings;
  readonly logs: readonly (readonly CommandRecord[])[];
  readonly clock = new Scheduler();
  readonly checks: Checks;
  readonly kafka: Kafka;
  readonly service: Service;
  readonly coverage: Coverage | undefined;
  readonly tracing: boolean;
  readonly lines: string[] = [];
  /** Faults are injected until `settings.faultsUntil`; after that the world heals. */
  faulty = true;
  #claims = 0;

  constructor(seed: number, options: RunOptions) {
    this.seed = seed;
    this.variant = options.variant;
    this.options = options;
    this.prng = new Prng(seed);
    this.settings = drawSettings(this.prng, options);
    this.logs = drawLogs(this.prng, this.settings.partitions, options.repeatKeys ?? 'any');
    this.checks = new Checks(this.settings.ledger, crossKeyCommands(this.logs));
    this.kafka = new Kafka(
      this.logs,
      this.checks,
      this.prng,
      this.settings.staleOffsets,
      options.lostMarkers === true ? new Prng(seed ^ 0x5bd1e995) : undefined,
    );
    this.service = new Service(this.prng, this.checks);
    this.coverage = options.coverage === true ? new Coverage() : undefined;
    this.tracing = options.trace === true;
  }

  get now(): number {
    return this.clock.now;
  }

  /**
   * An owner died without handing over (unknown-is-bounded). With mark permits, its commands marked
   * and not calling at the death must be within what its free slots and the marks ahead allow (the
   * pacing's bound, docs/guarantees.md step 5), and what may come back UNKNOWN, never requested, is
   * at most the marks ahead plus the slots (those and the calls under way, which may not have
   * reached the service); without mark permits, only the run-ahead bounds it, per partition.
   */
  ownerDied(who: string, death: OwnerDeath | undefined): void {
    const { markPermits, maxRunAhead, partitions } = this.settings;
    if (markPermits && death !== undefined && death.markedWaiting > death.mayWait)
      throw new Violation(
        'unknown-is-bounded',
        `${who} with ${death.markedWaiting} commands marked and not calling, more than the ${death.mayWait} its free slots and the marks ahead allow`,
      );
    this.checks.died(markPermits && death !== undefined ? death.allowance : maxRunAhead * partitions, who);
  }

  /** A number no other claim of the schedule has (the claim's mark names start with it). */
  nextClaimId(): number {
    this.#claims += 1;
    return this.#claims;
  }

  /** Only called behind `if (world.tracing)`, so a run without a trace builds no strings. */
  trace(line: string): void {
    this.lines.push(`t=${this.clock.now} ${line}`);
  }
}

function drawSettings(prng: Prng, options: RunOptions): Settings {
  const drawnLedger = prng.chance(0.5);
  const ledger = options.ledger === 'both' ? drawnLedger : options.ledger === 'on';
  const stale = options.staleOffsets ?? 'ledger';
  const drawn = {
    ledger,
    processes: prng.int(2, 3),
    partitions: prng.int(1, 2),
    markPermits: prng.chance(0.6),
    permits: prng.int(1, 3),
    slots: prng.int(1, 3),
    maxRunAhead: prng.int(2, 8),
    commitIntervalMs: prng.pick([0, 5, 20, 50]),
    dedupWindow: 64,
    retryAmbiguous: prng.chance(0.15),
    staleOffsets: stale === 'always' || (stale === 'ledger' && ledger),
    leaseLapses: options.leaseLapses ?? true,
    lateFences: options.lateFences ?? true,
    consumerRestarts: options.consumerRestarts ?? true,
    rejoinStalls: options.rejoinStalls ?? true,
    coordinatorRestarts: options.coordinatorRestarts ?? true,
    faultsUntil: prng.int(0, 3_000),
  };
  // From faultsUntil rather than a draw of its own, so adding it left every other draw of every
  // seed as it was (the variants' and findings' seeds still name the same schedules' draws).
  // The same for a lowered run-ahead: in a fifth of the schedules, the last process runs with
  // MAX_RUN_AHEAD 1 (an operator lowered it and a rolling update is half way), so a claim may inherit
  // marks further ahead than it may run (record-book.ts, untakenCarrier).
  const lowRunAhead = Math.floor(drawn.faultsUntil / MARK_LINGERS.length) % 5 === 0 ? drawn.processes : undefined;
  return { ...drawn, markLingerMs: MARK_LINGERS[drawn.faultsUntil % MARK_LINGERS.length] ?? 0, lowRunAheadProcess: lowRunAhead };
}

/** Marks' linger (MARK_LINGER_MS) of a schedule: half without, half with one shorter or longer than the commit interval. */
const MARK_LINGERS = [0, 0, 10, 60] as const;

/** Per partition 4–24 records (fewer each with two), keys from a small set, an occasional repeated commandId, undecodable or invalid record. */
function drawLogs(prng: Prng, partitions: number, repeatKeys: 'same' | 'any'): CommandRecord[][] {
  const logs: CommandRecord[][] = [];
  for (let p = 0; p < partitions; p++) {
    const count = prng.int(4, partitions === 1 ? 24 : 14);
    const keys = prng.int(1, 4);
    const log: CommandRecord[] = [];
    for (let offset = 0; offset < count; offset++) {
      const earlier = log.filter((r) => !r.poison);
      if (earlier.length > 0 && prng.chance(0.08)) {
        const first = prng.pick(earlier);
        // An upstream retry, mostly with the same key (sometimes another one that hashes to this partition).
        const other = prng.chance(0.3);
        const otherKey = `k${p}.${prng.int(0, keys - 1)}`;
        const key = other && repeatKeys === 'any' ? otherKey : first.key;
        log.push({ offset, key, commandId: first.commandId, poison: false, rejected: first.rejected });
      } else if (prng.chance(0.04)) {
        log.push({ offset, key: `k${p}.${prng.int(0, keys - 1)}`, commandId: `poison${p}.${offset}`, poison: true, rejected: false });
      } else {
        log.push({ offset, key: `k${p}.${prng.int(0, keys - 1)}`, commandId: `c${p}.${offset}`, poison: false, rejected: prng.chance(0.08) });
      }
    }
    logs.push(log);
  }
  return logs;
}

/** commandIds that appear under more than one key in one partition's log. */
function crossKeyCommands(logs: readonly (readonly CommandRecord[])[]): Set<string> {
  const out = new Set<string>();
  for (const log of logs) {
    const keys = new Map<string, string>();
    for (const record of log) {
      const seen = keys.get(record.commandId);
      if (seen === undefined) keys.set(record.commandId, record.key);
      else if (seen !== record.key) out.add(record.commandId);
    }
  }
  return out;
}

/** What a process held when it died, for unknown-is-bounded (Proc.death). */
export interface OwnerDeath {
  /** Its records marked and not calling (PartitionMachine.markedWaiting, over its lanes). */
  readonly markedWaiting: number;
  /** What its free slots and the marks ahead allow of those: the marks ahead plus the slots less the calls under way. */
  readonly mayWait: number;
  /** What may come back UNKNOWN, never requested: the marks ahead plus the slots. */
  readonly allowance: number;
}
