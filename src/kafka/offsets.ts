import type { OffsetsAdmin } from './ports.ts';

/** The group's committed offset of one partition (0 when none). */
export async function groupOffset(admin: OffsetsAdmin, group: string, topic: string, partition: number): Promise<bigint> {
  const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  const committed = offsets[0]?.partitions.find((p) => p.partition === partition)?.offset ?? '-1';
  return committed === '-1' ? 0n : BigInt(committed);
}
