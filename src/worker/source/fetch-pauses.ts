/**
 * Which command partitions the consumer fetches. Several things stop a partition being fetched,
 * and they overlap: the service gate (funds, breaker, throttling, a refusing service: every
 * partition), shutdown (every partition), a partition lost to fencing (until the next generation or its reclaim),
 * and a lane at its run-ahead bound or short of bytes in hand (until its commits catch up, or
 * bytes are freed). A partition is fetched only while none of them holds it.
 *
 * kafkajs keeps one pause state per topic, and pausing single partitions clears a topic-wide pause,
 * so every pause and resume here names its partitions explicitly, from one computed plan.
 */

/** What to tell the consumer: the partitions to pause and those to resume. */
export interface PausePlan {
  readonly pause: number[];
  readonly resume: number[];
}

/** Pure: the change from what is paused now to what should be. */
export function pausePlan(assigned: readonly number[], gateClosed: boolean, held: ReadonlySet<number>, paused: ReadonlySet<number>): PausePlan {
  const wanted = new Set(assigned.filter((p) => gateClosed || held.has(p)));
  return {
    pause: [...wanted].filter((p) => !paused.has(p)).sort((a, b) => a - b),
    resume: [...paused].filter((p) => !wanted.has(p)).sort((a, b) => a - b),
  };
}

export interface PausableConsumer {
  pause(topic: string, partitions: readonly number[]): void;
  resume(topic: string, partitions: readonly number[]): void;
}

export class FetchPauses {
  readonly #consumer: PausableConsumer;
  readonly #topic: string;
  #assigned: number[] = [];
  #gateClosed = false;
  #stopped = false;
  /** Who holds each partition (a lane, or `lost`); a holder releases only its own hold. */
  readonly #holders = new Map<number, Set<unknown>>();
  readonly #paused = new Set<number>();
  /** The consumer's group is gone (crashed or stopped; kafkajs then refuses pause and resume): until the next assignment. */
  #consumerDown = false;

  constructor(consumer: PausableConsumer, topic: string) {
    this.#consumer = consumer;
    this.#topic = topic;
  }

  /** A new group generation: its assignment, and no holds (lanes and losses belong to a generation). */
  assign(partitions: readonly number[]): void {
    // A consumer restarted in place joins with a fresh group, nothing of it paused (consumerStopped emptied #paused).
    this.#consumerDown = false;
    this.#assigned = [...partitions];
    this.#holders.clear();
    this.#apply();
  }

  /**
   * The consumer stopped (a crash, restarting or not, or the shutdown): kafkajs dropped its group
   * with every pause, and refuses pause and resume until it has a new one. Holds and the gate are
   * kept as they come; the next assignment applies them afresh.
   */
  consumerStopped(): void {
    this.#consumerDown = true;
    this.#paused.clear();
  }

  /** Shutdown: nothing is fetched any more. */
  stopFetching(): void {
    this.#stopped = true;
    this.#apply();
  }

  /** The service gate closed (nothing is fetched) or opened. */
  setGateClosed(closed: boolean): void {
    this.#gateClosed = closed;
    this.#apply();
  }

  hold(partition: number, holder: unknown): void {
    let holders = this.#holders.get(partition);
    if (holders === undefined) this.#holders.set(partition, (holders = new Set()));
    holders.add(holder);
    this.#apply();
  }

  release(partition: number, holder: unknown): void {
    const holders = this.#holders.get(partition);
    if (holders?.delete(holder) !== true) return;
    if (holders.size === 0) this.#holders.delete(partition);
    this.#apply();
  }

  #apply(): void {
    if (this.#consumerDown) return;
    const plan = pausePlan(this.#assigned, this.#gateClosed || this.#stopped, new Set(this.#holders.keys()), this.#paused);
    if (plan.pause.length > 0) {
      this.#consumer.pause(this.#topic, plan.pause);
      for (const p of plan.pause) this.#paused.add(p);
    }
    if (plan.resume.length > 0) {
      this.#consumer.resume(this.#topic, plan.resume);
      for (const p of plan.resume) this.#paused.delete(p);
    }
  }
}

/** The hold a partition lost to fencing keeps on its fetching, until the next generation or its reclaim. */
const LOST = Symbol('lost to fencing');

/**
 * Ownership's effects on the fetching of partitions lost to fencing (OwnershipEffects' pauseLost,
 * reclaimLost, resumeAll): a lost partition is held until it is reclaimed (fetched again from where
 * its last claim had committed) or a new generation begins.
 */
export function lostPartitionFetching(
  pauses: FetchPauses,
  consumer: { seek(topic: string, partition: number, offset: bigint): void },
): {
  pauseLost(topic: string, partition: number): void;
  reclaimLost(topic: string, partition: number, offset: bigint): void;
  resumeAll(topic: string, partitions: readonly number[]): void;
} {
  return {
    pauseLost: (_topic, partition) => pauses.hold(partition, LOST),
    reclaimLost: (topic, partition, offset) => {
      pauses.release(partition, LOST);
      consumer.seek(topic, partition, offset);
    },
    resumeAll: (_topic, partitions) => {
      for (const partition of partitions) pauses.release(partition, LOST);
    },
  };
}
