import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { CHECK_PENDING_REQUESTS_INTERVAL_MS, installRequestQueueCheck, pendingCheckDelay } from '../../src/kafka/request-queue.ts';

describe('pendingCheckDelay: when a request queue checks its pending requests', () => {
  it('never while nothing is queued, throttled or not', () => {
    expect(pendingCheckDelay(0, -1, 1_000)).toBeUndefined();
    expect(pendingCheckDelay(0, 5_000, 1_000)).toBeUndefined();
  });

  it('when the broker’s throttle ends, for requests queued behind it', () => {
    expect(pendingCheckDelay(2, 1_250, 1_000)).toBe(250);
    expect(pendingCheckDelay(1, 1_001, 1_000)).toBe(1);
  });

  it('after kafkajs’s 10 ms for requests queued behind the in-flight limit, or a throttle already over (never a negative delay)', () => {
    expect(pendingCheckDelay(1, -1, 1_000)).toBe(CHECK_PENDING_REQUESTS_INTERVAL_MS);
    expect(pendingCheckDelay(1, 1_000, 1_000)).toBe(CHECK_PENDING_REQUESTS_INTERVAL_MS);
  });
});

// kafkajs's own RequestQueue (no broker, no socket: requests are "sent" by a function and answered
// by fulfillRequest), with the replacement that src/kafka/kafkajs.ts installs.
const require = createRequire(import.meta.url);
installRequestQueueCheck(require);
interface Entry {
  readonly correlationId: number;
  readonly apiKey: number;
  readonly apiName: string;
  readonly apiVersion: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}
interface RequestQueue {
  readonly pending: readonly unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: { entry: Entry; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  checkPendingRequests(): void;
  destroy(): void;
}
const RequestQueueClass = require('kafkajs/src/network/requestQueue/index.js') as new (options: object) => RequestQueue;
const quiet = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

const queues: RequestQueue[] = [];
afterEach(() => {
  for (const queue of queues.splice(0)) queue.destroy();
});

function queueOf(maxInFlightRequests: number | null): { queue: RequestQueue; sent: number[]; checks: () => number } {
  const queue = new RequestQueueClass({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'b:9092',
    logger: quiet,
  });
  queues.push(queue);
  const sent: number[] = [];
  let checks = 0;
  const check = queue.checkPendingRequests.bind(queue);
  queue.checkPendingRequests = () => {
    checks += 1;
    check();
  };
  return { queue, sent, checks: () => checks };
}

function push(queue: RequestQueue, sent: number[], correlationId: number): void {
  const entry: Entry = { correlationId, apiKey: 0, apiName: 'Produce', apiVersion: 3, resolve: () => undefined, reject: () => undefined };
  queue.push({ entry, expectResponse: true, sendRequest: () => sent.push(correlationId) });
}

const answer = (queue: RequestQueue, correlationId: number): void => queue.fulfillRequest({ correlationId, payload: Buffer.alloc(0), size: 0 });

describe('kafkajs’s request queue with the replacement check', () => {
  it('an answered request leaves no timer behind: an idle connection does not check its empty queue every millisecond', async () => {
    const { queue, sent, checks } = queueOf(null);
    push(queue, sent, 1);
    answer(queue, 1);
    expect(sent).toEqual([1]);
    // kafkajs 2.2.4 armed a timer here (`-1 - Date.now()` ms, run after 1 ms) that re-armed itself.
    expect(queue.throttleCheckTimeoutId).toBeNull();
    const before = checks();
    await sleep(50);
    expect(checks() - before).toBe(0);
  });

  it('a request queued behind the broker’s throttle is sent once the throttle ends, and nothing is left armed', async () => {
    const { queue, sent } = queueOf(null);
    queue.maybeThrottle(30);
    push(queue, sent, 1);
    expect(sent).toEqual([]);
    expect(queue.throttleCheckTimeoutId).not.toBeNull();
    for (let waited = 0; sent.length === 0 && waited < 2_000; waited += 5) await sleep(5);
    expect(sent).toEqual([1]);
    answer(queue, 1);
    expect(queue.throttleCheckTimeoutId).toBeNull();
  });

  it('a request queued behind the in-flight limit is sent when the one before it is answered', () => {
    const { queue, sent } = queueOf(1);
    push(queue, sent, 1);
    push(queue, sent, 2);
    expect(sent).toEqual([1]);
    expect(queue.pending).toHaveLength(1);
    answer(queue, 1);
    expect(sent).toEqual([1, 2]);
    answer(queue, 2);
    expect(queue.pending).toHaveLength(0);
  });
});
