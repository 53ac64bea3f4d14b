import { isStopDuringRejoin } from '../../kafka/consumer-crashes.ts';
import type { WorkerConfig } from '../../config/index.ts';
import type { WorkerMetrics } from '../../metrics/metrics.ts';
import type { Logger } from '../../observability/logger.ts';
import { refreshConsumerLag } from './lag.ts';
import { LaneRouter, type LaneRouterOptions } from '../ownership/lane-router.ts';
import type { PipelineParts, WorkerParts } from '../parts.ts';

export interface SourcePipelineOptions<P extends PipelineParts = WorkerParts> {
  readonly parts: P;
  readonly config: WorkerConfig;
  /** Everything the lanes take but the parts: slots and permits at the source's priority, the bytes in hand, hooks. */
  readonly lanes: Omit<LaneRouterOptions, 'parts' | 'config'>;
  readonly metrics: WorkerMetrics;
  readonly log: Logger;
  /** The consumer crashed for good: the worker stops (or, while starting, gives up its start). */
  readonly onFatal: (error: unknown) => void;
}

/**
 * One command source at work: its consumer group membership, its lanes, and when it is ready.
 * The worker runs one per command topic (docs/priority.md); they share the service client, the
 * gate, the slots, the rate limit and the producers, and each rebalances on its own.
 */
/** How long a process leaving its group waits, at most, for its lanes' last commits of what was done (LaneRouter.retireCommitted). */
const LEAVE_AFTER_COMMITS_MAX_MS = 500;

export class SourcePipeline<P extends PipelineParts = WorkerParts> {
  readonly parts: P;
  readonly lanes: LaneRouter;
  readonly #o: SourcePipelineOptions<P>;
  #joined = false;
  /** The first generation's partitions are claimed: from then on the source works at full speed (see Worker.health). */
  #warm = false;
  #running = false;
  readonly #startedAt = Date.now();
  /** While the lanes hold for a rebalance: when the lease would lapse (see #watchHold). */
  #holdWatch: NodeJS.Timeout | undefined;

  constructor(options: SourcePipelineOptions<P>) {
    this.#o = options;
    this.parts = options.parts;
    this.lanes = new LaneRouter({ ...options.lanes, parts: options.parts, config: options.config });
    const lanes = this.lanes;
    this.parts.assignerHints.callsUnderWay = (topic, partition) => lanes.callsUnderWay(topic, partition);
    this.#watchConsumer();
  }

  get topic(): string {
    return this.parts.source.topic;
  }

  get joined(): boolean {
    return this.#joined;
  }

  get warm(): boolean {
    return this.#warm;
  }

  /**
   * Joins the group and starts fetching. `stillStarting` throws when the worker is stopping (or
   * failed) meanwhile: no step after it joins a group that the worker's release already left.
   */
  async start(stillStarting: () => void): Promise<void> {
    const { consumer, commandPartitions } = this.parts;
    await consumer.connect();
    stillStarting();
    await consumer.subscribe(this.topic);
    stillStarting();
    await consumer.run({
      partitionsConsumedConcurrently: Math.min(commandPartitions, 64),
      eachBatch: (batch) => this.lanes.accept(batch),
    });
    this.#running = true;
  }

  /**
   * Gives up the partitions. With the ledger on, the group is left as soon as every lane has
   * retired and committed what it had done, so the partitions move while the calls under way
   * finish: their outcomes are handed over (handovers.ts) to the new owners, which fence at once
   * (and committed here too, unless a new owner fenced first). With the ledger off nothing tells a
   * new owner a call is under way: every lane ends, its calls finished and committed, before the
   * group is left.
   */
  async release(): Promise<void> {
    const { ownership, consumer } = this.parts;
    this.#running = false;
    ownership.stop();
    this.#endHoldWatch();
    const drained = this.lanes.drain();
    if (this.#o.config.ledger.enabled) {
      // Each step's time is logged: until the group is left, the partitions' next owners wait.
      const started = Date.now();
      await this.lanes.retireCommitted(LEAVE_AFTER_COMMITS_MAX_MS);
      const retiredMs = Date.now() - started;
      ownership.leaving();
      await consumer.disconnect().catch((error: unknown) => this.#o.log.warn({ err: error }, 'leaving the group failed'));
      this.#o.log.info(
        { topic: this.topic, retiredMs, leaveMs: Date.now() - started - retiredMs },
        'left the group: lanes retired and committed, the rest handed over',
      );
    }
    await drained;
  }

  refreshLag(): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return refreshConsumerLag({
      admin: this.parts.admin,
      group: this.parts.source.consumerGroup,
      topic: this.topic,
      assigned: this.parts.ownership.assigned,
      metrics: this.#o.metrics,
      log: this.#o.log,
    });
  }

  #watchConsumer(): void {
    const { parts, lanes } = this;
    const { consumer, ownership } = parts;
    const { metrics, log } = this.#o;
    const topic = this.topic;
    // Partitions may stay or move: until the new assignment says which, no call starts and no claim
    // fences; marks and calls under way go on (partition-protocol.md, "Keeping a partition").
    consumer.onRebalancing(() => {
      parts.membership.rebalancing();
      this.#hold();
    });
    // A rejoin tried again in place: hold as above (kafkajs reports REBALANCING before some rejoins
    // only), but the membership's count of JoinGroups stays: one sent by a failed attempt means this
    // member can have missed a generation, and nothing is kept at the join.
    consumer.onRejoinRetrying(() => {
      this.#hold();
      log.info({ topic }, 'rejoin tried again in place: no call starts until the join');
    });
    consumer.onGroupJoin((payload) => {
      this.#endHoldWatch();
      this.#joined = true;
      const previous = ownership.assigned;
      const assigned = [...(payload.memberAssignment[topic] ?? [])];
      for (const partition of previous) {
        if (!assigned.includes(partition)) metrics.consumerLag.remove({ topic, partition: String(partition) });
      }
      log.info({ memberId: payload.memberId, group: parts.source.consumerGroup, assignment: payload.memberAssignment }, 'joined consumer group');
      const next = parts.membership.joined(payload.memberId);
      parts.fetchPauses.assign(assigned);
      // Kept claims go on; every other lane retires (commands not yet sending give up unsent, calls
      // under way finish; their outcomes commit, or, on a partition another member has now, are
      // handed over: that member fences at once. A new claim here waits for this process's own lane).
      // The others are fenced and recovered at once rather than at the first batch: a previous
      // owner's open transaction blocks read_committed readers of the result topic until it is aborted.
      const kept = ownership.joined(topic, assigned, next, lanes.holding());
      lanes.afterJoin(kept, new Error('a new group generation'));
      if (kept.size > 0) log.info({ topic, kept: [...kept].map((claim) => claim.partition) }, 'partitions kept across the rebalance');
      if (!this.#warm) this.#warmWhenClaimed(assigned);
    });
    consumer.onHeartbeat(() => ownership.heartbeat());
    consumer.onStop(() => {
      this.#joined = false;
      // The consumer's group is gone (a crash or the stop): nothing is paused any more until the next join.
      parts.fetchPauses.consumerStopped();
    });
    // Before kafkajs leaves the group: the member is out of it, and nothing of it is current until
    // it joins again (PartitionOwnership.outOfGroup), whether the consumer restarts or not.
    consumer.onCrashing(() => {
      this.#endHoldWatch();
      ownership.outOfGroup();
      // Inside kafkajs's crash handling: a throw here would be swallowed.
      try {
        lanes.retireUnkeepable(new Error('the consumer crashed'));
      } catch (error) {
        log.error({ err: error, topic }, 'retiring the lanes after a consumer crash failed');
      }
    });
    consumer.onCrash((payload) => {
      this.#joined = false;
      // A stop ends a rejoin tried again in place with a final crash: expected then, not an error.
      log[isStopDuringRejoin(payload.error) ? 'info' : 'error']({ err: payload.error, restart: payload.restart, topic }, 'consumer crashed');
      // Also while starting: the worker then gives up its start rather than run without this source.
      if (!payload.restart) this.#o.onFatal(payload.error);
    });
  }

  /** Until the new assignment: no claim fences, no call starts, and the lease is watched. */
  #hold(): void {
    this.parts.ownership.rebalancing();
    this.lanes.holdAll();
    this.#watchHold();
  }

  /**
   * While the lanes hold for a rebalance, no heartbeat confirms the member (kafkajs does not
   * heartbeat while it joins). Should the lease lapse before the join (a join the broker holds
   * long, a rejoin tried again in place whose attempt kafkajs holds long), nothing held can be kept
   * at the join: the lanes retire then (retireUnkeepable) and hand their marked, unsent commands
   * over before the member's session ends and the group gives the partitions away (the simulation
   * found a stall past the session without it: unknown-is-bounded at seeds 12341 and 17641).
   */
  #watchHold(): void {
    clearTimeout(this.#holdWatch);
    const { ownership } = this.parts;
    const check = (): void => {
      if (!ownership.isRebalancing || ownership.isStopping) return;
      const left = ownership.leaseLeftMs();
      if (left > 0) {
        this.#holdWatch = setTimeout(check, left + 1).unref();
        return;
      }
      const retired = this.lanes.retireUnkeepable(new Error('the lease lapsed while the group rebalanced'));
      if (retired > 0)
        this.#o.log.warn({ topic: this.topic, lanes: retired }, 'the lease lapsed while the group rebalanced: the lanes retire, handing over what they held');
    };
    this.#holdWatch = setTimeout(check, Math.max(0, ownership.leaseLeftMs()) + 1).unref();
  }

  /** The hold ended (a join), or nothing is left to watch (a crash retired the lanes, the release). */
  #endHoldWatch(): void {
    clearTimeout(this.#holdWatch);
    this.#holdWatch = undefined;
  }

  /**
   * Ready only once the first generation's partitions are claimed (fenced, ledger and dedup window
   * read): a join alone left a fresh pod's first records waiting for those reads after /readyz,
   * and a rolling update SIGTERMing the next old pod meanwhile. The claims are the ones joined()
   * started (claim() returns them); a failed one is retried at its partition's first batch, so it
   * does not hold readiness. A newer generation before they settle waits again, with its own.
   */
  #warmWhenClaimed(partitions: readonly number[]): void {
    const { ownership } = this.parts;
    const generation = ownership.generation;
    void Promise.allSettled(partitions.map((partition) => ownership.claim(this.topic, partition))).then(() => {
      if (ownership.generation !== generation || this.#warm) return;
      this.#warm = true;
      this.#o.log.info({ topic: this.topic, partitions: partitions.length, msSinceStart: Date.now() - this.#startedAt }, 'ready: first partitions claimed');
    });
  }
}
