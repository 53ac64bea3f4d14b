import { encodeCheckpoint, type Checkpoint } from './ledger-checkpoint.ts';

/**
 * What this process went on from after ending a hanging transaction in a ledger partition
 * (reconcileHanging), kept until a newer checkpoint is committed there. The transaction is aborted
 * once ended, so a later read of the partition finds the committed checkpoint alone: a claim of
 * this process that reads it again before anything was committed (the first one ended: a
 * regressed ledger, a rebalance) goes on from the same place. Without it, a fresh claim sent again
 * a command whose mark only the ended transaction held (test/worker/broker-crash.int.test.ts, a
 * graceful broker restart at 150 commands/s). Pure; one entry per partition at most.
 */
export class SettledHanging {
  readonly #byPartition = new Map<number, { readonly committed: Buffer | undefined; readonly goOn: Checkpoint }>();

  /** The claim that ended a hanging transaction goes on from `goOn`, read beside `committed`. */
  remember(partition: number, committed: Checkpoint | undefined, goOn: Checkpoint): void {
    this.#byPartition.set(partition, { committed: committed === undefined ? undefined : encodeCheckpoint(committed), goOn });
  }

  /** What to go on from, given a read of the partition's newest committed checkpoint. */
  goOnFrom(partition: number, read: Checkpoint | undefined): Checkpoint | undefined {
    const earlier = this.#byPartition.get(partition);
    if (earlier === undefined || read === earlier.goOn) return read;
    const readBytes = read === undefined ? undefined : encodeCheckpoint(read);
    const unchanged = readBytes === undefined ? earlier.committed === undefined : earlier.committed?.equals(readBytes) === true;
    if (unchanged) return earlier.goOn;
    // A newer checkpoint was committed (the claim that went on wrote its marks into it).
    this.#byPartition.delete(partition);
    return read;
  }
}
