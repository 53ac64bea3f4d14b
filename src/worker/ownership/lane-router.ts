import type { WorkerConfig } from '../../config/index.ts';
import { FencedError, type FetchedBatch } from '../../kafka/ports.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import { PartitionLane, type LaneEnd } from '../lane/partition-lane.ts';
import type { BytesInHand } from '../source/bytes-in-hand.ts';
import type { Permits } from '../priority/priority-permits.ts';
import type { MarkPermits } from '../priority/send-permits.ts';
import { groupOffset } from '../../kafka/offsets.ts';
import { reportGeoRefusals } from '../send/geo-report.ts';
import { afterFailure } from '../protocol/claim.ts';
import type { PipelineParts } from '../parts.ts';
import { SEND_STAGES, type SendStage } from '../time-to-send.ts';

/** How often a batch waiting for a claim checks whether a heartbeat is due (it is sent only every heartbeat interval): a clock, not our own state. */
const HEARTBEAT_CHECK_MS = 100;

/** How long after a partition's lane moved away and ended its producer is replaced (TransactionalProducers.renew). */
const RENEW_AFTER_MOVE_MS = 2_000;

export interface LaneRouterOptions {
  readonly parts: PipelineParts;
  readonly config: WorkerConfig;
  readonly slots: Permits;
  readonly markPermits: MarkPermits;
  readonly bytesInHand: BytesInHand;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  /** Aborted when dispatched records must give up too (a forced stop, or wrap-up while sends are held). */
  readonly abandon: AbortSignal;
  readonly onProgress: (lane: string) => void;
  readonly onBusy: (lane: string, busy: boolean) => void;
}

/**
 * The worker's lanes, one per command partition it works on: each fetched batch goes to its
 * partition's lane, which dispatches it and returns, so fetching never waits for sends.
 *
 * A lane belongs to one claim, which a new generation may keep. How lanes change hands, and why:
 * - When the group starts rebalancing every lane holds (`holdAll`): no call starts, nothing new is
 *   taken; marks and calls under way go on. The new assignment then keeps the claims that nothing
 *   can have taken (`afterJoin`: the partition is assigned here again, in the very next
 *   generation, lease unbroken): their lanes go on as they were.
 * - Every other lane retires: commands not yet sending give up unsent, calls under way finish and
 *   their results commit with the lane's own producer.
 * - A new claim of a partition first waits for the partition's retiring lane to end (`handover`,
 *   called by the ownership before it fences): fencing earlier would abort the results of sends
 *   that were made, and the new owner would have to report them UNKNOWN.
 * - A claim whose lane was retired gets no new lane: the retired lane took records (their offsets
 *   resolved, so kafkajs fetches after them) and gave some up unsent, and a new lane of the same
 *   claim would start after those and commit past them. kafkajs can still hand over a batch it
 *   fetched before the rejoin; it is left unresolved, and the next generation fetches from the
 *   committed offset.
 * - A lane that fails (a commit failed, a bug) gives up its claim and rewinds the consumer to the
 *   committed offset, so the next batch claims afresh (fence, recover) and nothing is skipped; a
 *   fenced one loses the partition until the next generation, or until the group confirms this
 *   member's generation twice (PartitionOwnership.heartbeat: a former member's late fence).
 */
export class LaneRouter {
  readonly #o: LaneRouterOptions;
  readonly #lanes = new Map<string, PartitionLane>();
  /** Claims whose lane was retired: no new lane for them (see the class comment). */
  readonly #retiredClaims = new WeakSet<PartitionLane['claim']>();
  #wrappingUp = false;
  /** Observes sms_worker_send_stage_seconds for this router's priority (labelled once, not per command). */
  readonly #sendStages: (stage: SendStage, seconds: number) => void;

  constructor(options: LaneRouterOptions) {
    this.#o = options;
    const priority = options.parts.source.priority;
    const byStage = new Map(SEND_STAGES.map((stage) => [stage, options.metrics.sendStages.labels({ priority, stage })]));
    this.#sendStages = (stage, seconds) => byStage.get(stage)?.observe(seconds);
  }

  /**
   * Hands a fetched batch to its partition's lane, claiming the partition first if needed. Never
   * waits for a send of the current lane; only a lane being replaced (a new generation, a failure)
   * is waited for, once, and the partition's claim. Those waits keep the member's heartbeats going
   * (`#heartbeating`): kafkajs sends them only between batches, and a claim waiting out an earlier
   * owner's calls (up to the handover grace) kept its member from learning of a rebalance begun
   * meanwhile, so the whole group, every partition of every member held, waited for that claim:
   * 1.1 and 1.7 s in a scale bench run, when a second pod joined during the first one's claims.
   * Returning at once instead, with the partition paused until its claim was done, was measured
   * worse: kafkajs fetches a resumed partition only at its next fetch, up to its wait time later.
   */
  async accept(batch: FetchedBatch): Promise<void> {
    const { parts } = this.#o;
    const { topic, partition } = batch;
    const key = `${topic}:${partition}`;
    // Lost to fencing in this generation: never re-initialise its producer (that would fence the
    // rightful owner back); the consumer was paused for it.
    if (this.#wrappingUp || parts.ownership.isLost(topic, partition)) return;
    let lane = this.#lanes.get(key);
    // Rebalancing: the batch stays unresolved; the new generation (kept or not) fetches it again.
    if (lane?.holding === true) return;
    if (lane !== undefined && (!lane.accepting || !parts.ownership.isCurrent(lane.claim))) {
      // A lane of an older generation, or a failed one: it ends first (a failed one gives up its
      // claim and rewinds the consumer, which makes this batch stale).
      this.#retire(lane, new Error('superseded by a new claim'));
      await this.#heartbeating(batch, lane.ended, () => true);
      if (batch.isStale() || parts.ownership.isLost(topic, partition)) return;
      lane = this.#lanes.get(key);
    }
    if (lane === undefined) {
      // A lease that lapsed while no broker answered (no heartbeat goes out then): the group hears
      // from the member first. Claiming refuses without a lease (a member the group may have
      // dropped must not fence), and kafkajs heartbeats only between batches that succeed, so a
      // batch refused for want of a heartbeat never got one: the member sat out its session,
      // retrying the batch, until the group dropped it (test/worker/broker-crash.int.test.ts).
      if (!parts.ownership.leaseHolds()) await batch.heartbeat();
      const claim = await this.#heartbeating(batch, parts.ownership.claim(topic, partition), () => parts.ownership.waitingForEarlierOwner(topic, partition));
      if (this.#wrappingUp || !parts.ownership.isCurrent(claim) || this.#retiredClaims.has(claim)) return;
      lane = this.#lanes.get(key);
      if (lane === undefined || lane.claim !== claim) {
        lane = this.#open(claim);
        this.#lanes.set(key, lane);
      }
    }
    lane.accept(batch);
  }

  /**
   * Waits for `settled`, sending the member's heartbeat whenever one is due meanwhile (the batch's
   * heartbeat sends one only every heartbeat interval). A heartbeat that finds the group
   * rebalancing rejects out of the batch handler: kafkajs rejoins at once, the batch stays
   * unresolved, and a claim still waiting for its earlier owner stops at the new generation
   * without fencing. Once `mayRejoin` is false (the claim has begun to fence) it still heartbeats,
   * so a claim whose read after the fence waits out a hanging transaction (DECIDED_WAIT_MS, 10 s)
   * keeps its member past a shorter session; but a rejection then waits for the claim to finish
   * before it leaves the handler, since a fence still under way after the rejoin could land after
   * the next owner's and fence it. (Without those heartbeats two members took turns: each one's
   * claim outlived its session, the other was given the partition and fenced it, for as long as
   * the transaction hung: `node bench/chaos.ts --seed 4242 --accounts 2`.)
   */
  async #heartbeating<T>(batch: FetchedBatch, settled: Promise<T>, mayRejoin: () => boolean): Promise<T> {
    let done = false;
    const finished = settled.then(
      () => void (done = true),
      () => void (done = true),
    );
    while (!done) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([finished, new Promise<void>((resolve) => (timer = setTimeout(resolve, HEARTBEAT_CHECK_MS)))]);
      clearTimeout(timer);
      if (done) continue;
      try {
        await batch.heartbeat();
      } catch (error) {
        if (!mayRejoin()) await finished;
        throw error;
      }
    }
    return settled;
  }

  /** Waits until the partition's lane of an earlier claim has ended (see the class comment); false when there was none. */
  async handover(topic: string, partition: number): Promise<boolean> {
    const lane = this.#lanes.get(`${topic}:${partition}`);
    if (lane === undefined) return false;
    this.#retire(lane, new Error('the partition is being claimed again'));
    await lane.ended;
    return true;
  }

  /** What the lane of `key` (`topic:partition`) waits on, or undefined without a lane (none, or a claim still being made). */
  waitingOn(key: string): (ReturnType<PartitionLane['waitingOn']> & { readonly claimWaitsForEarlierOwner: boolean }) | undefined {
    const lane = this.#lanes.get(key);
    if (lane === undefined) return undefined;
    return { ...lane.waitingOn(), claimWaitsForEarlierOwner: this.#o.parts.ownership.waitingForEarlierOwner(lane.claim.topic, lane.claim.partition) };
  }

  /** The group started rebalancing: every lane holds until the new assignment (see the class comment). */
  holdAll(): void {
    for (const lane of this.#lanes.values()) lane.hold();
  }

  /** Calls under way in the partition's lane (0 without one). */
  callsUnderWay(topic: string, partition: number): number {
    return this.#lanes.get(`${topic}:${partition}`)?.callsUnderWay ?? 0;
  }

  /** The claims of the lanes holding now: the ones a new generation could keep. */
  holding(): PartitionLane['claim'][] {
    return [...this.#lanes.values()].filter((lane) => lane.holding).map((lane) => lane.claim);
  }

  /** The new assignment: lanes of kept claims go on; every other lane retires. */
  afterJoin(kept: ReadonlySet<PartitionLane['claim']>, reason: unknown): void {
    const leaseHolds = this.#o.parts.ownership.leaseHolds();
    const assigned = new Set(this.#o.parts.ownership.assigned);
    for (const lane of this.#lanes.values()) {
      if (kept.has(lane.claim)) lane.keep(leaseHolds);
      // Another member has it now, and fences it at once: the lane hands its outcomes over.
      else this.#retire(lane, reason, !assigned.has(lane.claim.partition));
    }
  }

  /**
   * Nothing of this process's lanes can be kept any more: the consumer crashed
   * (PartitionOwnership.outOfGroup: its rejoin is a new member's), or the lease lapsed while the
   * group rebalanced (a claim older than the lapse is never kept). Every lane not retiring yet
   * retires now rather than at the next join: a lane holding for a rebalance gives its marked,
   * unsent commands up and hands them over at once, so their next owner does not wait a handover's
   * grace for them and report them UNKNOWN (the simulation found it: a crash while holding). As
   * moved: the partition may be another member's at once, which fences it; what is done is handed
   * over (a handover that cannot be written, the broker being down, leaves those commands UNKNOWN
   * to their next claim). Not as not moved, which would also commit for itself: the group may
   * have given the partition to another member already (a crash's LeaveGroup, or a session that
   * ran out while the lease lapsed), whose fence would abort that transaction and wait for it.
   */
  retireUnkeepable(reason: unknown): number {
    let retired = 0;
    for (const lane of this.#lanes.values()) {
      if (!lane.current) continue;
      this.#retire(lane, reason, true);
      retired += 1;
    }
    return retired;
  }

  /** Shutdown: every lane takes no more records and ends once its calls under way have committed. */
  retireAll(reason: unknown): void {
    for (const lane of this.#lanes.values()) this.#retire(lane, reason);
  }

  #retire(lane: PartitionLane, reason: unknown, moved = false): void {
    this.#retiredClaims.add(lane.claim);
    lane.retire(reason, moved);
    if (!moved) return;
    // Its producer is the next owner's to fence: replace it by one connected ahead once the lane is
    // done with it, a moment after the rebalance (not among the claims the rebalance set off).
    const { partition, generation } = lane.claim;
    void lane.ended.then(
      () => {
        const renew = setTimeout(() => {
          if (this.#wrappingUp) return;
          this.#o.parts
            .movedAway(partition, generation)
            .catch((error: unknown) => this.#o.log.warn({ err: error, partition }, 'could not connect a producer ahead for a partition that moved away'));
        }, RENEW_AFTER_MOVE_MS);
        renew.unref();
      },
      () => undefined,
    );
  }

  /** Graceful stop: no new records, every lane ended. */
  async drain(): Promise<void> {
    this.#wrappingUp = true;
    // Nothing more is taken: stop fetching rather than fetch the same records again and again.
    this.#o.parts.fetchPauses.stopFetching();
    this.retireAll(new Error('shutting down'));
    await Promise.all([...this.#lanes.values()].map((lane) => lane.ended));
  }

  /**
   * Resolves once every lane has committed what it had done when it retired (its calls under way
   * go on), or after `maxMs`: a process leaving its group waits for that one transaction, since
   * the next owners' fences would abort it, and wait for that (up to 390 ms measured).
   */
  async retireCommitted(maxMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, maxMs)));
    await Promise.race([Promise.all([...this.#lanes.values()].map((lane) => lane.retireCommittedSoon())), deadline]);
    clearTimeout(timer);
  }

  #open(claim: Awaited<ReturnType<PipelineParts['ownership']['claim']>>): PartitionLane {
    const { parts, config: c } = this.#o;
    const { topic, partition } = claim;
    const key = `${topic}:${partition}`;
    const lane: PartitionLane = new PartitionLane({
      deps: {
        codec: parts.codec,
        sender: parts.sender,
        policy: c.validation,
        inDoubtPolicy: c.ledger.inDoubt,
        maxRecordBytes: parts.maxRecordBytes,
        maxCommandBytes: c.maxCommandBytes,
        onRegistryRetry: (error) => this.#o.log.warn({ err: error }, 'schema registry unavailable; retrying'),
        tracer: parts.tracer,
        timeToSend: this.#o.metrics.timeToSend.labels({ priority: parts.source.priority }),
        sendStages: this.#sendStages,
        onGeoRefusals: (refusals, command, source) => reportGeoRefusals(this.#o.metrics, this.#o.log, c.validation.geo.mode, refusals, command, source),
        tenantKey: c.tenants.key,
      },
      producers: parts.producers,
      handovers: parts.handovers,
      slots: this.#o.slots,
      markPermits: this.#o.markPermits,
      metrics: this.#o.metrics,
      priority: parts.source.priority,
      log: this.#o.log,
      target: {
        consumerGroup: parts.source.consumerGroup,
        resultTopic: c.topics.results,
        deadLetterTopic: c.topics.deadLetter,
        ledgerTopic: c.ledger.enabled ? parts.source.ledgerTopic : undefined,
        maxBatchBytes: parts.maxRecordBytes,
        // Read back after the producer was initialised again: a transaction open there then is a hanging one.
        latestCheckpoint: () => parts.latestCheckpoint(partition, claim.generation),
        ...(parts.fateOfWritten !== undefined && { fateOfWritten: parts.fateOfWritten }),
      },
      commitIntervalMs: c.commitIntervalMs,
      markLingerMs: parts.source.markLingerMs,
      claim,
      maxRunAhead: c.ledger.maxRunAhead,
      bytesInHand: this.#o.bytesInHand,
      fetchCommittedOffset: (t, p) => groupOffset(parts.admin, parts.source.consumerGroup, t, p),
      // Sends need both: the group still counts this member in (the lease) and the claim is of
      // the current generation (not a lane left over from before a rebalance).
      standing: parts.ownership.standing(claim),
      abandon: this.#o.abandon,
      onProgress: () => this.#o.onProgress(key),
      onBusy: (busy) => this.#o.onBusy(key, busy),
      holdFetching: (held) => (held ? parts.fetchPauses.hold(partition, lane) : parts.fetchPauses.release(partition, lane)),
    });
    void lane.ended.then((end) => this.#ended(lane, end));
    return lane;
  }

  #ended(lane: PartitionLane, end: LaneEnd): void {
    const { parts, log } = this.#o;
    const { claim } = lane;
    const { topic, partition } = claim;
    const key = `${topic}:${partition}`;
    if (this.#lanes.get(key) === lane) this.#lanes.delete(key);
    if (end.failure === undefined || !parts.ownership.isCurrent(claim)) return;
    if (afterFailure(end.failure instanceof FencedError, parts.ownership.leaseHolds()) === 'lose') {
      parts.ownership.lose(topic, partition, claim.position.committed);
      return;
    }
    // Records were dispatched (and their offsets resolved) past the committed offset: fetch them
    // again from there under a fresh claim (fence, recover: marks of calls made become UNKNOWN).
    log.warn({ err: end.failure, topic, partition, committed: claim.position.committed.toString() }, 'partition lane failed; claiming the partition afresh');
    parts.ownership.release(topic, partition);
    if (!this.#wrappingUp) parts.consumer.seek(topic, partition, claim.position.committed);
  }
}
