/**
 * Virtual time: a priority queue of events (time, then the order they were scheduled in). An event
 * may belong to an owner (a process): it is dropped when that process crashed since, and held back
 * while the process is frozen (then run, in order, after it resumes).
 */
export interface Owner {
  readonly alive: boolean;
  readonly incarnation: number;
  readonly frozen: boolean;
  readonly deferred: SimEvent[];
}

export interface SimEvent {
  time: number;
  seq: number;
  readonly owner: Owner | undefined;
  readonly incarnation: number;
  readonly fn: () => void;
}

export class Scheduler {
  now = 0;
  /** Events run so far. */
  ran = 0;
  readonly #heap: SimEvent[] = [];
  #seq = 0;

  get size(): number {
    return this.#heap.length;
  }

  /**
   * Runs `fn` `delay` ms from now (for `owner`, if given: dropped if it crashed since its
   * `incarnation` — by default the current one — and held while it is frozen).
   */
  at(delay: number, owner: Owner | undefined, fn: () => void, incarnation = owner === undefined ? 0 : owner.incarnation): void {
    this.#push({ time: this.now + delay, seq: this.#seq++, owner, incarnation, fn });
  }

  /** Puts an owner's held-back events back, each `jitter()` ms from now, in their order. */
  release(owner: Owner, jitter: () => number): void {
    const held = owner.deferred.splice(0);
    let time = this.now;
    for (const event of held) {
      time = Math.max(time, this.now + jitter());
      event.time = time;
      event.seq = this.#seq++;
      this.#push(event);
    }
  }

  /** Runs the next event; false when there is none. */
  step(): boolean {
    for (;;) {
      const event = this.#pop();
      if (event === undefined) return false;
      const { owner } = event;
      if (owner !== undefined) {
        if (!owner.alive || owner.incarnation !== event.incarnation) continue;
        if (owner.frozen) {
          owner.deferred.push(event);
          continue;
        }
      }
      if (event.time > this.now) this.now = event.time;
      this.ran += 1;
      event.fn();
      return true;
    }
  }

  #push(event: SimEvent): void {
    const heap = this.#heap;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as SimEvent;
      if (!before(event, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = event;
  }

  #pop(): SimEvent | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const child = r < n && before(heap[r] as SimEvent, heap[l] as SimEvent) ? r : l;
      const c = heap[child] as SimEvent;
      if (!before(c, last)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
