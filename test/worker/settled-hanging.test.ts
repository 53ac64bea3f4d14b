import { describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../src/worker/ledger-checkpoint.ts';
import { SettledHanging } from '../../src/worker/settled-hanging.ts';

describe('SettledHanging: where a claim goes on after a hanging transaction this process ended', () => {
  const committed: Checkpoint = { next: 18n, open: [{ offset: 18n, commandId: 'c18', at: 1 }] };
  // The ended transaction's mark of c21 (its command possibly sent), kept by reconcileHanging.
  const goOn: Checkpoint = { next: 18n, open: [...committed.open, { offset: 21n, commandId: 'c21', at: 2 }] };

  it('a later read that finds the same committed checkpoint goes on from where the first claim did', () => {
    const memory = new SettledHanging();
    memory.remember(3, committed, goOn);
    // Read again, decoded afresh (another object): equal by content.
    expect(memory.goOnFrom(3, { next: 18n, open: [{ offset: 18n, commandId: 'c18', at: 1 }] })).toBe(goOn);
    expect(memory.goOnFrom(3, goOn)).toBe(goOn);
    // Other partitions are not touched.
    expect(memory.goOnFrom(4, committed)).toBe(committed);
  });

  it('a newer committed checkpoint is taken, and the memory dropped', () => {
    const memory = new SettledHanging();
    memory.remember(3, committed, goOn);
    const newer: Checkpoint = { next: 22n, open: [] };
    expect(memory.goOnFrom(3, newer)).toBe(newer);
    expect(memory.goOnFrom(3, committed)).toBe(committed);
  });

  it('with no committed checkpoint beside it, a read that finds none goes on from the memory', () => {
    const memory = new SettledHanging();
    memory.remember(0, undefined, goOn);
    expect(memory.goOnFrom(0, undefined)).toBe(goOn);
    expect(memory.goOnFrom(0, committed)).toBe(committed);
  });
});
