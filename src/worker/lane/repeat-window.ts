/**
 * The repeat window of a claim: the commandIds of the committed command records just before the
 * claim's start, `[max(low, start − count), start)`, so a record that repeats one of them (an
 * upstream producer that retried) is not sent again.
 *
 * Command records never change once committed, so most of the window can be read before the start
 * is known: while the claim waits for the earlier owner's calls and fences (an *early* read, up to
 * the group offset as it stood then). Once the claim has read its start, only the records between
 * the two are read, and the window is exactly what a read at the start would have given. Reading
 * the whole window (up to `DEDUP_WINDOW` records, decoded) after the fence was measured at up to
 * a few hundred milliseconds of a moved partition's claim, every command of it waiting.
 */

export interface WindowRecord {
  readonly offset: bigint;
  readonly commandId: string;
}

/** A read of the window made before the claim's start was known: the records before `upTo`. */
export interface EarlyWindow {
  readonly upTo: bigint;
  /** In offset order, as `recentCommandIds` returns them: those of `[max(low, upTo − count), upTo)`. */
  readonly records: readonly WindowRecord[];
}

/** What is left once the start is known: keep these early records, and read `readCount` more up to the start. */
export interface WindowCompletion {
  readonly keep: readonly WindowRecord[];
  /** Read `[max(low, start − readCount), start)`: the records committed since the early read (0: none). */
  readonly readCount: number;
}

/**
 * How to complete an early read into the window before `start`, or undefined when it cannot help
 * and the window is read whole: the start is before the early read's end (the group offset went
 * back: an operator reset it), or at least `count` records past it (nothing read early is in the
 * window).
 */
export function completeWindow(early: EarlyWindow | undefined, start: bigint, count: number): WindowCompletion | undefined {
  if (early === undefined || count <= 0 || start < early.upTo) return undefined;
  const since = start - early.upTo;
  if (since >= BigInt(count)) return undefined;
  const from = start - BigInt(count);
  return { keep: early.records.filter((record) => record.offset >= from), readCount: Number(since) };
}
