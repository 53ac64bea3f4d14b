import type { SendHooks } from './guarded-sender.ts';

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

/**
 * Send hooks that call `onFirstCall` once, when the first call to the service for the command
 * starts; everything else is left to `inner` (none: nothing to mark, every call cleared).
 */
export function onFirstCall(inner: SendHooks | undefined, onFirstCall: () => void): SendHooks {
  let started = false;
  return {
    beforeSend: (signal) => (inner === undefined ? Promise.resolve(true) : inner.beforeSend(signal)),
    notSent: () => inner?.notSent(),
    callStarting: () => {
      inner?.callStarting?.();
      if (started) return;
      started = true;
      onFirstCall();
    },
  };
}
