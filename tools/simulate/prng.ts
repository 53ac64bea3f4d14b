/**
 * The simulation's only source of nondeterminism: mulberry32, a small, fast 32-bit PRNG. A schedule
 * draws everything (its world, latencies, faults, the order of events) from one of these, seeded
 * with the schedule's seed, so the seed alone replays it.
 */
export class Prng {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi] (both included). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  /** One of the keys, with the given weights (not necessarily summing to 1). */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    let total = 0;
    let last: K | undefined;
    for (const key in weights) {
      total += weights[key];
      last = key;
    }
    let roll = this.next() * total;
    for (const key in weights) {
      roll -= weights[key];
      if (roll < 0) return key;
    }
    if (last === undefined) throw new Error('weighted pick from no weights');
    return last;
  }
}
