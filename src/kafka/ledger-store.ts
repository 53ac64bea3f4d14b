import { SmsWorkerError } from '../errors.ts';
import type { PartitionReader } from './partition-reader.ts';
import type { OffsetsAdmin } from './ports.ts';

type Admin = Pick<OffsetsAdmin, 'fetchTopicOffsets'>;

/** How far back the first look goes; each further look goes 16 times further. */
const FIRST_WINDOW = 64n;

/**
 * How far a ledger read goes:
 * - `end`: to the high watermark, `read_committed`, waiting for transactions whose markers are not
 *   written yet. Used after this owner's producer fenced the previous one, so no transaction of a
 *   previous owner can still commit: the end read here is final.
 * - `stable`: to the last stable offset, without waiting. Used before fencing, to see whether an
 *   earlier owner has sends under way: a killed owner's open transaction stays open until the
 *   transaction timeout (a minute), and waiting for it would stall the claim (and the batch, and
 *   the heartbeats behind it) that long. The authoritative read comes after fencing.
 * - `settled`: to the high watermark if the transactions open there end within `settleMs`, else to
 *   the last stable offset. Used before fencing while an earlier owner may be alive: its open
 *   transaction may be about to commit marks, which a `stable` read misses (the new owner then
 *   fenced it and reported those commands UNKNOWN, never sent: measured in the scale bench); a
 *   live owner's transaction ends within milliseconds, a killed owner's costs `settleMs` once.
 */
export type LedgerReadEnd = 'end' | 'stable' | 'settled';

/**
 * Reads ledger partition n (to its end, see `LedgerReadEnd`) and returns its newest checkpoint:
 * the newest record `decode` reads (it returns undefined for any other record; the checkpoint's
 * format is the worker's, see src/worker/lane/ledger-checkpoint.ts). The newest checkpoint is near the
 * end (the partition's own transactions write one each), so this reads backwards in growing
 * windows rather than the whole partition.
 */
/**
 * What a reader that knows no transaction should be open in the partition (a claim right after
 * fencing) does with one that still is `decidedWaitMs` after the read starts (a hanging
 * transaction): `keep` makes the checkpoint to go on from out of the newest committed one (below
 * the hanging transaction) and the checkpoints the hanging transaction carried, read as written
 * (withHangingMarks); `settle` ends the transaction, writing that checkpoint when it carried any.
 */
export interface HangingTransaction<Checkpoint> {
  /**
   * Commits `kept` as the partition's newest checkpoint when there is one, else aborts; either ends
   * a transaction open there (`hanging`) with the same fate (TransactionalProducers.settle).
   */
  readonly settle: (kept: Checkpoint | undefined, hanging: boolean) => Promise<unknown>;
  readonly keep: (committed: Checkpoint | undefined, hanging: readonly Checkpoint[]) => Checkpoint | undefined;
  /**
   * The transactional id that writes the partition (the claim's own, just fenced): with it, a
   * transaction open there is ended as soon as its coordinator says it is done with the id's
   * transactions (PartitionReader.markerOutlook), not after DECIDED_WAIT_MS.
   */
  readonly transactionalId?: string;
}

/** `settleOpen` (with `end`): see HangingTransaction. */
export async function readLatestCheckpoint<Checkpoint>(
  admin: Admin,
  reader: PartitionReader,
  topic: string,
  partition: number,
  decode: (key: Buffer | null, value: Buffer | null) => Checkpoint | undefined,
  upTo: LedgerReadEnd = 'end',
  settleMs = 1_000,
  settleOpen?: HangingTransaction<Checkpoint>,
  decidedWaitMs = DECIDED_WAIT_MS,
): Promise<Checkpoint | undefined> {
  if (upTo === 'end' && settleOpen !== undefined) return readToEnd(admin, reader, topic, partition, decode, 'end', undefined, settleOpen, decidedWaitMs);
  if (upTo === 'settled') {
    try {
      return await readToEnd(admin, reader, topic, partition, decode, 'end', settleMs);
    } catch (error) {
      if (error instanceof SmsWorkerError && error.code === 'KAFKA_READ_TIMEOUT') return readToEnd(admin, reader, topic, partition, decode, 'stable');
      throw error;
    }
  }
  return readToEnd(admin, reader, topic, partition, decode, upTo);
}

/** How long a transaction open in the ledger partition after a fence may take to end before it counts as hanging (readToEnd). */
export const DECIDED_WAIT_MS = 10_000;
/** How often the partition's last stable offset is looked at meanwhile. */
const DECIDED_POLL_MS = 100;

/** How often the transaction's coordinator and the partition's producers are asked meanwhile (two requests). */
const OUTLOOK_EVERY_MS = 500;

/**
 * Whether the partition's last stable offset reaches `high` within `waitMs` (every transaction
 * below it ended): false as soon as `abandoned` says no marker will come for what is open there.
 */
async function stableReaches(
  reader: Pick<PartitionReader, 'ends'>,
  topic: string,
  partition: number,
  high: bigint,
  waitMs: number,
  abandoned: (() => Promise<boolean>) | undefined,
): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  let nextOutlook = Date.now();
  for (;;) {
    const { stable } = await reader.ends(topic, partition, high);
    if (stable >= high) return true;
    if (Date.now() >= deadline) return false;
    if (abandoned !== undefined && Date.now() >= nextOutlook) {
      if (await abandoned()) return false;
      nextOutlook = Date.now() + OUTLOOK_EVERY_MS;
    }
    await new Promise((resolve) => setTimeout(resolve, DECIDED_POLL_MS));
  }
}

async function readToEnd<Checkpoint>(
  admin: Admin,
  reader: PartitionReader,
  topic: string,
  partition: number,
  decode: (key: Buffer | null, value: Buffer | null) => Checkpoint | undefined,
  upTo: 'end' | 'stable',
  deadlineMs?: number,
  settleOpen?: HangingTransaction<Checkpoint>,
  decidedWaitMs = DECIDED_WAIT_MS,
): Promise<Checkpoint | undefined> {
  const offsets = await admin.fetchTopicOffsets(topic);
  const ends = offsets.find((o) => o.partition === partition);
  if (ends === undefined) return undefined;
  const low = BigInt(ends.low);
  // `end`: to the true end (not the admin's read_committed end): forEach() then waits until every
  // transaction below it is decided, so the newest checkpoint cannot be missed. `stable`: the
  // admin's end is the last stable offset, below every open transaction, so nothing waits.
  let high = BigInt(ends.high);
  if (upTo === 'end') {
    // Fetched from the admin's end (the last stable offset then): the answer carries the partition's
    // ends and at most the records of transactions open there, not the first megabyte of the
    // partition that a fetch from its start returned and the client decoded for nothing (the
    // ledger holds every checkpoint of the last minute at least: min.compaction.lag.ms).
    const now = await reader.ends(topic, partition, high).catch((error: unknown) => {
      // Moved under it (a truncation after a leader change): from the start, as before.
      if (error instanceof SmsWorkerError && error.code === 'KAFKA_OFFSET_OUT_OF_RANGE') return reader.ends(topic, partition, low);
      throw error;
    });
    high = now.high;
    // A transaction open where the reader expects none (`settleOpen` given: right after fencing)
    // would hold the read: let the caller end it first, but only one still open after
    // DECIDED_WAIT_MS. A transaction whose commit is decided while its markers are not all written
    // yet (its coordinator restarted: it writes them once it has loaded its log) looks the same
    // for a moment, and ending it here aborted it in the ledger partition while it committed in
    // the result topic: a command's result published, its checkpoint lost, and the next claim
    // reported the command UNKNOWN beside its SENT (test/worker/broker-crash.int.test.ts, the
    // broker SIGKILLed under 150 commands/s: 2 of 8 runs before this wait).
    if (settleOpen !== undefined) return readAfterFence(reader, topic, partition, decode, low, now, settleOpen, decidedWaitMs, deadlineMs);
  }
  return (await newestCheckpoint(reader, topic, partition, decode, low, high, deadlineMs))?.checkpoint;
}

/**
 * The newest checkpoint for a claim right after its fence, with the marks of every transaction
 * whose fate the ledger partition cannot tell kept in doubt (withHangingMarks), written back
 * (`settle`) so they outlive the claim. Kafka 4.3.1 completed transactions in a broker's restart
 * with their marker to this partition lost (docs/operations.md); their records stay open until the
 * producer's next marker there, which gives them its fate. So two kinds are unsure:
 *   - one still open `decidedWaitMs` after the read starts (a hanging transaction): nothing of
 *     this owner can be, and the fence aborted every earlier one its coordinator knew;
 *   - every checkpoint but the last of one aborted transaction (one ABORT marker that ended the
 *     producer's later transaction with them): only the last was that abort's own.
 * The marks of either may have been called; dropped, the next claim sent those commands again
 * (the simulation's lost markers, `npm run simulate -- --lost-markers on`).
 */
async function readAfterFence<Checkpoint>(
  reader: PartitionReader,
  topic: string,
  partition: number,
  decode: (key: Buffer | null, value: Buffer | null) => Checkpoint | undefined,
  low: bigint,
  now: { readonly high: bigint; readonly stable: bigint },
  settleOpen: HangingTransaction<Checkpoint>,
  decidedWaitMs: number,
  deadlineMs: number | undefined,
): Promise<Checkpoint | undefined> {
  // A transaction open where none should be would hold the read: let the caller end it, but only
  // one still open after DECIDED_WAIT_MS. A transaction whose commit is decided while its markers
  // are not all written yet (its coordinator restarted: it writes them once it has loaded its log)
  // looks the same for a moment (test/worker/broker-crash.int.test.ts, the broker SIGKILLed under
  // 150 commands/s: 2 of 8 runs reported a command UNKNOWN beside its SENT before this wait).
  // Its coordinator done with the id's transactions while one stays open here: its marker was lost
  // (or never due), and waiting the rest of DECIDED_WAIT_MS would only keep the partition silent.
  const { transactionalId } = settleOpen;
  const fenced = performance.now();
  const abandoned =
    transactionalId === undefined
      ? undefined
      : async () => (await reader.markerOutlook(topic, partition, transactionalId, { notBefore: fenced })) === 'abandoned';
  const hanging = now.stable < now.high && !(await stableReaches(reader, topic, partition, now.high, decidedWaitMs, abandoned));
  const ends = hanging ? await reader.ends(topic, partition, now.stable) : now;
  // Below the stable offset everything is decided: the newest committed checkpoint is there.
  const decided = hanging ? ends.stable : ends.high;
  const newest = await newestCheckpoint(reader, topic, partition, decode, low, decided, deadlineMs);
  const byAbort = new Map<string, Checkpoint[]>();
  await reader.forEachAborted(topic, partition, newest === undefined ? low : newest.offset + 1n, decided, (record, transaction) => {
    const checkpoint = decode(record.key, record.value);
    if (checkpoint !== undefined) byAbort.set(transaction, [...(byAbort.get(transaction) ?? []), checkpoint]);
  });
  const unsure = [...byAbort.values()].flatMap((checkpoints) => checkpoints.slice(0, -1));
  if (hanging)
    await reader.forEachWritten(topic, partition, ends.stable, ends.high, (record) => {
      const checkpoint = decode(record.key, record.value);
      if (checkpoint !== undefined) unsure.push(checkpoint);
    });
  const committed = newest?.checkpoint;
  if (unsure.length === 0) {
    if (hanging) await settleOpen.settle(undefined, true);
    return committed;
  }
  const kept = settleOpen.keep(committed, unsure);
  await settleOpen.settle(kept, hanging);
  return kept;
}

/** The newest checkpoint a read_committed reader sees below `high`, read backwards in growing windows. */
async function newestCheckpoint<Checkpoint>(
  reader: PartitionReader,
  topic: string,
  partition: number,
  decode: (key: Buffer | null, value: Buffer | null) => Checkpoint | undefined,
  low: bigint,
  high: bigint,
  deadlineMs: number | undefined,
): Promise<{ readonly checkpoint: Checkpoint; readonly offset: bigint } | undefined> {
  let window = FIRST_WINDOW;
  let to = high;
  while (to > low) {
    const from = to - window > low ? to - window : low;
    // Only the newest readable checkpoint matters: keep that one, not the window's records.
    let found: { checkpoint: Checkpoint; offset: bigint } | undefined;
    await reader.forEach(
      topic,
      partition,
      from,
      to,
      (record) => {
        const checkpoint = decode(record.key, record.value);
        if (checkpoint !== undefined) found = { checkpoint, offset: record.offset };
      },
      deadlineMs,
    );
    if (found !== undefined) return found;
    to = from;
    window *= 16n;
  }
  return undefined;
}
