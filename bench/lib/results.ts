/**
 * Watches an output topic with a `read_committed` consumer that never commits: when each result
 * became visible (i.e. its transaction, if any, was committed), how many results each key has.
 * Results are keyed by commandId (the worker does this; the bench pipelines do the same).
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, Kafka } from 'kafkajs';
import { eventually, PollTimeout } from '../../tools/poll.ts';

export interface Arrival {
  readonly key: string;
  /** Date.now() when the watcher received the batch holding the record. */
  readonly visibleAt: number;
  /** The record's own timestamp (producer CreateTime). */
  readonly timestamp: number;
  readonly value: Buffer | null;
  /** Where the record sits (the chaos run reads per-key publish order from it). */
  readonly partition: number;
  readonly offset: string;
}

export class ResultWatcher {
  readonly perKey = new Map<string, number>();
  readonly arrivals: Arrival[] = [];
  readonly #kafka: Kafka;
  readonly #topic: string;
  readonly #keepValues: boolean;
  #consumer: Consumer;
  #joined: Promise<void>;
  /** Next offset to take per partition: a restarted consumer reads from the beginning again. */
  readonly #next = new Map<number, bigint>();
  #stopped = false;
  /** Times the consumer crashed for good (e.g. no group coordinator while the broker restarts) and was replaced. */
  restarts = 0;

  constructor(kafka: Kafka, topic: string, options: { keepValues?: boolean } = {}) {
    this.#kafka = kafka;
    this.#topic = topic;
    this.#keepValues = options.keepValues ?? false;
    [this.#consumer, this.#joined] = this.#create();
  }

  #create(): [Consumer, Promise<void>] {
    const consumer = this.#kafka.consumer({ groupId: `bench-watch-${randomUUID()}`, readUncommitted: false, maxWaitTimeInMs: 50, sessionTimeout: 30_000 });
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, () => resolve());
    });
    // kafkajs does not restart a consumer after a non-retriable error (it gives up finding the
    // group coordinator while a broker restarts): without this the watcher would go deaf for good.
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart || this.#stopped || consumer !== this.#consumer) return;
      this.restarts += 1;
      void this.#replace();
    });
    return [consumer, joined];
  }

  async #replace(): Promise<void> {
    await this.#consumer.disconnect().catch(() => undefined);
    for (let attempt = 1; !this.#stopped; attempt += 1) {
      [this.#consumer, this.#joined] = this.#create();
      try {
        await this.#run();
        return;
      } catch {
        await this.#consumer.disconnect().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 500 * attempt)));
      }
    }
  }

  /** Resolves once the watcher has joined its group (so visibility times are not inflated by its start). */
  async start(): Promise<void> {
    await this.#run();
    await this.#joined;
  }

  async #run(): Promise<void> {
    await this.#consumer.connect();
    await this.#consumer.subscribe({ topic: this.#topic, fromBeginning: true });
    await this.#consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const visibleAt = Date.now();
        for (const message of batch.messages) {
          const offset = BigInt(message.offset);
          if (offset < (this.#next.get(batch.partition) ?? 0n)) continue;
          this.#next.set(batch.partition, offset + 1n);
          const key = message.key?.toString('utf8') ?? '';
          this.perKey.set(key, (this.perKey.get(key) ?? 0) + 1);
          this.arrivals.push({
            key,
            visibleAt,
            timestamp: Number(message.timestamp),
            value: this.#keepValues ? message.value : null,
            partition: batch.partition,
            offset: message.offset,
          });
        }
      },
    });
  }

  get distinct(): number {
    return this.perKey.size;
  }

  /** Polls until `done()` holds; false when the deadline passes first. */
  async waitUntil(done: () => boolean, timeoutMs: number, onTick?: () => void): Promise<boolean> {
    try {
      return await eventually(done, timeoutMs, 'results', { interval: { initialMs: 100, maxMs: 100, jitter: 0 }, ...(onTick !== undefined && { onTick }) });
    } catch (error) {
      if (error instanceof PollTimeout) return false;
      throw error;
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#consumer.disconnect().catch(() => undefined);
  }
}

/**
 * Reads a whole topic from the beginning with a fresh `read_committed` consumer and returns once
 * no record has arrived for `idleMs` (after at least one fetch round): the authoritative count
 * at the end of a chaos run, independent of any consumer that lived through the faults.
 */
export async function readWholeTopic(kafka: Kafka, topic: string, idleMs = 4_000): Promise<Arrival[]> {
  const watcher = new ResultWatcher(kafka, topic, { keepValues: true });
  await watcher.start();
  let last = watcher.arrivals.length;
  let lastChange = Date.now();
  await watcher.waitUntil(() => {
    if (watcher.arrivals.length !== last) {
      last = watcher.arrivals.length;
      lastChange = Date.now();
    }
    return Date.now() - lastChange >= idleMs;
  }, 600_000);
  await watcher.stop();
  return watcher.arrivals;
}
