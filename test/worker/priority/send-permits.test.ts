import { describe, expect, it } from 'vitest';
import { SendPermits } from '../../../src/worker/priority/send-permits.ts';

/** Lets pending grants settle. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SendPermits', () => {
  it('gives as many mark permits as free slots plus the marks ahead: with every slot busy, only the marks ahead wait marked', async () => {
    const ahead: number[] = [];
    const permits = new SendPermits({ maxInFlight: 4, onMarksAhead: (n) => ahead.push(n) });
    const { slots, markPermits } = permits.for('normal');
    expect(permits.markPermits).toBe(5); // 4 free slots + 1 ahead
    for (let i = 0; i < 4; i += 1) await slots.acquire();
    expect(permits.markPermits).toBe(1);
    await markPermits.acquire();
    let second = false;
    void markPermits.acquire().then(() => (second = true));
    await flush();
    expect(second).toBe(false);
    expect(ahead).toEqual([1]);
  });

  it('a slot freed while records wait for a mark permit grows the marks ahead, and grants the waiter', async () => {
    const ahead: number[] = [];
    const permits = new SendPermits({ maxInFlight: 2, onMarksAhead: (n) => ahead.push(n) });
    const { slots, markPermits } = permits.for('normal');
    await slots.acquire();
    await slots.acquire();
    await markPermits.acquire(); // the one mark ahead
    let granted = 0;
    for (let i = 0; i < 3; i += 1) void markPermits.acquire().then(() => (granted += 1));
    await flush();
    expect(granted).toBe(0);
    slots.release(); // a free slot, and marks waiting: too few marks ahead
    await flush();
    expect(permits.marksAhead).toBe(2);
    expect(granted).toBe(2); // one for the free slot, one for the mark ahead added
    expect(ahead).toEqual([1, 2]);
  });

  it('marks that stay queued for a slot shrink the marks ahead as their permits come back, and never take a permit back', async () => {
    const ahead: number[] = [];
    let now = 0;
    // MAX_IN_FLIGHT 16: 4 marks ahead at first, a buffer of 1.
    const permits = new SendPermits({ maxInFlight: 16, onMarksAhead: (n) => ahead.push(n), now: () => now });
    const { slots, markPermits } = permits.for('normal');
    for (let i = 0; i < 16; i += 1) await slots.acquire();
    for (let i = 0; i < 4; i += 1) await markPermits.acquire();
    // Their marks commit and they queue for a slot, and stay queued past the window.
    const queued = [slots.acquire(), slots.acquire()];
    now = 150;
    queued.push(slots.acquire(), slots.acquire());
    await flush();
    expect(permits.marksAhead).toBe(4); // every permit is held: none is taken back
    // A slot frees: the first queued record takes it and gives its permit back, which the shrink takes.
    slots.release();
    await queued[0];
    markPermits.release();
    expect(permits.marksAhead).toBe(3);
    expect(permits.markPermits).toBe(3);
    let granted = false;
    void markPermits.acquire().then(() => (granted = true));
    await flush();
    expect(granted).toBe(false); // the permit went to the shrink, not to the record waiting
    expect(ahead).toEqual([4, 3]);
  });

  it('MARKS_AHEAD as a number keeps the marks ahead there', async () => {
    const permits = new SendPermits({ maxInFlight: 2, marksAhead: 4 });
    const { slots, markPermits } = permits.for('normal');
    await slots.acquire();
    await slots.acquire();
    for (let i = 0; i < 4; i += 1) await markPermits.acquire();
    void markPermits.acquire();
    slots.release();
    await flush();
    expect(permits.marksAhead).toBe(4);
  });

  it('with a priority topic, codes find mark permits bulk commands cannot take', async () => {
    const permits = new SendPermits({ maxInFlight: 8, priorities: { normalMinShare: 0.1 } });
    const bulk = permits.for('normal');
    const codes = permits.for('high');
    let bulkGranted = 0;
    for (let i = 0; i < 20; i += 1) void bulk.markPermits.acquire().then(() => (bulkGranted += 1));
    await flush();
    expect(bulkGranted).toBeLessThan(permits.markPermits);
    await codes.markPermits.acquire();
  });
});
