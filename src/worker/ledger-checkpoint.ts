/**
 * The intent ledger's record (pure: encoding and decoding, no I/O).
 *
 * Every transaction of a command partition writes one record to ledger partition n (same n) with
 * the key `checkpoint/<group>/<topic>`, so compaction keeps only the newest: the state of the partition
 * after that transaction. `next` is the command offset committed in the same transaction (the
 * group's committed offset can be read stale without KIP-447; this one cannot, because it is read
 * `read_committed` after fencing). `open` lists the commands marked "attempting" whose result is
 * not committed yet: the service may have them. A new owner reports those as UNKNOWN instead of
 * sending them again. `open` is bounded by MAX_RUN_AHEAD, so the record is too.
 */
/**
 * The key of a partition's checkpoints: per consumer group and command topic, so deployments (or
 * a renamed group) that share a ledger topic never read each other's state.
 */
export function checkpointKey(consumerGroup: string, commandTopic: string): string {
  return `checkpoint/${consumerGroup}/${commandTopic}`;
}
const VERSION = 1;
/** commandIds are informational in the ledger (the offset identifies the record): keep records small. */
const MAX_ID_LENGTH = 256;

export interface OpenMark {
  readonly offset: bigint;
  readonly commandId: string;
  /** When the mark was made (epoch ms): the earliest time the command may have been sent. */
  readonly at: number;
}

export interface Checkpoint {
  readonly next: bigint;
  readonly open: readonly OpenMark[];
}

export function encodeCheckpoint(checkpoint: Checkpoint): Buffer {
  return Buffer.from(
    JSON.stringify({
      v: VERSION,
      next: checkpoint.next.toString(),
      open: checkpoint.open.map((m) => ({ o: m.offset.toString(), id: m.commandId.slice(0, MAX_ID_LENGTH), at: m.at })),
    }),
  );
}

const OFFSET = /^(0|[1-9]\d{0,18})$/;

/** Undefined for anything that is not a checkpoint this version can read (it is then ignored). */
export function decodeCheckpoint(key: Buffer | null, value: Buffer | null, expectedKey: string): Checkpoint | undefined {
  if (key?.toString('utf8') !== expectedKey || value === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { v, next, open } = parsed as { v?: unknown; next?: unknown; open?: unknown };
  if (v !== VERSION || typeof next !== 'string' || !OFFSET.test(next) || !Array.isArray(open)) return undefined;
  const marks: OpenMark[] = [];
  for (const entry of open as unknown[]) {
    const { o, id, at } = (entry ?? {}) as { o?: unknown; id?: unknown; at?: unknown };
    if (typeof o !== 'string' || !OFFSET.test(o) || typeof id !== 'string' || typeof at !== 'number' || !Number.isFinite(at)) return undefined;
    marks.push({ offset: BigInt(o), commandId: id, at });
  }
  return { next: BigInt(next), open: marks };
}

/**
 * Where a new owner starts and what it must not send again: the later of the group's committed
 * offset and the ledger's, and the marks at or after it (marks below it have committed results).
 */
export function recoveryPlan(groupOffset: bigint, checkpoint: Checkpoint | undefined): { start: bigint; inDoubt: Map<bigint, OpenMark> } {
  const start = checkpoint !== undefined && checkpoint.next > groupOffset ? checkpoint.next : groupOffset;
  const inDoubt = new Map<bigint, OpenMark>();
  for (const mark of checkpoint?.open ?? []) if (mark.offset >= start) inDoubt.set(mark.offset, mark);
  return { start, inDoubt };
}

/**
 * How long a new owner should still wait before fencing a partition whose newest checkpoint lists
 * marks an earlier owner made recently: that owner may be alive (a rebalance moved the partition)
 * with those calls under way, and would commit their results in a moment; fencing now would abort
 * them and make them UNKNOWN. A mark older than `graceMs` (the longest a call can take, with
 * retries, plus a commit) cannot be under way any more. Undefined: nothing to wait for.
 */
export function handoverWaitMs(checkpoint: Checkpoint | undefined, now: number, graceMs: number): number | undefined {
  if (checkpoint === undefined) return undefined;
  let newest: number | undefined;
  for (const mark of checkpoint.open) if (newest === undefined || mark.at > newest) newest = mark.at;
  if (newest === undefined) return undefined;
  const wait = newest + graceMs - now;
  return wait > 0 ? wait : undefined;
}

/** Whether a later checkpoint settled the marks an earlier one listed (each committed past, or withdrawn). */
export function marksSettled(earlier: Checkpoint, later: Checkpoint | undefined): boolean {
  if (later === undefined) return false;
  const stillOpen = new Set(later.open.map((m) => m.offset));
  return earlier.open.every((m) => m.offset < later.next || !stillOpen.has(m.offset));
}
