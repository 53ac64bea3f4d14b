import { describe, expect, it } from 'vitest';
import { DedupWindow } from '../../../src/worker/lane/dedup-window.ts';

describe('DedupWindow', () => {
  it('holds at most `capacity` ids, forgetting the oldest first', () => {
    const window = new DedupWindow(3);
    for (let i = 0; i < 5; i++) window.remember(`id-${i}`, BigInt(i));
    expect(window.size).toBe(3);
    expect(window.firstOffset('id-0')).toBeUndefined();
    expect(window.firstOffset('id-1')).toBeUndefined();
    expect(window.firstOffset('id-2')).toBe(2n);
    expect(window.firstOffset('id-4')).toBe(4n);
  });

  it('keeps the first record of a commandId: a repeat neither replaces nor refreshes it', () => {
    const window = new DedupWindow(2);
    window.remember('a', 1n);
    window.remember('b', 2n);
    window.remember('a', 3n);
    expect(window.firstOffset('a')).toBe(1n);
    // 'a' was not moved to the newest end by its repeat, so it is the one evicted next.
    window.remember('c', 4n);
    expect(window.firstOffset('a')).toBeUndefined();
    expect(window.firstOffset('b')).toBe(2n);
  });

  it('forgets an id only for the record that claimed it', () => {
    const window = new DedupWindow(10);
    window.remember('a', 5n);
    window.forget('a', 6n);
    expect(window.firstOffset('a')).toBe(5n);
    window.forget('a', 5n);
    expect(window.firstOffset('a')).toBeUndefined();
    window.remember('a', 7n);
    expect(window.firstOffset('a')).toBe(7n);
  });

  it('remembers nothing with capacity 0 (off)', () => {
    const window = new DedupWindow(0);
    window.remember('a', 1n);
    expect(window.size).toBe(0);
    expect(window.firstOffset('a')).toBeUndefined();
  });
});
