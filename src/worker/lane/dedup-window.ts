/**
 * The commandIds of the last `capacity` commands of one partition that have (or are about to
 * have) a result, so a repeated command record — an upstream producer that retried — is not sent
 * again. Memory is bounded by `capacity` entries (an id plus its offset); the oldest is forgotten
 * first. Capacity 0 turns it off.
 */
export class DedupWindow {
  readonly #capacity: number;
  /** Insertion order is offset order: a Map iterates oldest first. */
  readonly #ids = new Map<string, bigint>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** The offset of the first record with this commandId, if it is in the window. */
  firstOffset(commandId: string): bigint | undefined {
    return this.#ids.get(commandId);
  }

  /** Remembers a commandId (the first record wins: a repeat does not refresh it). */
  remember(commandId: string, offset: bigint): void {
    if (this.#capacity === 0 || this.#ids.has(commandId)) return;
    this.#ids.set(commandId, offset);
    while (this.#ids.size > this.#capacity) {
      const oldest = this.#ids.keys().next();
      if (oldest.done === true) break;
      this.#ids.delete(oldest.value);
    }
  }

  /** Forgets a commandId whose record ended without a result (abandoned): it may come again. */
  forget(commandId: string, offset: bigint): void {
    if (this.#ids.get(commandId) === offset) this.#ids.delete(commandId);
  }

  get size(): number {
    return this.#ids.size;
  }
}
