import type { CommandConsumer, FetchedBatch } from '../../src/kafka/ports.ts';
import type { Prng } from './prng.ts';

/** What the consumer fetches: the partition's command records, and the group's committed offset. */
export interface ConsumerWorld {
  readonly topic: string;
  /** Partitions of the topic. */
  readonly partitions: number;
  readonly records: readonly { readonly partition: number; readonly offset: number; readonly key: string; readonly value: Buffer }[];
  groupOffset(partition: number): bigint;
  readonly prng: Prng;
  /** The process died: nothing of it runs any more. */
  dead(): boolean;
  /** Cut off from the group: its heartbeats fail. */
  cutOff(): boolean;
  /** kafkajs sends a JoinGroup (the worker's assigner counts it: GroupMembership.joining). */
  joinGroupSent(): void;
  /** The batch handler threw (kafkajs rejoins on a rebalance error, restarts the consumer on others). */
  handlerFailed(error: unknown): void;
  /**
   * The group's session timeout. A member in the group that the world does not keep from heartbeating
   * (not cut off, not rebalancing, alive) confirms a heartbeat at least once a session: the world's
   * coordinator drops a member only when the schedule says, so a longer silence, which a real one
   * would end by dropping the member, is reported here (`silent`) instead.
   */
  readonly sessionMs: number;
  silent(silenceMs: number): void;
}

type Listeners = {
  join: ((event: { memberId: string; memberAssignment: Readonly<Record<string, readonly number[]>> }) => void)[];
  heartbeat: (() => void)[];
  rebalancing: (() => void)[];
  stop: (() => void)[];
  crash: ((event: { error: Error; restart: boolean }) => void)[];
  crashing: (() => void)[];
  rejoinRetrying: (() => void)[];
};

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** kafkajs's heartbeat answer while the group rebalances: the batch handler lets it propagate, and the member rejoins. */
export class RebalanceInProgress extends Error {}

/**
 * The worker’s consumer port over the simulated partitions, as kafkajs behaves for it: a member of
 * the group that the simulation's coordinator drives (notice a rebalance, join with an assignment,
 * crash and restart as a new member); between, it fetches in rounds, as kafkajs does (#fetching).
 */
export class SimulatedConsumer implements CommandConsumer {
  readonly #world: ConsumerWorld;
  readonly #listeners: Listeners = { join: [], heartbeat: [], rebalancing: [], stop: [], crash: [], crashing: [], rejoinRetrying: [] };
  #eachBatch: ((batch: FetchedBatch) => Promise<void>) | undefined;
  #running = false;
  /** Bumped when the consumer crashes and restarts: a batch of an earlier run is not running any more. */
  #runs = 0;
  #members = 0;
  #memberId = '';
  #assigned: readonly number[] = [];
  /** The group rebalances and this member has noticed: heartbeats fail, nothing is fetched, until its join. */
  #rebalancing = false;
  #pausedTopic = false;
  readonly #paused = new Set<number>();
  /** Where each partition's next fetch starts (none: the group's committed offset). */
  readonly #positions = new Map<number, bigint>();
  /** Bumped by every join (all partitions) and seek (one): a batch fetched before is stale. */
  #joins = 0;
  readonly #seeks = new Map<number, number>();
  readonly #heartbeatMs: number;
  /** When the last heartbeat went out (one goes only when this is heartbeatMs old). */
  #lastHeartbeat = Number.NEGATIVE_INFINITY;
  /** When the group last heard from this member (its join, a confirmed heartbeat); undefined while the world keeps it from heartbeating. */
  #heardAt: number | undefined;
  /** The fetch loop waits for a round's batch handlers. */
  #inRound = false;
  readonly #name: string;

  constructor(world: ConsumerWorld, heartbeatMs: number, name: string) {
    this.#world = world;
    this.#heartbeatMs = heartbeatMs;
    this.#name = name;
  }

  get memberId(): string {
    return this.#memberId;
  }

  onGroupJoin(listener: Listeners['join'][number]): void {
    this.#listeners.join.push(listener);
  }
  onHeartbeat(listener: () => void): void {
    this.#listeners.heartbeat.push(listener);
  }
  onRebalancing(listener: () => void): void {
    this.#listeners.rebalancing.push(listener);
  }
  onStop(listener: () => void): void {
    this.#listeners.stop.push(listener);
  }
  onCrash(listener: Listeners['crash'][number]): void {
    this.#listeners.crash.push(listener);
  }
  onCrashing(listener: () => void): void {
    this.#listeners.crashing.push(listener);
  }
  onRejoinRetrying(listener: () => void): void {
    this.#listeners.rejoinRetrying.push(listener);
  }

  async connect(): Promise<void> {}
  async subscribe(): Promise<void> {}

  async run(options: { partitionsConsumedConcurrently: number; eachBatch: (batch: FetchedBatch) => Promise<void> }): Promise<void> {
    this.#eachBatch = options.eachBatch;
    this.#running = true;
    void this.#fetching();
  }

  pause(_topic: string, partitions?: readonly number[]): void {
    if (partitions === undefined) this.#pausedTopic = true;
    else for (const p of partitions) this.#paused.add(p);
  }

  resume(_topic: string, partitions?: readonly number[]): void {
    if (partitions === undefined) this.#pausedTopic = false;
    else for (const p of partitions) this.#paused.delete(p);
  }

  seek(_topic: string, partition: number, offset: bigint): void {
    this.#positions.set(partition, offset);
    this.#seeks.set(partition, (this.#seeks.get(partition) ?? 0) + 1);
  }

  async disconnect(): Promise<void> {
    this.#stop();
  }

  /** The coordinator tells this member the group rebalances (kafkajs's REBALANCING, from a heartbeat). */
  noticeRebalance(): void {
    if (!this.#running || this.#world.dead() || this.#rebalancing) return;
    this.#silenceEnds();
    this.#rebalancing = true;
    for (const l of this.#listeners.rebalancing) l();
  }

  /** A JoinGroup of this member that missed its generation and is tried again in place (kafkajs's rejoin retry). */
  joinRetried(): void {
    if (!this.#running || this.#world.dead()) return;
    this.#silenceEnds();
    this.#rebalancing = true;
    this.#world.joinGroupSent();
    for (const l of this.#listeners.rejoinRetrying) l();
  }

  /**
   * This member's join of a new generation with `partitions`: one JoinGroup under its member id
   * (a member the group had dropped gets a new one: kafkajs's UNKNOWN_MEMBER_ID and its second join).
   */
  join(partitions: readonly number[], dropped = false): void {
    if (!this.#running || this.#world.dead()) return;
    if (dropped || this.#memberId === '') {
      this.#memberId = `${this.#name}-m${++this.#members}`;
      if (dropped) this.#world.joinGroupSent();
    }
    this.#world.joinGroupSent();
    this.#rebalancing = false;
    // kafkajs joins only between rounds; this world's coordinator may complete a join while a
    // round of the generation before still runs: the member is heard from once that round is over.
    this.#heardAt = this.#inRound ? undefined : Date.now();
    this.#assigned = [...partitions];
    this.#positions.clear();
    this.#joins += 1;
    for (const l of this.#listeners.join) l({ memberId: this.#memberId, memberAssignment: { [this.#world.topic]: partitions } });
  }

  /** The consumer crashes and kafkajs restarts it in place: it leaves the group, and joins again (join) as a new member. */
  crashAndRestart(error: Error): void {
    this.#silenceEnds();
    for (const l of this.#listeners.crashing) l();
    // Batches handed out before the crash belong to the consumer that crashed: not running, stale.
    this.#runs += 1;
    this.#joins += 1;
    // kafkajs restarts it as a new consumer: nothing of the old one is paused.
    this.#paused.clear();
    this.#pausedTopic = false;
    this.#assigned = [];
    this.#memberId = '';
    this.#rebalancing = true;
    for (const l of this.#listeners.stop) l();
    for (const l of this.#listeners.crash) l({ error, restart: true });
  }

  #stop(): void {
    if (!this.#running) return;
    this.#silenceEnds();
    this.#running = false;
    for (const l of this.#listeners.stop) l();
  }

  /**
   * The member's heartbeat, if one is due (kafkajs sends them between fetches, and from a batch
   * handler that asks): confirmed by the group (HEARTBEAT) unless the coordinator cannot be reached
   * (the worker's adapter swallows that failure) or the group rebalances (thrown: the member
   * rejoins).
   */
  async #heartbeat(): Promise<void> {
    if (this.#world.dead()) await new Promise<never>(() => undefined);
    if (Date.now() - this.#lastHeartbeat < this.#heartbeatMs) return;
    this.#lastHeartbeat = Date.now();
    if (this.#world.cutOff() || this.#memberId === '') return this.#silenceEnds();
    if (this.#rebalancing) throw new RebalanceInProgress('The group is rebalancing, so a rejoin is needed');
    this.#silenceEnds();
    this.#heardAt = Date.now();
    for (const l of this.#listeners.heartbeat) l();
  }

  /**
   * The member's silence up to now ends (a heartbeat, or the world keeping it from heartbeating
   * from here): reported if it outlasted the session while nothing but the member kept it silent.
   */
  #silenceEnds(): void {
    if (this.#heardAt !== undefined && !this.#world.dead() && Date.now() - this.#heardAt > this.#world.sessionMs)
      this.#world.silent(Date.now() - this.#heardAt);
    this.#heardAt = undefined;
  }

  /** Where a batch of `partition` fetched now stands: stale once a join or a seek of it came after. */
  #epochOf(partition: number): string {
    return `${this.#joins}/${this.#seeks.get(partition) ?? 0}`;
  }

  /**
   * kafkajs's fetch loop: each round fetches every assigned, unpaused partition with records past
   * where it stands, hands each batch to the handler and waits for all of them; between rounds it
   * heartbeats if one is due. A handler that waits holds the member's whole fetching, and its
   * heartbeats unless it sends them itself (FetchedBatch.heartbeat).
   */
  async #fetching(): Promise<void> {
    const { topic, prng } = this.#world;
    const byPartition = Array.from({ length: this.#world.partitions }, (_, p) => this.#world.records.filter((r) => r.partition === p));
    while (this.#running && !this.#world.dead()) {
      const round: Promise<void>[] = [];
      for (const [partition, records] of byPartition.entries()) {
        const from = this.#positions.get(partition) ?? this.#world.groupOffset(partition);
        if (this.#rebalancing || !this.#assigned.includes(partition) || this.#pausedTopic || this.#paused.has(partition) || from >= BigInt(records.length))
          continue;
        const epoch = this.#epochOf(partition);
        const run = this.#runs;
        const batch = records.slice(Number(from), Number(from) + prng.int(1, 8));
        let resolved = from - 1n;
        const handled = (
          this.#eachBatch?.({
            topic,
            partition,
            highWatermark: String(records.length),
            messages: batch.map((r) => ({ offset: String(r.offset), key: Buffer.from(r.key), value: r.value, timestamp: String(Date.now()) })),
            resolveOffset: (offset) => void (resolved = BigInt(offset) > resolved ? BigInt(offset) : resolved),
            isRunning: () => this.#running && run === this.#runs && !this.#world.dead(),
            isStale: () => epoch !== this.#epochOf(partition),
            heartbeat: () => this.#heartbeat(),
          }) ?? Promise.resolve()
        )
          // kafkajs: a rebalance error out of the handler makes the member rejoin (the coordinator
          // drives joins here); the batch stays unresolved. The world judges any other.
          .catch((error: unknown) => this.#world.handlerFailed(error))
          // The next fetch starts after the last resolved offset, unless a join or seek moved it.
          .then(() => {
            if (epoch === this.#epochOf(partition)) this.#positions.set(partition, resolved + 1n);
          });
        round.push(handled);
      }
      // No fetch before a join; a fetch with nothing for it (paused, or no records past where it
      // stands) waits its wait time (groupTiming: the heartbeat interval).
      if (round.length > 0) {
        this.#inRound = true;
        await Promise.all(round);
        this.#inRound = false;
      } else await sleep(this.#rebalancing || this.#assigned.length === 0 ? 2 : this.#heartbeatMs);
      await this.#heartbeat().catch(() => undefined);
      await sleep(prng.int(0, 2));
    }
  }
}
