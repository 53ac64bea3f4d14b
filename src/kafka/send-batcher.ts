/**
 * Coalesces concurrent posts into few Kafka sends. The idempotent producer keeps one request in
 * flight (ordering per partition with retries); sending each post on its own would make every post
 * wait for all earlier ones, one broker round trip each. Instead: while a send is in flight, posts
 * queue; the next send takes every queued post (up to `maxRecords`, whole posts only), and each
 * post learns the outcome of the send that carried it.
 *
 * Bounded: at most `maxQueued` records wait; a post beyond that is refused at once (the caller
 * answers 503). A post whose caller stopped waiting (timeout) before its send started is dropped
 * from the queue, so it is never published after its 503.
 */
export interface BatcherOptions<R> {
  /** Sends one batch; resolves when Kafka acknowledged all of it. */
  readonly send: (records: readonly R[]) => Promise<void>;
  /** Records per send, at most (a single larger post is sent alone). */
  readonly maxRecords: number;
  /** Records waiting for a send, at most. */
  readonly maxQueued: number;
}

interface Entry<R> {
  readonly records: readonly R[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  abandoned: boolean;
}

export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
}

export class SendBatcher<R> {
  readonly #options: BatcherOptions<R>;
  readonly #queue: Entry<R>[] = [];
  #queued = 0;
  #sending = false;

  constructor(options: BatcherOptions<R>) {
    this.#options = options;
  }

  /**
   * Queues one post's records; the promise settles with the send that carries them. `signal`
   * (the caller's timeout) withdraws the post if its send has not started yet.
   */
  submit(records: readonly R[], signal?: AbortSignal): Promise<void> {
    if (this.#queued + records.length > this.#options.maxQueued) {
      return Promise.reject(new QueueFullError(`more than ${this.#options.maxQueued} records waiting for a send to Kafka`));
    }
    return new Promise<void>((resolve, reject) => {
      const entry: Entry<R> = { records, resolve, reject, abandoned: false };
      this.#queue.push(entry);
      this.#queued += records.length;
      signal?.addEventListener(
        'abort',
        () => {
          const index = this.#queue.indexOf(entry);
          if (index < 0) return; // already being sent: its outcome stands
          this.#queue.splice(index, 1);
          this.#queued -= records.length;
          entry.abandoned = true;
          reject(signal.reason);
        },
        { once: true },
      );
      this.#pump();
    });
  }

  /** Records waiting (not yet in a send). */
  get queued(): number {
    return this.#queued;
  }

  #pump(): void {
    if (this.#sending || this.#queue.length === 0) return;
    const batch: Entry<R>[] = [];
    let records = 0;
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Entry<R>;
      if (batch.length > 0 && records + next.records.length > this.#options.maxRecords) break;
      this.#queue.shift();
      batch.push(next);
      records += next.records.length;
    }
    this.#queued -= records;
    this.#sending = true;
    this.#options.send(batch.flatMap((e) => e.records)).then(
      () => this.#settle(batch, undefined),
      (error: unknown) => this.#settle(batch, error ?? new Error('send failed')),
    );
  }

  #settle(batch: readonly Entry<R>[], error: unknown): void {
    for (const entry of batch) {
      if (error === undefined) entry.resolve();
      else entry.reject(error);
    }
    this.#sending = false;
    this.#pump();
  }
}
