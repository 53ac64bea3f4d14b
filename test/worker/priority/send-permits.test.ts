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

  it("the marks ahead follow what the lanes measure: the slots' release rate times a mark's commit time; a step down waits for a permit to come back", async () => {
    const ahead: number[] = [];
    let now = 0;
    const permits = new SendPermits({ maxInFlight: 64, onMarksAhead: (n) => ahead.push(n), now: () => now });
    const { slots, markPermits } = permits.for('normal');
    // 64 calls under way, a call ending every millisecond for three seconds, each slot taken again.
    for (let i = 0; i < 64; i += 1) await slots.acquire();
    for (let i = 0; i < 3_000; i += 1) {
      now += 1;
      slots.release();
      await slots.acquire();
    }
    // Marks take 20 ms to commit: 1/ms × 20 × 2 + 4 ≈ 44 marks ahead.
    for (let i = 0; i < 50; i += 1) markPermits.committed?.(20);
    expect(permits.marksAhead).toBeGreaterThanOrEqual(40);
    expect(permits.marksAhead).toBeLessThanOrEqual(45);
    const high = permits.marksAhead;
    for (let i = 0; i < high; i += 1) await markPermits.acquire();
    // Faster marks: fewer needed, but every permit is held: none is taken back.
    for (let i = 0; i < 100; i += 1) markPermits.committed?.(2);
    expect(permits.marksAhead).toBe(high);
    markPermits.release();
    expect(permits.marksAhead).toBe(high - 1);
    let granted = false;
    void markPermits.acquire().then(() => (granted = true));
    await flush();
    expect(granted).toBe(false); // the permit went to the step down, not to the record waiting
    expect(ahead.at(-1)).toBe(high - 1);
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
