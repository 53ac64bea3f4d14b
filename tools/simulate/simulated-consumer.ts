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
/** A heartbeat that does not reach the coordinator (the member is cut off). */
export class CoordinatorUnreachable extends Error {}

/**
 * The worker's consumer port over one simulated partition, as kafkajs behaves for it: a member of
 * the group that the simulation's coordinator drives (notice a rebalance, join with an assignment,
 * crash and restart as a new member); between, it fetches each assigned partition's batches of a
 * few records from where it stands (the group's committed offset after a join or a seek, else after the last resolved
 * offset) and hands each to the worker's batch handler, waiting for it; it heartbeats every
 * `heartbeatMs` while it is a member the group hears from.
 */
export class SimulatedConsumer implements CommandConsumer {
  readonly #world: ConsumerWorld;
  readonly #listeners: Listeners = { join: [], heartbeat: [], rebalancing: [], stop: [], crash: [], crashing: [], rejoinRetrying: [] };
  #eachBatch: ((batch: FetchedBatch) => Promise<void>) | undefined;
  #running = false;
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
  readonly #heartbeats: NodeJS.Timeout;
  readonly #name: string;

  constructor(world: ConsumerWorld, heartbeatMs: number, name: string) {
    this.#world = world;
    this.#name = name;
    this.#heartbeats = setInterval(() => {
      if (this.#hearsFromGroup()) for (const l of this.#listeners.heartbeat) l();
    }, heartbeatMs);
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
    // kafkajs fetches the partitions of a batch round concurrently (partitionsConsumedConcurrently).
    for (let partition = 0; partition < this.#world.partitions; partition++) void this.#fetching(partition);
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
    this.#rebalancing = true;
    for (const l of this.#listeners.rebalancing) l();
  }

  /** A JoinGroup of this member that missed its generation and is tried again in place (kafkajs's rejoin retry). */
  joinRetried(): void {
    if (!this.#running || this.#world.dead()) return;
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
    this.#assigned = [...partitions];
    this.#positions.clear();
    this.#joins += 1;
    for (const l of this.#listeners.join) l({ memberId: this.#memberId, memberAssignment: { [this.#world.topic]: partitions } });
  }

  /** The consumer crashes and kafkajs restarts it in place: it leaves the group, and joins again (join) as a new member. */
  crashAndRestart(error: Error): void {
    for (const l of this.#listeners.crashing) l();
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
    this.#running = false;
    clearInterval(this.#heartbeats);
    for (const l of this.#listeners.stop) l();
  }

  /** The member's own heartbeat now (a batch handler's): fails while the group rebalances or the coordinator cannot be reached. */
  async #heartbeat(): Promise<void> {
    if (this.#world.dead()) await new Promise<never>(() => undefined);
    if (this.#world.cutOff()) throw new CoordinatorUnreachable('the coordinator cannot be reached');
    if (this.#rebalancing) throw new RebalanceInProgress('The group is rebalancing, so a rejoin is needed');
    for (const l of this.#listeners.heartbeat) l();
  }

  #hearsFromGroup(): boolean {
    return this.#running && !this.#world.dead() && !this.#world.cutOff() && !this.#rebalancing && this.#memberId !== '';
  }

  /** Where a batch of `partition` fetched now stands: stale once a join or a seek of it came after. */
  #epochOf(partition: number): string {
    return `${this.#joins}/${this.#seeks.get(partition) ?? 0}`;
  }

  async #fetching(partition: number): Promise<void> {
    const { topic, prng } = this.#world;
    const records = this.#world.records.filter((r) => r.partition === partition);
    while (this.#running && !this.#world.dead()) {
      const from = this.#positions.get(partition) ?? this.#world.groupOffset(partition);
      if (this.#rebalancing || !this.#assigned.includes(partition) || this.#pausedTopic || this.#paused.has(partition) || from >= BigInt(records.length)) {
        await sleep(2);
        continue;
      }
      const epoch = this.#epochOf(partition);
      const batch = records.slice(Number(from), Number(from) + prng.int(1, 8));
      let resolved = from - 1n;
      try {
        await this.#eachBatch?.({
          topic,
          partition,
          highWatermark: String(records.length),
          messages: batch.map((r) => ({ offset: String(r.offset), key: Buffer.from(r.key), value: r.value, timestamp: String(Date.now()) })),
          resolveOffset: (offset) => void (resolved = BigInt(offset) > resolved ? BigInt(offset) : resolved),
          isRunning: () => this.#running && !this.#world.dead(),
          isStale: () => epoch !== this.#epochOf(partition),
          heartbeat: () => this.#heartbeat(),
        });
      } catch {
        // kafkajs: a rebalance error out of the handler makes the member rejoin (the coordinator
        // drives joins here); the batch stays unresolved.
      }
      // The next fetch starts after the last resolved offset, unless a join or seek moved it.
      if (epoch === this.#epochOf(partition)) this.#positions.set(partition, resolved + 1n);
      await sleep(prng.int(0, 2));
    }
  }
}
