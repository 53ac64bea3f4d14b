/**
 * Seconds from a command record's Kafka timestamp (epoch ms as a string: when it was published)
 * to `callStartsAt` (epoch ms). Undefined when the record has no usable timestamp (absent, not a
 * number, or Kafka's -1 for "none"). A publisher clock ahead of ours gives 0, never a negative
 * time, which would corrupt the histogram's sum.
 */
export function timeToSendSeconds(timestamp: string | undefined, callStartsAt: number): number | undefined {
  if (timestamp === undefined || timestamp.length > 20) return undefined;
  const publishedAt = Number(timestamp);
  if (!Number.isFinite(publishedAt) || publishedAt <= 0) return undefined;
  return Math.max(0, callStartsAt - publishedAt) / 1000;
}

/** A `callStarting` hook that calls `onFirst` for the first call only: time to send ends there. */
export function firstCallOnly(onFirst: () => void): () => void {
  let started = false;
  return () => {
    if (started) return;
    started = true;
    onFirst();
  };
}
