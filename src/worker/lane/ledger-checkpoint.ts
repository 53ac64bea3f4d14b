/**
 * The intent ledger's record (pure: encoding and decoding, no I/O).
 *
 * Every transaction of a command partition writes one record to ledger partition n (same n) with
 * the key `checkpoint/<group>/<topic>`, so compaction keeps only the newest: the state of the partition
 * after that transaction. `next` is the command offset committed in the same transaction (the
 * group's committed offset can be read stale without KIP-447; this one cannot, because it is read
 * `read_committed` after fencing). `open` lists the commands marked "attempting" whose result is
 * not committed yet: the service may have them. A new owner reports those as UNKNOWN instead of
 * sending them again. `done` lists the records past `next` whose results are already committed
 * (published ahead of a slower record before them): a new owner skips them. Both are bounded by
 * MAX_RUN_AHEAD, so the record is too.
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
/** A mark's name (`by`): a claim's owner token and a count. */
export const MAX_MARK_NAME_LENGTH = 64;
/** An account's label at most (src/accounts/accounts.ts: 32 characters). */
const MAX_ACCOUNT_LENGTH = 32;

export interface OpenMark {
  readonly offset: bigint;
  readonly commandId: string;
  /** When the mark was made (epoch ms): the earliest time the command may have been sent. */
  readonly at: number;
  /**
   * Which mark this is (the claim that made it, and its count there): a handover names it
   * (handover-record.ts). Absent in checkpoints of versions before handovers: such a mark is
   * never settled by a handover.
   */
  readonly by?: string;
  /**
   * The account (its label, src/accounts/accounts.ts) the mark's call goes through: a handover or
   * a new owner's UNKNOWN names where the command may have been sent. Absent in checkpoints of
   * versions before several accounts, and when the sender names none.
   */
  readonly account?: string;
  /**
   * A transaction whose fate the ledger partition could not tell (its marker lost) answered this
   * record (withHangingMarks): its result may be in the result topic already, which a new owner
   * looks for before it takes a handover or reports the command UNKNOWN (handover-lookout.ts).
   */
  readonly answered?: true;
  /**
   * Not the mark of a call: a record such a transaction answered without calling it (rejected,
   * expired), kept so that the new owner looks for its result before handling it again (with
   * `answered`). Not found, it is handled as new, never reported UNKNOWN.
   */
  readonly uncalled?: true;
}

/** A record past `next` whose outcome is already committed (published ahead of slower records before it). */
export interface AnsweredRecord {
  readonly offset: bigint;
  readonly commandId: string;
}

export interface Checkpoint {
  readonly next: bigint;
  readonly open: readonly OpenMark[];
  /** Records at or past `next` whose results are committed: a new owner neither sends nor publishes them again. */
  readonly done?: readonly AnsweredRecord[];
}

/**
 * Answered records are written twice: in `done`, and in `open` as marks (at 0). A reader of this
 * version drops them from `open` (done wins); a reader of the previous release ignores `done` and
 * sees marks, so during a rolling update it reports such a command UNKNOWN (a second result)
 * rather than send it again.
 */
export function encodeCheckpoint(checkpoint: Checkpoint): Buffer {
  const done = checkpoint.done ?? [];
  const mark = (m: OpenMark): { o: string; id: string; at: number; by?: string; ac?: string; an?: 1; uc?: 1 } => ({
    o: m.offset.toString(),
    id: m.commandId.slice(0, MAX_ID_LENGTH),
    at: m.at,
    ...(m.by !== undefined && { by: m.by }),
    ...(m.account !== undefined && { ac: m.account }),
    ...(m.answered === true && { an: 1 }),
    ...(m.uncalled === true && { uc: 1 }),
  });
  return Buffer.from(
    JSON.stringify({
      v: VERSION,
      next: checkpoint.next.toString(),
      open: [...checkpoint.open.map(mark), ...done.map((d) => mark({ offset: d.offset, commandId: d.commandId, at: 0 }))],
      ...(done.length > 0 && { done: done.map((d) => ({ o: d.offset.toString(), id: d.commandId.slice(0, MAX_ID_LENGTH) })) }),
    }),
  );
}

/** A Kafka offset as the ledger's records write it: a decimal string, no sign, no leading zero. */
export const OFFSET = /^(0|[1-9]\d{0,18})$/;

/**
 * The fields of a ledger record under `expectedKey` (a JSON object), or undefined for a record of
 * another key, a tombstone or anything else: what every ledger record's decoder reads first.
 */
export function ledgerRecordFields(key: Buffer | null, value: Buffer | null, expectedKey: string): Readonly<Record<string, unknown>> | undefined {
  if (key?.toString('utf8') !== expectedKey || value === null) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    return undefined;
  }
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
}

/** Undefined for anything that is not a checkpoint this version can read (it is then ignored). */
export function decodeCheckpoint(key: Buffer | null, value: Buffer | null, expectedKey: string): Checkpoint | undefined {
  const fields = ledgerRecordFields(key, value, expectedKey);
  if (fields === undefined) return undefined;
  const { v, next, open, done } = fields;
  if (v !== VERSION || typeof next !== 'string' || !OFFSET.test(next) || !Array.isArray(open)) return undefined;
  if (done !== undefined && !Array.isArray(done)) return undefined;
  const answered: AnsweredRecord[] = [];
  for (const entry of (done ?? []) as unknown[]) {
    const { o, id } = (entry ?? {}) as { o?: unknown; id?: unknown };
    if (typeof o !== 'string' || !OFFSET.test(o) || typeof id !== 'string') return undefined;
    answered.push({ offset: BigInt(o), commandId: id });
  }
  const answeredOffsets = new Set(answered.map((a) => a.offset));
  const marks: OpenMark[] = [];
  for (const entry of open as unknown[]) {
    const { o, id, at, by, ac, an, uc } = (entry ?? {}) as { o?: unknown; id?: unknown; at?: unknown; by?: unknown; ac?: unknown; an?: unknown; uc?: unknown };
    if (typeof o !== 'string' || !OFFSET.test(o) || typeof id !== 'string' || typeof at !== 'number' || !Number.isFinite(at)) return undefined;
    if (by !== undefined && (typeof by !== 'string' || by.length > MAX_MARK_NAME_LENGTH)) return undefined;
    // The account only names where the call went: one this version cannot read (a later version's
    // longer name) is left out, never the mark, which keeps the command from being sent again.
    const account = typeof ac === 'string' && ac.length <= MAX_ACCOUNT_LENGTH ? ac : undefined;
    if (!answeredOffsets.has(BigInt(o)))
      marks.push({
        offset: BigInt(o),
        commandId: id,
        at,
        ...(by !== undefined && { by }),
        ...(account !== undefined && { account }),
        ...(an === 1 && { answered: true as const }),
        ...(uc === 1 && { uncalled: true as const }),
      });
  }
  return answered.length > 0 ? { next: BigInt(next), open: marks, done: answered } : { next: BigInt(next), open: marks };
}

/**
 * The checkpoint a claim goes on from when its ledger partition holds checkpoints of transactions
 * whose fate it cannot tell (ledger-store.ts, readAfterFence: one left open, or ended by a later
 * transaction's ABORT marker): the newest committed one, with every mark those carried past it
 * kept in doubt (`hanging` in the order written: of one offset, the latest mark wins). Such a
 * transaction may have been committed by its coordinator with the marker to this partition lost
 * (Kafka 4.3.1 did so in a broker's restart: docs/operations.md), and its marks' commands called; a
 * claim that dropped them sent those commands again. In doubt they get UNKNOWN (or a handover's
 * outcome), never a second call.
 */
export function withHangingMarks(
  committed: Checkpoint | undefined,
  hanging: readonly Checkpoint[],
  options: {
    readonly uncalled?: boolean;
    /** The `at` of an `uncalled` record when no mark tells when they began (epoch ms): where its result search starts. */
    readonly fallbackAt?: number;
  } = {},
): Checkpoint | undefined {
  if (hanging.length === 0) return committed;
  const next = committed?.next ?? 0n;
  const answered = new Set((committed?.done ?? []).map((record) => record.offset));
  const open = new Map<bigint, OpenMark>((committed?.open ?? []).map((mark) => [mark.offset, mark]));
  // In the order written: a later checkpoint's mark of an offset replaces an earlier one's (a later
  // claim settled the earlier mark, by its handover or as in doubt, and marked the record anew).
  const keep = (mark: OpenMark): void => {
    if (mark.offset >= next && !answered.has(mark.offset)) open.set(mark.offset, mark);
  };
  // Marks: a record answered there was called only if it was marked first (a call waits for its
  // mark's commit), and that mark is here too. One answered without a call (rejected, dead letter)
  // is handled again, as never sent (with `uncalled`, once its result is not found, below).
  for (const checkpoint of hanging) for (const mark of checkpoint.open) keep(mark);
  // A record the hanging transactions answered (in `done`, or below their `next`) while its mark
  // stays: its result may have been published with them (their result partitions got their
  // markers), so the new owner looks for it before anything else (`answered`).
  const answeredThere = (offset: bigint): boolean =>
    hanging.some((checkpoint) => offset < checkpoint.next || (checkpoint.done ?? []).some((record) => record.offset === offset));
  for (const [offset, mark] of open) if (answeredThere(offset)) open.set(offset, { ...mark, answered: true });
  // `uncalled`: a record they answered without a mark (rejected, expired) is kept too, so that its
  // result is looked for before it is handled again (a second result otherwise: the shipped-lane
  // simulation with lost markers). Its `at` is the earliest of the marks' (they began by then at
  // the latest), else `fallbackAt`, for the search's start; its name is its own (no handover ever names it).
  if (options.uncalled === true) {
    const marked = [...(committed?.open ?? []), ...hanging.flatMap((checkpoint) => checkpoint.open)].map((mark) => mark.at).filter((at) => at > 0);
    const at = marked.length > 0 ? Math.min(...marked) : (options.fallbackAt ?? 0);
    for (const checkpoint of hanging)
      for (const record of checkpoint.done ?? [])
        // (One without a commandId, a repeat or undecodable, published no result: nothing to look
        // for; handled again, a repeat is a repeat again, an undecodable one has its dead letter again.)
        if (record.offset >= next && record.commandId !== '' && !answered.has(record.offset) && !open.has(record.offset))
          open.set(record.offset, { offset: record.offset, commandId: record.commandId, at, by: `answered.${record.offset}`, answered: true, uncalled: true });
  }
  const marks = [...open.values()].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
  return committed?.done !== undefined ? { next, open: marks, done: committed.done } : { next, open: marks };
}

/**
 * Where a new owner starts and what it must not send again: the later of the group's committed
 * offset and the ledger's, and the marks at or after it (marks below it have committed results).
 */
export function recoveryPlan(
  groupOffset: bigint,
  checkpoint: Checkpoint | undefined,
): { start: bigint; inDoubt: Map<bigint, OpenMark>; answered: Map<bigint, string> } {
  const start = checkpoint !== undefined && checkpoint.next > groupOffset ? checkpoint.next : groupOffset;
  const answered = new Map<bigint, string>();
  for (const record of checkpoint?.done ?? []) if (record.offset >= start) answered.set(record.offset, record.commandId);
  const inDoubt = new Map<bigint, OpenMark>();
  for (const mark of checkpoint?.open ?? []) if (mark.offset >= start && !answered.has(mark.offset)) inDoubt.set(mark.offset, mark);
  return { start, inDoubt, answered };
}
