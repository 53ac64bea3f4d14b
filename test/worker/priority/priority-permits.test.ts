import { describe, expect, it } from 'vitest';
import { PriorityPermits } from '../../../src/worker/priority/priority-permits.ts';

/** Lets the promise callbacks of granted permits run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('PriorityPermits', () => {
  it('takes a free permit at once, whatever the priority', async () => {
    const permits = new PriorityPermits(2, 0.1);
    await permits.for('normal').acquire();
    await permits.for('high').acquire();
    expect(permits.available).toBe(0);
  });

  it('gives a freed permit to a waiting high caller before normal callers who waited longer', async () => {
    const permits = new PriorityPermits(1, 0.1);
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
    const permits = new PriorityPermits(1, 0.25);
    const normal = permits.for('normal');
    const high = permits.for('high');
    await high.acquire();
    let normalGranted = 0;
    let highGranted = 0;
    const normals = Array.from({ length: 5 }, () => normal.acquire().then(() => (normalGranted += 1)));
    for (let round = 0; round < 20; round += 1) {
      // Always a high caller waiting, as under a stream of codes.
      void high.acquire().then(() => (highGranted += 1));
      permits.for('high').release();
      await settle();
    }
    // A quarter of the 20 grants: the 4th, 8th, … went to normal.
    expect(normalGranted).toBe(5);
    expect(highGranted).toBe(15);
    expect(normals).toHaveLength(5);
  });

  it('a waiter that gives up leaves the queue and takes nothing', async () => {
    const permits = new PriorityPermits(1, 0.1);
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
});
