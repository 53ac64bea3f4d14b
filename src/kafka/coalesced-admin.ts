import type { OffsetsAdmin } from './ports.ts';

/**
 * The offsets reads of an admin, each shared by the requests for the same thing made within
 * `windowMs` of the first one: a join hands a member several partitions at once, and each claim's
 * read asked the broker for the same group offsets and ledger ends (every partition's, in one
 * answer) on its own, while the commands of those partitions waited. A request never joins a
 * read already sent: whatever its caller did first (a claim's fence) came before the read, as
 * the partition protocol requires of the read after fencing.
 */
export function coalescedOffsets(admin: OffsetsAdmin, windowMs: number): OffsetsAdmin {
  const topicOffsets = coalesced((topic: string) => admin.fetchTopicOffsets(topic), windowMs);
  const groupOffsets = coalesced((key: string) => {
    const { groupId, topics } = JSON.parse(key) as { groupId: string; topics: string[] };
    return admin.fetchOffsets({ groupId, topics });
  }, windowMs);
  return {
    fetchTopicOffsets: (topic) => topicOffsets(topic),
    fetchOffsets: ({ groupId, topics }) => groupOffsets(JSON.stringify({ groupId, topics })),
  };
}

/** One call per key for the requests within `windowMs` of the first; a request after the call started waits for the next. */
export function coalesced<T>(call: (key: string) => Promise<T>, windowMs: number): (key: string) => Promise<T> {
  const gathering = new Map<string, Promise<T>>();
  return (key) => {
    let shared = gathering.get(key);
    if (shared === undefined) {
      shared = new Promise<void>((resolve) => setTimeout(resolve, windowMs)).then(() => {
        gathering.delete(key);
        return call(key);
      });
      gathering.set(key, shared);
    }
    return shared;
  };
}
