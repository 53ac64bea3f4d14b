import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../src/worker/offset-tracker.ts';

function registered(offsets: readonly string[]): OffsetTracker<string> {
  const tracker = new OffsetTracker<string>();
  for (const offset of offsets) tracker.register(offset);
  return tracker;
}

describe('OffsetTracker', () => {
  it('commits only the contiguous finished prefix when records complete out of order', () => {
    const tracker = registered(['10', '11', '12', '13', '14']);
    tracker.complete('12', 'r12');
    tracker.complete('11', 'r11');
    expect(tracker.takePrefix()).toBeUndefined();
    expect(tracker.pending).toBe(5);

    tracker.complete('10', 'r10');
    expect(tracker.takePrefix()).toEqual({ values: ['r10', 'r11', 'r12'], commitOffset: '13' });
    expect(tracker.pending).toBe(2);
    // Nothing new finished: nothing more to commit.
    expect(tracker.takePrefix()).toBeUndefined();

    tracker.complete('14', 'r14');
    expect(tracker.takePrefix()).toBeUndefined();
    tracker.complete('13', 'r13');
    expect(tracker.takePrefix()).toEqual({ values: ['r13', 'r14'], commitOffset: '15' });
    expect(tracker.pending).toBe(0);
  });

  it('follows registration order, not numeric order, and tolerates gaps in offsets (compacted topics)', () => {
    const tracker = registered(['5', '9', '100']);
    tracker.complete('100', 'c');
    tracker.complete('5', 'a');
    expect(tracker.takePrefix()).toEqual({ values: ['a'], commitOffset: '6' });
    tracker.complete('9', 'b');
    expect(tracker.takePrefix()).toEqual({ values: ['b', 'c'], commitOffset: '101' });
  });

  it('gives the commit offset as last + 1 in a string, exact beyond 2^53', () => {
    const beyond = '9007199254740993'; // 2^53 + 1: not representable as a double
    const tracker = registered([beyond, '9223372036854775806']);
    tracker.complete(beyond, 'x');
    expect(tracker.takePrefix()).toEqual({ values: ['x'], commitOffset: '9007199254740994' });
    tracker.complete('9223372036854775806', 'y');
    expect(tracker.takePrefix()?.commitOffset).toBe('9223372036854775807');
  });

  it('counts registered records not yet taken as pending', () => {
    const tracker = new OffsetTracker<number>();
    expect(tracker.pending).toBe(0);
    tracker.register('0');
    tracker.register('1');
    tracker.register('2');
    expect(tracker.pending).toBe(3);
    // Completing alone does not change pending; taking the prefix does.
    tracker.complete('1', 1);
    expect(tracker.pending).toBe(3);
    tracker.complete('0', 0);
    tracker.takePrefix();
    expect(tracker.pending).toBe(1);
  });

  it('keeps working across compaction after many records, with a gap held open over the boundary', () => {
    const tracker = new OffsetTracker<number>();
    const total = 5_000;
    for (let i = 0; i < total; i += 1) tracker.register(String(i));
    const taken: number[] = [];
    const take = (): string | undefined => {
      const prefix = tracker.takePrefix();
      if (prefix !== undefined) taken.push(...prefix.values);
      return prefix?.commitOffset;
    };

    // Everything up to 2999 finishes except 1500, which holds the prefix.
    for (let i = 0; i < 3_000; i += 1) if (i !== 1_500) tracker.complete(String(i), i);
    expect(take()).toBe('1500');
    expect(tracker.pending).toBe(total - 1_500);

    tracker.complete('1500', 1_500);
    expect(take()).toBe('3000');
    expect(tracker.pending).toBe(total - 3_000);

    // The rest in reverse order, taking a prefix after each completion (nothing until 3000 lands).
    for (let i = total - 1; i >= 3_000; i -= 1) {
      tracker.complete(String(i), i);
      const offset = take();
      expect(offset).toBe(i === 3_000 ? String(total) : undefined);
    }
    expect(tracker.pending).toBe(0);
    expect(taken).toEqual(Array.from({ length: total }, (_, i) => i));

    // Still usable after compaction.
    tracker.register('5000');
    tracker.complete('5000', 5_000);
    expect(tracker.takePrefix()).toEqual({ values: [5_000], commitOffset: '5001' });
  });
});
