import { describe, expect, it } from 'vitest';
import { coalesced } from '../../src/kafka/coalesced-admin.ts';

describe('coalesced reads', () => {
  it('shares one call among the requests for the same key made before it starts; a later request gets a call of its own', async () => {
    const calls: string[] = [];
    const pending: (() => void)[] = [];
    const read = coalesced(async (key: string) => {
      calls.push(key);
      const n = calls.length;
      await new Promise<void>((resolve) => pending.push(resolve));
      return `${key}#${n}`;
    }, 5);
    const first = read('ledger');
    const second = read('ledger');
    const other = read('commands');
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual(['ledger', 'commands']);
    // The call for 'ledger' has started: a request now must not join it (its caller's fence may be later).
    const late = read('ledger');
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).toEqual(['ledger', 'commands', 'ledger']);
    for (const resolve of pending) resolve();
    expect(await first).toBe('ledger#1');
    expect(await second).toBe('ledger#1');
    expect(await other).toBe('commands#2');
    expect(await late).toBe('ledger#3');
  });
});
