import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../src/worker/semaphore.ts';

/** Lets every pending promise callback run (real setImmediate: runs after the microtask queue drains). */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Records settlement of a promise so a test can look without awaiting it. */
function track<T>(promise: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}

describe('Semaphore', () => {
  it('hands out as many permits as it was given, then makes callers wait', async () => {
    const slots = new Semaphore(2);
    await slots.acquire();
    await slots.acquire();
    const third = track(slots.acquire());
    await flush();
    expect(third.settled).toBe(false);
    expect(slots.waiting).toBe(1);

    slots.release();
    await flush();
    expect(third.settled).toBe(true);
    expect(third.error).toBeUndefined();
    expect(slots.waiting).toBe(0);
  });

  it('a release without waiters returns the permit for a later caller', async () => {
    const slots = new Semaphore(1);
    await slots.acquire();
    slots.release();
    const next = track(slots.acquire());
    await flush();
    expect(next.settled).toBe(true);
    const after = track(slots.acquire());
    await flush();
    expect(after.settled).toBe(false);
    slots.release();
    await flush();
    expect(after.settled).toBe(true);
  });

  it('wakes waiters in the order they started waiting (FIFO), one per release', async () => {
    const slots = new Semaphore(1);
    await slots.acquire();
    const order: number[] = [];
    const waiters = [0, 1, 2, 3].map((i) => slots.acquire().then(() => order.push(i)));
    await flush();
    expect(slots.waiting).toBe(4);

    slots.release();
    await flush();
    expect(order).toEqual([0]);
    slots.release();
    slots.release();
    await flush();
    expect(order).toEqual([0, 1, 2]);
    slots.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('an aborted waiter is rejected with the abort reason and removed from the queue', async () => {
    const slots = new Semaphore(1);
    await slots.acquire();
    const controller = new AbortController();
    const aborted = track(slots.acquire(controller.signal));
    const order: string[] = [];
    const next = slots.acquire().then(() => order.push('next'));
    await flush();
    expect(slots.waiting).toBe(2);

    const reason = new Error('rebalance');
    controller.abort(reason);
    await flush();
    expect(aborted.settled).toBe(true);
    expect(aborted.error).toBe(reason);
    expect(slots.waiting).toBe(1);

    // The permit goes to the remaining waiter, not to the one that gave up.
    slots.release();
    await next;
    expect(order).toEqual(['next']);
    expect(slots.waiting).toBe(0);
  });

  it('an already-aborted signal rejects at once and takes no permit', async () => {
    const slots = new Semaphore(1);
    const reason = new Error('shutdown');
    await expect(slots.acquire(AbortSignal.abort(reason))).rejects.toBe(reason);
    const free = track(slots.acquire());
    await flush();
    expect(free.settled).toBe(true);
    expect(free.error).toBeUndefined();
  });
});
