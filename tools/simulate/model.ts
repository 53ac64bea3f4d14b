import type { SimVariant } from './variants.ts';
import type { Checkpoint } from '../../src/worker/lane/ledger-checkpoint.ts';

export type { SimVariant } from './variants.ts';
import type { INVARIANTS } from '../../src/worker/protocol/table.ts';

/**
 * The simulation's shared vocabulary: the outcome a simulated handler gives a record, what a
 * violation is, the options of a run and the settings one schedule draws, and the world's timing.
 */

export type OutcomeKind = 'SENT' | 'FAILED' | 'UNKNOWN' | 'REJECTED' | 'DEAD-LETTER' | 'duplicate';

/** What the machine carries for a record to its transaction (`duplicate` publishes nothing). */
export interface SimOutcome {
  readonly offset: number;
  readonly commandId: string;
  readonly kind: OutcomeKind;
}

/** One command record of a partition's log. */
export interface CommandRecord {
  readonly offset: number;
  readonly key: string;
  readonly commandId: string;
  /** Undecodable: it gets a dead letter. */
  readonly poison: boolean;
  /** Fails validation: REJECTED at once, never sent (the same for every owner). */
  readonly rejected: boolean;
}

/** The invariants of table.ts, and the machine refusing a move (or the model contradicting itself). */
export type ViolationKind = keyof typeof INVARIANTS | 'machine-threw' | 'model-error';

export class Violation extends Error {
  readonly kind: ViolationKind;
  constructor(kind: ViolationKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

export type LedgerMode = 'on' | 'off' | 'both';

/** How a run is asked for (CLI and tests). */
export interface RunOptions {
  readonly variant: SimVariant;
  readonly ledger: LedgerMode;
  /** Collect a trace of every event (slower; for replays). */
  readonly trace?: boolean;
  /** Observe every machine call for transition coverage (slower). */
  readonly coverage?: boolean;
  /**
   * Group offsets may be read stale (no KIP-447): `ledger` (only when the ledger is on, the
   * default: with it off nothing corrects a stale read, see the report), `always`, `never`.
   */
  readonly staleOffsets?: 'ledger' | 'always' | 'never';
  /** Freezes that lapse the lease without the group noticing (default on; see the report). */
  readonly leaseLapses?: boolean;
  /**
   * Fences that land late (default on): a claim's fence request goes out, the process stalls past
   * its session, and the fence lands when it resumes (its client's retry), after the group gave the
   * partition to another member — which it fences. Half the time the process dies right after.
   */
  readonly lateFences?: boolean;
  /**
   * Consumers that crash and restart in place (default on): kafkajs's consumer of a live process
   * crashes (a broker restarting under it), leaves its group or is dropped at its session's end,
   * and joins again as a new member while the process and its lanes go on
   * (PartitionOwnership.outOfGroup).
   */
  readonly consumerRestarts?: boolean;
  /**
   * Rejoins that fail and are tried again in place (default on; consumer-crashes.ts, JOIN_RETRY): a
   * live process's consumer hears of a rebalance and cannot join for a while (a broker restarting,
   * a coordinator moving). Meanwhile its lanes hold and the group hears nothing of it. Its join
   * goes through later, mostly within a handover's grace, now and then past it, the lease (its held
   * lanes then retire) or the session.
   */
  readonly rejoinStalls?: boolean;
  /**
   * The group coordinator restarting (default on; a broker SIGKILLed or stopped, and back): every
   * live member stops hearing from the group at once; its consumer waits for a broker in place and
   * keeps its member id (consumer-crashes.ts: the fetch loop's wait, a rejoin tried again in place).
   * The restarted coordinator loads the group with every member and starts their sessions afresh,
   * so nobody is dropped for the outage itself; each member then rejoins as itself, some late.
   * Meanwhile lanes hold and leases lapse, as in a rejoin stall.
   */
  readonly coordinatorRestarts?: boolean;
  /**
   * Transactions committed with some markers lost (default off; `--lost-markers on`): Kafka 4.3.1's
   * coordinator, restarting while it wrote a transaction's markers, completed it with its ledger
   * partition's marker (and now and then its results' or the group offset's) never written. Those
   * parts stay open until the partition's producer writes its next marker there, which gives them
   * its own fate; a claim that finds the ledger's part open after its fence ends it (aborts it).
   * Off by default so that every seed of the variants and findings keeps its schedule.
   */
  readonly lostMarkers?: boolean;
  /**
   * What a claim that ended a hanging transaction goes on from, in place of the shipped
   * withHangingMarks (a test injects the code before it: the committed checkpoint alone).
   */
  readonly keepHanging?: (committed: Checkpoint | undefined, hanging: readonly Checkpoint[]) => Checkpoint | undefined;
  /** A repeated commandId comes with its first record's key (`same`) or, now and then, another key of the partition (`any`, the default; see the report). */
  readonly repeatKeys?: 'same' | 'any';
  /** A handler may throw after its claim failed (default on; see the report). */
  readonly crashesAfterFailure?: boolean;
  /**
   * The handler after an ambiguous answer it keeps (retries allowed): `careful` (the default, what
   * src/worker/send/guarded-sender.ts does) counts the command maybe sent from then on: given up or
   * refused, it says `maybeSent`, and a retry that surely did not arrive withdraws nothing.
   * `forgetful` is known-bad (guarded-sender.ts and the client before 2026-11-27): it reports no
   * `maybeSent` and reports a kept call as not reached (`kept`), also when an attempt within the
   * call was ambiguous and only the last one was refused a connection, so a mark whose command may
   * have been sent is withdrawn.
   */
  readonly handler?: 'careful' | 'forgetful';
}

/** What one schedule draws before it starts. */
export interface Settings {
  readonly ledger: boolean;
  readonly processes: number;
  readonly partitions: number;
  readonly markPermits: boolean;
  readonly permits: number;
  readonly slots: number;
  readonly maxRunAhead: number;
  /** The process that runs with MAX_RUN_AHEAD 1 instead (a setting lowered in a rolling update), if any. */
  readonly lowRunAheadProcess: number | undefined;
  readonly commitIntervalMs: number;
  /** MARK_LINGER_MS: a busy partition's marks wait up to this long after its last transaction, to share the next one. */
  readonly markLingerMs: number;
  readonly dedupWindow: number;
  /** Ambiguous answers may be retried (PROVIDER_RETRY_AMBIGUOUS): those repeated requests are the operator's choice. */
  readonly retryAmbiguous: boolean;
  readonly staleOffsets: boolean;
  readonly leaseLapses: boolean;
  readonly lateFences: boolean;
  readonly consumerRestarts: boolean;
  readonly rejoinStalls: boolean;
  readonly coordinatorRestarts: boolean;
  /** Virtual time at which faults stop (the heal). */
  readonly faultsUntil: number;
}

/** Timing of the world, in virtual milliseconds. */
export const TIMING = {
  /** A lease holds this long after the last confirmed heartbeat (session timeout less a margin). */
  leaseMs: 1_000,
  /** The group gives a silent member's partitions away after this long. */
  sessionMs: 1_300,
  /** Epoch milliseconds at virtual time 0 (for marks). */
  epochMs: 1_800_000_000_000,
  /**
   * How long a new owner waits for an earlier owner's handover of an in-doubt mark (from the mark's
   * time) before reporting the command UNKNOWN: the longest call, and a commit (HANDOVER_GRACE).
   */
  handoverGraceMs: 400,
  /** Between a member's heartbeats (kafkajs's heartbeat interval as the worker sets it). */
  heartbeatMs: 100,
  /** The chance that a claim's fence, under faults, lands late (with `lateFences`). */
  lateFenceChance: 0.04,
  /** A schedule that has not settled after this many events is stuck (a liveness violation). */
  maxEvents: 60_000,
} as const;
