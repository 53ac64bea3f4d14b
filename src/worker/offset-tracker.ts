/**
 * Tracks which records of one partition are finished, so that only a contiguous prefix is ever
 * committed: the committed offset never passes a record whose result is not in the same or an
 * earlier transaction, whatever order sends complete in.
 */
export class OffsetTracker<T> {
  readonly #done = new Map<string, T>();
  readonly #order: string[] = [];
  #head = 0;

  /** Records are registered in offset order as they are dispatched. */
  register(offset: string): void {
    this.#order.push(offset);
  }

  complete(offset: string, value: T): void {
    this.#done.set(offset, value);
  }

  /** Removes and returns the finished prefix, with the offset to commit (last + 1). */
  takePrefix(): { values: T[]; commitOffset: string } | undefined {
    const values: T[] = [];
    let last: string | undefined;
    while (this.#head < this.#order.length) {
      const offset = this.#order[this.#head];
      if (offset === undefined || !this.#done.has(offset)) break;
      values.push(this.#done.get(offset) as T);
      this.#done.delete(offset);
      last = offset;
      this.#head += 1;
    }
    if (this.#head > 1024) {
      this.#order.splice(0, this.#head);
      this.#head = 0;
    }
    return last === undefined ? undefined : { values, commitOffset: (BigInt(last) + 1n).toString() };
  }

  get pending(): number {
    return this.#order.length - this.#head;
  }
}
