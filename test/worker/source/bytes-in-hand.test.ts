import { describe, expect, it } from 'vitest';
import { BytesInHand } from '../../../src/worker/source/bytes-in-hand.ts';

describe('BytesInHand', () => {
  it('takes bytes up to the limit and refuses what would go over', () => {
    const budget = new BytesInHand(100);
    expect(budget.tryTake(60)).toBe(true);
    expect(budget.tryTake(40)).toBe(true);
    expect(budget.tryTake(1)).toBe(false);
    expect(budget.used).toBe(100);
  });

  it('lets one record larger than the whole budget in when nothing is held', () => {
    const budget = new BytesInHand(100);
    expect(budget.tryTake(1_000)).toBe(true);
    expect(budget.tryTake(1)).toBe(false);
    budget.free(1_000);
    expect(budget.used).toBe(0);
  });

  it('wakes the waiting once half the budget is free, each once', () => {
    const budget = new BytesInHand(100);
    budget.tryTake(100);
    let woken = 0;
    budget.whenFree(() => (woken += 1));
    budget.free(20);
    expect(woken).toBe(0);
    budget.free(40);
    expect(woken).toBe(1);
    budget.free(40);
    expect(woken).toBe(1);
  });

  it('a cancelled waiter is not woken', () => {
    const budget = new BytesInHand(10);
    budget.tryTake(10);
    let woken = false;
    const wake = (): void => void (woken = true);
    budget.whenFree(wake);
    budget.cancel(wake);
    budget.free(10);
    expect(woken).toBe(false);
  });
});
