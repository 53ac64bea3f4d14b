import type { Admin } from 'kafkajs';
import { decodeCheckpoint, type Checkpoint } from '../worker/ledger-checkpoint.ts';
import type { PartitionReader, ReadRecord } from './partition-reader.ts';

/** How far back the first look goes; each further look goes 16 times further. */
const FIRST_WINDOW = 64n;

/**
 * Reads ledger partition n to its end (its high watermark, `read_committed`: waiting for
 * transactions whose markers are not written yet) and returns its newest checkpoint. Called
 * after this owner's producer fenced the previous one, so no transaction of a previous owner can
 * still commit: the end read here is final. The newest checkpoint is near the end (the
 * partition's own transactions write one each), so this reads backwards in growing windows
 * rather than the whole partition.
 */
export async function readLatestCheckpoint(
  admin: Admin,
  reader: PartitionReader,
  topic: string,
  partition: number,
  key: string,
): Promise<Checkpoint | undefined> {
  const offsets = await admin.fetchTopicOffsets(topic);
  const ends = offsets.find((o) => o.partition === partition);
  if (ends === undefined) return undefined;
  const low = BigInt(ends.low);
  // To the true end (not the admin's read_committed end): read() then waits until every
  // transaction below it is decided, so the newest checkpoint cannot be missed.
  const high = await reader.highWatermark(topic, partition, low);
  let window = FIRST_WINDOW;
  let to = high;
  while (to > low) {
    const from = to - window > low ? to - window : low;
    const records = await reader.read(topic, partition, from, to);
    const newest = newestCheckpoint(records, key);
    if (newest !== undefined) return newest;
    to = from;
    window *= 16n;
  }
  return undefined;
}

function newestCheckpoint(records: readonly ReadRecord[], key: string): Checkpoint | undefined {
  for (let i = records.length - 1; i >= 0; i--) {
    const record = records[i];
    const checkpoint = record === undefined ? undefined : decodeCheckpoint(record.key, record.value, key);
    if (checkpoint !== undefined) return checkpoint;
  }
  return undefined;
}
