import { describe, expect, it } from 'vitest';
import { warmSteps } from '../../../src/worker/source/warm-up.ts';

describe('warmSteps', () => {
  it('runs every step together, times each, and reports a failed one without throwing', async () => {
    let now = 0;
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const report = warmSteps(
      {
        slow: async () => {
          started.push('slow');
          await gate;
          now += 40;
        },
        broken: async () => {
          started.push('broken');
          throw new Error('no leader for ledger[0]');
        },
      },
      () => now,
    );
    // Both started before the slow one finished: together, not one after the other.
    await Promise.resolve();
    expect(started).toEqual(['slow', 'broken']);
    release();
    expect(await report).toEqual({ slow: 40, broken: 'failed: no leader for ledger[0]' });
  });
});
