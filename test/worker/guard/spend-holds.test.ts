import { describe, expect, it } from 'vitest';
import type { MessageReport } from '../../../src/provider/types.ts';
import { SpendHolds, SpendTicket, type SpendPause } from '../../../src/worker/guard/spend-holds.ts';

const HOUR = 3_600_000;
const fp = { operation: 'sms.message.send' as const, regions: ['GB'], costUnits: 1 };
const charged = (price: string): MessageReport[] => [
  { id: 'm', to: '+1', regionCode: 'GB', countryCode: '44', messageCount: 1, status: 'Sent', upstream: 'u', price },
];

function holds() {
  const clock = { now: 0 };
  const pauses: (SpendPause | undefined)[] = [];
  const spent: string[] = [];
  const h = new SpendHolds({
    settings: { caps: { hour: '1', day: undefined }, hourMs: HOUR },
    now: () => clock.now,
    observer: { onPause: (p) => pauses.push(p), onSpend: (s) => spent.push(String(s.hour.spent)) },
  });
  return { h, clock, pauses, spent };
}

describe('SpendHolds', () => {
  it('a ticket taken again without a call (another pass) gives back what it reserved first, so nothing stays reserved for good', async () => {
    const { h } = holds();
    const signal = new AbortController().signal;
    const ticket = new SpendTicket(h);
    // No price known yet: one send at a time. The first pass reserves; the gate sends it round again.
    await ticket.take(fp, signal, null);
    await ticket.take(fp, signal, null);
    ticket.settle(charged('0.100000'));
    // Had the first reservation stayed, another send would wait for a send in flight that is not there.
    const other = new SpendTicket(h);
    const next = await Promise.race([other.take(fp, signal, null).then(() => 'went'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 50))]);
    expect(next).toBe('went');
  });

  it('at the cap a send waits (paused once, reported), and goes when the window allows; nothing is failed', async () => {
    const { h, clock, pauses, spent } = holds();
    const estimate = await h.take(fp, new AbortController().signal, null);
    expect(estimate).toBe(0n);
    h.settle(0n, charged('1.000000'));
    expect(spent).toEqual(['1000000']);

    const waiting = h.take(fp, new AbortController().signal, null);
    await Promise.resolve();
    expect(h.paused).toBe(true);
    expect(pauses).toEqual([{ window: 'hour', spent: 1_000_000n, cap: 1_000_000n, untilMs: HOUR + 60_000 }]);
    // The window moves on (injected clock); any change wakes the waiter, which looks again.
    clock.now = HOUR + 60_000;
    h.setShare(1, 1);
    expect(await waiting).toBe(1_000_000n);
    expect(h.paused).toBe(false);
    expect(pauses).toEqual([expect.objectContaining({ window: 'hour' }), undefined]);
  });

  it('before any price is known the first sends go one at a time, which is no pause at a cap: nothing reported, not paused', async () => {
    const { h, pauses } = holds();
    const first = await h.take(fp, new AbortController().signal, null);
    expect(first).toBe(0n);
    let secondGone = false;
    const second = h.take(fp, new AbortController().signal, null).then((estimate) => {
      secondGone = true;
      return estimate;
    });
    await Promise.resolve();
    expect(secondGone).toBe(false); // it waits for the first answer's price
    expect(h.paused).toBe(false);
    expect(pauses).toEqual([]);
    h.settle(first as bigint, charged('0.010000'));
    expect(await second).toBe(10_000n);
    expect(pauses).toEqual([]);
  });

  it('a waiting send gives up when its command expires or its signal is aborted (consumed again later)', async () => {
    const { h, clock } = holds();
    const first = await h.take(fp, new AbortController().signal, null);
    h.settle(first === 'expired' ? 0n : first, charged('1.000000'));
    const expiring = h.take(fp, new AbortController().signal, 5_000);
    clock.now = 5_000;
    h.setShare(1, 1);
    expect(await expiring).toBe('expired');
    const abort = new AbortController();
    const aborted = h.take(fp, abort.signal, null);
    abort.abort(new Error('rebalance'));
    await expect(aborted).rejects.toThrow('rebalance');
  });
});
