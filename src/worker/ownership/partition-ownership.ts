import { randomBytes } from 'node:crypto';
import { SmsWorkerError } from '../../errors.ts';
import type { Logger } from '../../observability/logger.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import { recoveryPlan, type Checkpoint } from '../lane/ledger-checkpoint.ts';
import { buildClaim, claimSteps, type PartitionClaim } from '../protocol/claim.ts';
import { OwnershipMachine, TimedLease, type ClaimStanding } from '../protocol/ownership.ts';
import { completeWindow, type EarlyWindow, type WindowRecord } from '../lane/repeat-window.ts';

/** This generation's hold of one partition (defined with the partition protocol). */
export type { PartitionClaim } from '../protocol/claim.ts';

/** The effects ownership needs, kept behind an interface so it has no Kafka types (and tests can drive it). */
export interface OwnershipEffects {
  /**
   * Waits until this process's lane of an earlier claim of the partition has ended (its calls under
   * way finished and their results committed): fencing before that would abort those results.
   * True when this process had such a lane (no other process can have been working on it).
   */
  handover(topic: string, partition: number): Promise<boolean>;
  /**
   * Gets the partition's producer ready ahead of its fence (connected, not initialised with its
   * transactional id: fencing nobody), while the claim waits; only saves the fence time.
   */
  prepareFence?(topic: string, partition: number): void;
  /** Initialises the partition's transactional producer: fences the previous owner, settles its open transaction. */
  fence(topic: string, partition: number, generation: number): Promise<void>;
  /** The group's committed offset (may be stale without KIP-447's require_stable). */
  groupOffset(topic: string, partition: number): Promise<bigint>;
  /**
   * The ledger's newest checkpoint (undefined when the ledger is off or empty): read to the end
   * after fencing (`end`); `settled` (to the end only if the transactions open there end within a
   * moment, else to the last stable offset) is for reads that fence nobody, such as the warm-up's.
   * See LedgerReadEnd in kafka/ledger-store.ts. `fencedIn`: the read comes right after the fence of
   * this generation's claim, when nothing may be open in the ledger partition: a transaction open
   * there is a hanging one, which the claim's producer ends before reading (TransactionalProducers.settle).
   */
  checkpoint(partition: number, upTo: 'end' | 'settled', fencedIn?: number): Promise<Checkpoint | undefined>;
  /** commandIds of the committed command records in [max(low, start − count), start), in offset order. */
  recentCommandIds(topic: string, partition: number, start: bigint, count: number): Promise<{ offset: bigint; commandId: string }[]>;
  /**
   * Carries the partition's producer from one generation's claim to the next without initialising
   * it again (a kept claim: nobody else can have fenced it). False when it has no producer of `from`.
   */
  carry(topic: string, partition: number, from: number, to: number): boolean;
  /** Stops fetching a partition this process lost, until the next generation (or reclaimLost). */
  pauseLost(topic: string, partition: number): void;
  /** Fetches a lost partition again from `offset` (where its last claim had committed): its next batch claims it afresh. */
  reclaimLost(topic: string, partition: number, offset: bigint): void;
  resumeAll(topic: string, partitions: readonly number[]): void;
}

export interface OwnershipOptions {
  readonly effects: OwnershipEffects;
  readonly dedupWindow: number;
  /** A heartbeat older than this means the group may have given the partitions away (a freeze, a partition). */
  readonly sessionTimeoutMs: number;
  readonly log: Logger;
  readonly metrics: WorkerMetrics;
  readonly now?: () => number;
  /** Names a new claim's marks (unique to the claim); injectable so a simulation replays. @defaultValue 6 random bytes, base64url */
  readonly markOwner?: () => string;
}

/**
 * How long a repeat window read before joining serves its partition's first claim: a warm-up's
 * join follows within seconds; one given the partition much later reads afresh (completing an old
 * window reads up to DEDUP_WINDOW records anyway).
 */
const WINDOW_AHEAD_TTL_MS = 30_000;

/**
 * Partition ownership: fencing, recovery from the ledger, the lease that gates every send, and
 * the partitions lost to fencing. One object per worker; a new group generation starts afresh.
 *
 * Rules, and why:
 * - A partition is fenced (producer initialised) once per generation, then recovered: start at
 *   the later of the group's offset and the ledger's checkpoint; inherit the ledger's open marks.
 * - A partition whose producer was fenced is lost: it is never re-initialised at once (that would
 *   fence the rightful owner back), and the consumer stops fetching it. It stays lost until the
 *   next generation, unless the group confirms this member's generation twice first
 *   (protocol/claim.ts mayReclaimLost): then no member of a later generation fenced it, the fence
 *   was a zombie's that landed late, and the partition is claimed afresh (at most
 *   LOST_RECLAIMS_PER_GENERATION times a generation).
 * - A send may start only while the lease holds: the last successful heartbeat (or join) is
 *   younger than the session timeout minus a margin. A process that was frozen past the session
 *   timeout finds its lease expired when it wakes and sends nothing more.
 */
export class PartitionOwnership {
  readonly #o: OwnershipOptions;
  readonly #now: () => number;
  readonly #lease: TimedLease;
  /** The decisions: membership, generation, lease lapses, keeping, lost partitions (protocol/ownership.ts). */
  readonly #machine: OwnershipMachine;
  /** The topic of this source (one ownership per source): lost partitions are of it. */
  #topic: string | undefined;
  /** Repeat windows read before joining (readWindowsAhead), each for the partition's first claim within WINDOW_AHEAD_TTL_MS. */
  readonly #windowsAhead = new Map<string, { readonly readAt: number; readonly window: Promise<EarlyWindow | undefined> }>();
  #claims = new Map<string, Promise<PartitionClaim>>();
  /** When each claim was made. */
  readonly #claimedAt = new WeakMap<PartitionClaim, number>();
  /** Claims in their handover step (topic:partition): they have not fenced yet (see waitingForEarlierOwner). */
  readonly #handingOver = new Set<string>();

  constructor(options: OwnershipOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#lease = new TimedLease(options.sessionTimeoutMs, this.#now);
    this.#machine = new OwnershipMachine(this.#lease, this.#now);
  }

  get generation(): number {
    return this.#machine.generation;
  }

  /** The group is rebalancing (kafkajs's REBALANCING): no claim fences until the new assignment. */
  rebalancing(): void {
    this.#machine.rebalance();
  }

  /**
   * Shutting down: no claim fences any more. A graceful stop leaves the group while its lanes
   * finish (ledger on), and a claim still under way (waiting for a lane to hand over) would
   * otherwise fence a partition the group has given to another member since.
   */
  stop(): void {
    this.#machine.stop();
  }

  /** This process leaves its group now (its lanes may still finish): no claim is current any more. */
  leaving(): void {
    this.#machine.leave();
  }

  /**
   * The consumer crashed and kafkajs restarts it in place: it has left the group (its LeaveGroup
   * went out before the crash was reported) or will be dropped at its session's end, and joins
   * again as a new member. Until that join, as after leaving(): no claim is current (no send
   * starts, no producer is started again, which could fence the member the partition went to),
   * and no claim fences. The join ends it; nothing is kept across it (a new member id).
   */
  outOfGroup(): void {
    this.#machine.consumerCrashed();
  }

  /**
   * A new group generation. `holding`: claims whose lanes hold (rebalancing) and could go on;
   * `next`: this is the very next generation for this member (group-membership.ts). A claim is
   * kept — carried into the new generation without fencing or reading again — when its partition
   * is assigned again, the generation is the next one, the lease has not lapsed since the claim,
   * and its producer carries over. Every other assigned partition is fenced and recovered again
   * before its next batch. Returns the kept claims.
   */
  joined(topic: string, partitions: readonly number[], next = false, holding: readonly PartitionClaim[] = []): Set<PartitionClaim> {
    // Windows read ahead that no claim took in time are not kept (up to DEDUP_WINDOW ids each).
    for (const [key, ahead] of this.#windowsAhead) if (this.#now() - ahead.readAt > WINDOW_AHEAD_TTL_MS) this.#windowsAhead.delete(key);
    this.#topic = topic;
    const previous = this.#machine.generation;
    const ofTopic = holding.filter((claim) => claim.topic === topic);
    const { keepable, lost } = this.#machine.join(
      partitions,
      next,
      ofTopic.map((claim) => ({ partition: claim.partition, generation: claim.generation, claimedAt: this.#claimedAt.get(claim) ?? Number.NEGATIVE_INFINITY })),
    );
    const generation = this.#machine.generation;
    const kept = new Set<PartitionClaim>();
    for (const claim of ofTopic) {
      // The machine's decision, then the producer: kept only if it carries over.
      const keep = keepable.some((k) => k.partition === claim.partition && k.generation === claim.generation);
      if (!keep || !this.#o.effects.carry(topic, claim.partition, previous, generation)) continue;
      claim.generation = generation;
      kept.add(claim);
    }
    this.#claims = new Map([...kept].map((claim) => [`${topic}:${claim.partition}`, Promise.resolve(claim)]));
    this.#o.metrics.lostPartitions.dec(lost.length);
    if (lost.length > 0) this.#o.effects.resumeAll(topic, partitions);
    if (kept.size > 0) this.#o.metrics.claimsKept.inc(kept.size);
    for (const partition of partitions) if (!this.#claims.has(`${topic}:${partition}`)) this.#claimNow(topic, partition);
    return kept;
  }

  /** Claims a partition now, not at its first batch (a failure is retried there). */
  #claimNow(topic: string, partition: number): void {
    this.claim(topic, partition).catch((error: unknown) =>
      this.#o.log.warn({ err: error, topic, partition }, 'fencing or recovering the partition failed; retrying at its first batch'),
    );
  }

  /** The group confirmed this member (a heartbeat or a join succeeded). */
  confirm(): void {
    this.#machine.confirm();
  }

  /**
   * A heartbeat succeeded: the group is stable in this member's generation. Confirms the lease, and
   * claims again a partition lost to fencing once enough heartbeats confirmed the generation since
   * (mayReclaimLost: the fencer was not a member of a later generation).
   */
  heartbeat(): void {
    const topic = this.#topic;
    for (const lost of this.#machine.heartbeat()) {
      if (topic === undefined) break;
      this.#o.metrics.lostPartitions.dec();
      this.#o.log.warn(
        { topic, partition: lost.partition, generation: this.#machine.generation, confirmations: lost.confirmations },
        'partition lost to fencing, but the group still confirms this member as its owner: the fence was a former member’s that landed late; claiming the partition afresh',
      );
      // Inside kafkajs's HEARTBEAT event: a throw here would fail the heartbeat.
      try {
        this.#o.effects.reclaimLost(topic, lost.partition, lost.resumeAt);
      } catch (error) {
        this.#o.log.warn({ err: error, topic, partition: lost.partition }, 'fetching the reclaimed partition again failed');
      }
      // Fenced and recovered at once, as at a join, not at its next batch: with nothing new to
      // fetch, an open transaction of the late fencer would otherwise hold read_committed readers.
      this.#claimNow(topic, lost.partition);
    }
  }

  /** Shutting down (stop): no claim fences any more, and the member asks its group for no partitions. */
  get isStopping(): boolean {
    return this.#machine.isStopping;
  }

  /** Between the group's REBALANCING and this member's new assignment: no producer is initialised (claims, retried transactions). */
  get isRebalancing(): boolean {
    return this.#machine.isRebalancing;
  }

  /** Whether a send may start now (see the class comment). */
  leaseHolds(): boolean {
    return this.#machine.leaseHolds();
  }

  /** Until the lease lapses unless the group confirms this member again, ms (≤ 0: lapsed). */
  leaseLeftMs(): number {
    return this.#lease.leftMs();
  }

  get assigned(): readonly number[] {
    return this.#machine.assigned;
  }

  /**
   * Whether a claim is of the current generation (a lane left from an earlier one must not send or
   * start a producer). None is once this process has left its group (a graceful stop with the
   * ledger on leaves while its lanes finish): a producer started again then (a failed transaction
   * retried) would fence the member the group gave the partition to since (the simulation found it
   * once it modelled that retry). With the ledger off the lanes finish as members, and may.
   */
  isCurrent(claim: PartitionClaim): boolean {
    return this.#ofTopic(claim) && this.#machine.isCurrent(claim.generation, claim.partition);
  }

  /** What `claim`'s lane asks of ownership at each send and commit (a claim this ownership made, so of its topic). */
  standing(claim: PartitionClaim): ClaimStanding {
    return this.#machine.standing(claim);
  }

  /** Whether `claim` is of this ownership's topic (any, before the first join names it). */
  #ofTopic(claim: PartitionClaim): boolean {
    return this.#topic === undefined || claim.topic === this.#topic;
  }

  isLost(topic: string, partition: number): boolean {
    return topic === this.#topic && this.#machine.isLost(partition);
  }

  /** The producer of this partition was fenced: another process owns it now (or a zombie fenced it: see heartbeat). `resumeAt`: where its claim had committed. */
  lose(topic: string, partition: number, resumeAt: bigint): void {
    this.#topic ??= topic;
    if (topic !== this.#topic || !this.#machine.lose(partition, resumeAt)) return;
    this.#o.metrics.lostPartitions.inc();
    this.#claims.delete(`${topic}:${partition}`);
    this.#o.effects.pauseLost(topic, partition);
    this.#o.log.warn(
      { topic, partition, generation: this.#machine.generation },
      'partition lost to another owner (producer fenced): not touching it again until the next rebalance, or until the group confirms this member still owns it',
    );
  }

  /** Drops a claim (its lane failed: a transient error, not fencing) so the next batch claims afresh. */
  release(topic: string, partition: number): void {
    this.#claims.delete(`${topic}:${partition}`);
  }

  /**
   * Whether a claim of the partition is in its handover step: waiting for an earlier owner, not
   * yet fencing. Only then may the member rejoin the group while the claim goes on (lane-router.ts):
   * a fence still under way after the rejoin could land after the next owner's and fence it.
   */
  waitingForEarlierOwner(topic: string, partition: number): boolean {
    return this.#handingOver.has(`${topic}:${partition}`);
  }

  /** This generation's claim of a partition: fences and recovers on first use. */
  claim(topic: string, partition: number): Promise<PartitionClaim> {
    const key = `${topic}:${partition}`;
    let pending = this.#claims.get(key);
    if (pending === undefined) {
      const generation = this.#machine.generation;
      pending = this.#recover(topic, partition, generation);
      this.#claims.set(key, pending);
      pending.catch(() => {
        if (this.#claims.get(key) === pending) this.#claims.delete(key);
      });
    }
    return pending;
  }

  async #recover(topic: string, partition: number, generation: number): Promise<PartitionClaim> {
    const started = this.#now();
    // Fencing takes the partition from whoever holds it: only while the group counts this member in.
    if (!this.leaseHolds())
      throw new SmsWorkerError('LEASE_EXPIRED', `not claiming ${topic}[${partition}]: no heartbeat confirmed this member within the session timeout`, {
        retryable: true,
      });
    // Most of the repeat window is read, and the producer connected, while the claim waits (and fences).
    const early = this.#earlyWindow(topic, partition);
    this.#o.effects.prepareFence?.(topic, partition);
    const stepMs: Record<string, number> = {};
    const { groupOffset, checkpoint } = await this.#claimSteps(topic, partition, generation, stepMs);
    const { start } = recoveryPlan(groupOffset, checkpoint);
    const windowStarted = this.#now();
    const recent = await this.#repeatWindow(topic, partition, start, await early);
    stepMs['window'] = this.#now() - windowStarted;
    // Names this claim's marks: unique to it, so a handover of one of them settles nothing else.
    const markOwner = this.#o.markOwner?.() ?? randomBytes(6).toString('base64url');
    const claim = buildClaim({ topic, partition, generation, markOwner }, groupOffset, checkpoint, recent, this.#o.dedupWindow);
    this.#claimedAt.set(claim, started);
    this.#claimed(claim, groupOffset, checkpoint, started, stepMs);
    return claim;
  }

  /**
   * The claim's steps in the protocol's order (claimSteps): wait for this process's earlier lane
   * (handover), fence, then read the group offset and the ledger, so no earlier owner can still
   * write what is read. Each step's time goes to `stepMs`.
   */
  async #claimSteps(
    topic: string,
    partition: number,
    generation: number,
    stepMs: Record<string, number>,
  ): Promise<{ groupOffset: bigint; checkpoint: Checkpoint | undefined }> {
    let groupOffset = 0n;
    let checkpoint: Checkpoint | undefined;
    for (const step of claimSteps()) {
      const stepStarted = this.#now();
      if (step === 'handover') {
        await this.#handover(topic, partition);
        stepMs[step] = this.#now() - stepStarted;
        continue;
      }
      if (!this.#machine.mayFence(generation))
        throw new SmsWorkerError(
          'CLAIM_STALE',
          `not claiming ${topic}[${partition}]: the group is rebalancing, a newer generation started meanwhile, or this worker is stopping`,
          { retryable: true },
        );
      // The handover may have waited (or the process frozen) past the lease: fence only while it holds.
      if (step === 'fence' && !this.leaseHolds())
        throw new SmsWorkerError('LEASE_EXPIRED', `not fencing ${topic}[${partition}]: the group lease expired while waiting for the earlier owner`, {
          retryable: true,
        });
      if (step === 'fence') await this.#o.effects.fence(topic, partition, generation);
      else {
        // Each read's own time too (the logs tell a slow group offset from a slow ledger).
        const timed = <T>(name: string, read: Promise<T>): Promise<T> =>
          read.finally(() => {
            stepMs[name] = this.#now() - stepStarted;
          });
        [groupOffset, checkpoint] = await Promise.all([
          timed('groupOffset', this.#o.effects.groupOffset(topic, partition)),
          timed('ledger', this.#o.effects.checkpoint(partition, 'end', generation)),
        ]);
      }
      stepMs[step] = this.#now() - stepStarted;
    }
    return { groupOffset, checkpoint };
  }

  /** Waits for this process's own earlier lane of the partition; another process's calls under way are handed over record by record (handovers.ts), so the partition is fenced at once. */
  async #handover(topic: string, partition: number): Promise<void> {
    const key = `${topic}:${partition}`;
    this.#handingOver.add(key);
    try {
      await this.#o.effects.handover(topic, partition);
    } finally {
      this.#handingOver.delete(key);
    }
  }

  /** What a new claim says: its start against the group offset, marks in doubt, and its steps' times. */
  #claimed(claim: PartitionClaim, groupOffset: bigint, checkpoint: Checkpoint | undefined, started: number, stepMs: Record<string, number>): void {
    const { topic, partition, generation, inDoubt, dedup } = claim;
    if (checkpoint !== undefined && checkpoint.next > groupOffset) {
      this.#o.log.info(
        { topic, partition, groupOffset: groupOffset.toString(), ledgerOffset: checkpoint.next.toString() },
        'the group offset was behind the ledger checkpoint (not yet stable): starting at the checkpoint',
      );
    }
    if (inDoubt.size > 0) {
      this.#o.log.warn(
        { topic, partition, inDoubt: inDoubt.size },
        'commands were marked as being sent by an earlier owner without a result: they will not be sent again',
      );
    }
    this.#o.metrics.recoveries.inc();
    this.#o.metrics.claimSeconds.observe((this.#now() - started) / 1000);
    this.#o.log.info(
      { topic, partition, generation, start: claim.start.toString(), inDoubt: inDoubt.size, remembered: dedup.size, ms: this.#now() - started, stepMs },
      'partition claimed',
    );
  }

  /** The repeat window up to the group offset as it stands now (a claim reads it early; the warm-up reads it once before joining). */
  async windowAtGroupOffset(topic: string, partition: number): Promise<EarlyWindow> {
    const upTo = await this.#o.effects.groupOffset(topic, partition);
    const count = this.#o.dedupWindow;
    return { upTo, records: count > 0 && upTo > 0n ? await this.#o.effects.recentCommandIds(topic, partition, upTo, count) : [] };
  }

  /**
   * Reads the repeat window of each partition before this process is given any (the warm-up, before
   * joining): a joining process's claims then only complete theirs with what was committed since.
   * Without it, every claim of the join read and decoded up to DEDUP_WINDOW records at once, and
   * the claims' ledger reads queued behind those fetches on the reader's connection (a scale-up's
   * joiner: 40–150 ms of window and 140–330 ms of ledger read per claim, measured). One partition
   * at a time; each window is used by the partition's first claim within WINDOW_AHEAD_TTL_MS.
   */
  async readWindowsAhead(topic: string, partitions: number): Promise<void> {
    if (this.#o.dedupWindow <= 0) return;
    for (let partition = 0; partition < partitions; partition++) {
      const key = `${topic}:${partition}`;
      const ahead = { readAt: this.#now(), window: this.windowAtGroupOffset(topic, partition).catch(() => undefined) };
      this.#windowsAhead.set(key, ahead);
      // Not held past its use: a partition this process is never given (no rebalance may come to sweep it).
      setTimeout(() => {
        if (this.#windowsAhead.get(key) === ahead) this.#windowsAhead.delete(key);
      }, WINDOW_AHEAD_TTL_MS).unref();
      await ahead.window;
    }
  }

  /** How many windows read ahead are held, waiting for their partition's first claim. */
  get windowsReadAhead(): number {
    return this.#windowsAhead.size;
  }

  /** The early read of the window before the claim's steps; undefined when it cannot be read (read whole later). */
  async #earlyWindow(topic: string, partition: number): Promise<EarlyWindow | undefined> {
    if (this.#o.dedupWindow <= 0) return undefined;
    const key = `${topic}:${partition}`;
    const ahead = this.#windowsAhead.get(key);
    this.#windowsAhead.delete(key);
    // Read before joining (a log does not change below its group offset): completed like an early read.
    if (ahead !== undefined && this.#now() - ahead.readAt <= WINDOW_AHEAD_TTL_MS) return ahead.window;
    return this.windowAtGroupOffset(topic, partition).catch(() => undefined);
  }

  /** The repeat window before `start`: the early read completed with what was committed since, or read whole. */
  async #repeatWindow(topic: string, partition: number, start: bigint, early: EarlyWindow | undefined): Promise<WindowRecord[]> {
    const count = this.#o.dedupWindow;
    if (count <= 0 || start <= 0n) return [];
    try {
      const completion = completeWindow(early, start, count);
      if (completion === undefined) return await this.#o.effects.recentCommandIds(topic, partition, start, count);
      const since = completion.readCount > 0 ? await this.#o.effects.recentCommandIds(topic, partition, start, completion.readCount) : [];
      return [...completion.keep, ...since];
    } catch (error) {
      // Never taken for empty: a repeat of a command sent just before the start would be sent
      // again (the simulation found it: a broker down while a claim read its window, a second
      // send in 5 of 750,000 schedules). The claim fails, and is made again at the partition's next batch.
      throw new SmsWorkerError(
        'REPEAT_WINDOW_UNREADABLE',
        `could not read the repeat window of ${topic}[${partition}] (the records before ${start}): claiming it again`,
        {
          retryable: true,
          cause: error,
        },
      );
    }
  }
}
