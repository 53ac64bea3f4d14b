import { describe, expect, it } from 'vitest';
import { PriorityPermits } from '../../../src/worker/priority/priority-permits.ts';

/** Lets the promise callbacks of granted permits run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('PriorityPermits', () => {
  it('takes a free permit at once, whatever the priority', async () => {
    const permits = new PriorityPermits(2, { minShare: 0.1 });
    await permits.for('normal').acquire();
    await permits.for('high').acquire();
    expect(permits.available).toBe(0);
  });

  it('gives a freed permit to a waiting high caller before normal callers who waited longer', async () => {
    const permits = new PriorityPermits(1, { minShare: 0.1 });
    const normal = permits.for('normal');
    const high = permits.for('high');
    await normal.acquire();
    const order: string[] = [];
    const waiting = [
      normal.acquire().then(() => order.push('normal-1')),
      normal.acquire().then(() => order.push('normal-2')),
      high.acquire().then(() => order.push('high-1')),
    ];
    expect(normal.waiting).toBe(2);
    expect(high.waiting).toBe(1);
    normal.release();
    await settle();
    expect(order).toEqual(['high-1']);
    high.release();
    normal.release();
    await Promise.all(waiting);
    expect(order).toEqual(['high-1', 'normal-1', 'normal-2']);
  });

  it('keeps the normal share under a steady stream of high callers', async () => {
    const permits = new PriorityPermits(1, { minShare: 0.25 });
    const normal = permits.for('normal');
    const high = permits.for('high');
    await high.acquire();
    let holder: 'high' | 'normal' = 'high';
    let normalGranted = 0;
    let highGranted = 0;
    for (let i = 0; i < 5; i += 1)
      void normal.acquire().then(() => {
        normalGranted += 1;
        holder = 'normal';
      });
    for (let round = 0; round < 20; round += 1) {
      // Always a high caller waiting, as under a stream of codes.
      void high.acquire().then(() => {
        highGranted += 1;
        holder = 'high';
      });
      permits.for(holder).release();
      await settle();
    }
    // A quarter of the 20 grants: the 4th, 8th, … went to normal.
    expect(normalGranted).toBe(5);
    expect(highGranted).toBe(15);
  });

  it('a waiter that gives up leaves the queue and takes nothing', async () => {
    const permits = new PriorityPermits(1, { minShare: 0.1 });
    const high = permits.for('high');
    await high.acquire();
    const controller = new AbortController();
    const gaveUp = high.acquire(controller.signal);
    controller.abort(new Error('rebalance'));
    await expect(gaveUp).rejects.toThrow('rebalance');
    expect(high.waiting).toBe(0);
    high.release();
    expect(permits.available).toBe(1);
  });

  it('refuses at once when the signal was already aborted', async () => {
    const permits = new PriorityPermits(1);
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    await expect(permits.for('normal').acquire(controller.signal)).rejects.toThrow('stopped');
    expect(permits.available).toBe(1);
  });

  it('normal callers never hold the reserved permits: a code finds one free while bulk commands hold all theirs', async () => {
    const permits = new PriorityPermits(4, { minShare: 0.5, reservedForHigh: 1 });
    const normal = permits.for('normal');
    const high = permits.for('high');
    await Promise.all([normal.acquire(), normal.acquire(), normal.acquire()]);
    let fourth = false;
    void normal.acquire().then(() => (fourth = true));
    await settle();
    expect(fourth).toBe(false);
    expect(permits.available).toBe(1);
    await high.acquire();
    expect(permits.available).toBe(0);
    // A bulk release goes to the waiting bulk caller (still within its cap).
    normal.release();
    await settle();
    expect(fourth).toBe(true);
    // A code's release with only bulk waiting keeps the reserve free.
    void normal.acquire();
    high.release();
    await settle();
    expect(permits.available).toBe(1);
    expect(normal.waiting).toBe(1);
  });

  it('refuses a reserve that leaves the normal priority nothing', () => {
    expect(() => new PriorityPermits(4, { reservedForHigh: 4 })).toThrow(RangeError);
    expect(() => new PriorityPermits(4, { reservedForHigh: 1.5 })).toThrow(RangeError);
  });
});
