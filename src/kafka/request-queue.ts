/**
 * kafkajs 2.2.4's per-connection request queue (src/network/requestQueue/index.js) checks its
 * pending requests on a timer, and re-arms that timer every millisecond for as long as the
 * connection lives, once its first response arrived: `scheduleCheckPendingRequests` computes its
 * delay as `throttledUntil - Date.now()`, which is `-1 - Date.now()` when nothing was ever
 * throttled (Node runs a negative delay after 1 ms, with a TimeoutNegativeWarning on Node ≥ 23),
 * and the check it schedules ends by scheduling the next one, pending requests or not (kafkajs
 * issues #1556, #1704; still open upstream). Every connection of every client does this: an idle
 * worker woke about 1,700 times a second and spent 3.8–5.2% of a core, against about 330 wake-ups
 * and 2.0–2.4% with this replacement (`strace -c`, /proc/<pid>/stat, 2026-11-29).
 *
 * The replacement keeps what the timer is for: requests queued behind a broker's throttle (its
 * `throttle_time_ms`) or behind the in-flight limit are checked when the throttle ends, or 10 ms
 * later, as kafkajs does. With nothing queued there is nothing to check: `push` schedules a check
 * whenever it queues a request, and every answered or timed-out request checks the queue itself.
 */

/** kafkajs's own interval (CHECK_PENDING_REQUESTS_INTERVAL) for requests queued while not throttled. */
export const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;

/**
 * When a request queue should next check its pending requests (pure): undefined when none are
 * queued, else when the broker's throttle ends, or after kafkajs's 10 ms when that is past
 * (a throttle of a millisecond or less must still get its check: kafkajs PR #1532).
 */
export function pendingCheckDelay(pendingCount: number, throttledUntil: number, now: number): number | undefined {
  if (pendingCount === 0) return undefined;
  const untilUnthrottled = throttledUntil - now;
  return untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS;
}

/** The little of kafkajs's RequestQueue that the replacement touches. */
interface InternalRequestQueue {
  readonly pending: readonly unknown[];
  readonly throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

let installed = false;

/** Replaces kafkajs's `RequestQueue.prototype.scheduleCheckPendingRequests` (kafkajs.ts installs it before any client exists). */
export function installRequestQueueCheck(require: NodeJS.Require): void {
  if (installed) return;
  replaceScheduleCheck(require('kafkajs/src/network/requestQueue/index.js'));
  installed = true;
}

/**
 * The replacement, on one loaded copy of kafkajs's RequestQueue module (installRequestQueueCheck's,
 * or a second copy a tool loads for itself: tools/hanging-transaction.ts).
 */
export function replaceScheduleCheck(module: unknown): void {
  const queue = module as { prototype: Partial<InternalRequestQueue> };
  if (typeof queue.prototype.scheduleCheckPendingRequests !== 'function' || typeof queue.prototype.checkPendingRequests !== 'function')
    throw new Error("kafkajs: cannot patch the request queue's scheduleCheckPendingRequests");
  queue.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: InternalRequestQueue): void {
    if (this.throttleCheckTimeoutId !== null) return;
    const delay = pendingCheckDelay(this.pending.length, this.throttledUntil, Date.now());
    if (delay === undefined) return;
    this.throttleCheckTimeoutId = setTimeout(() => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    }, delay);
  };
}
