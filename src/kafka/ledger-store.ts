import type { Admin } from 'kafkajs';
import { decodeCheckpoint, type Checkpoint } from '../worker/ledger-checkpoint.ts';
import type { PartitionReader } from './partition-reader.ts';

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
  // To the true end (not the admin's read_committed end): forEach() then waits until every
  // transaction below it is decided, so the newest checkpoint cannot be missed.
  const high = await reader.highWatermark(topic, partition, low);
  let window = FIRST_WINDOW;
  let to = high;
  while (to > low) {
    const from = to - window > low ? to - window : low;
    // Only the newest readable checkpoint matters: keep that one, not the window's records.
    let checkpoint: Checkpoint | undefined;
    await reader.forEach(topic, partition, from, to, (record) => {
      checkpoint = decodeCheckpoint(record.key, record.value, key) ?? checkpoint;
    });
    if (checkpoint !== undefined) return checkpoint;
    to = from;
    window *= 16n;
  }
  return undefined;
}
