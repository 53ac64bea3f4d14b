import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { completeWindow, type WindowRecord } from '../../../src/worker/lane/repeat-window.ts';

/** What recentCommandIds reads from a log: the records of [max(low, start − count), start), in offset order. */
function directRead(log: readonly WindowRecord[], low: bigint, start: bigint, count: number): WindowRecord[] {
  const from = start - BigInt(count) > low ? start - BigInt(count) : low;
  return log.filter((r) => r.offset >= from && r.offset < start);
}

const logOf = (length: number): WindowRecord[] => Array.from({ length }, (_, i) => ({ offset: BigInt(i), commandId: `id-${i}` }));

describe('completeWindow: an early read of the repeat window completed once the start is known', () => {
  it('keeps the early records still in the window and reads only those committed since', () => {
    const log = logOf(100);
    const early = { upTo: 90n, records: directRead(log, 0n, 90n, 20) };
    const completion = completeWindow(early, 95n, 20);
    expect(completion?.readCount).toBe(5);
    expect(completion?.keep.map((r) => r.offset)).toEqual(Array.from({ length: 15 }, (_, i) => BigInt(75 + i)));
  });

  it('reads nothing more when the start is where the early read ended', () => {
    const log = logOf(50);
    expect(completeWindow({ upTo: 50n, records: directRead(log, 0n, 50n, 10) }, 50n, 10)).toEqual({ keep: directRead(log, 0n, 50n, 10), readCount: 0 });
  });

  it('cannot help when the start went back (an offset reset) or moved a whole window past it, or without an early read', () => {
    const log = logOf(100);
    const early = { upTo: 60n, records: directRead(log, 0n, 60n, 10) };
    expect(completeWindow(early, 59n, 10)).toBeUndefined();
    expect(completeWindow(early, 70n, 10)).toBeUndefined();
    expect(completeWindow(undefined, 70n, 10)).toBeUndefined();
    expect(completeWindow(early, 65n, 0)).toBeUndefined();
  });

  it('gives exactly the window a read at the start would give, for any log, low offset, early end and start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 1, max: 120 }),
        fc.func(fc.boolean()),
        (a, b, c, lowAt, count, readable) => {
          // Some records are not readable commands (dead letters): the reads skip them.
          const log = logOf(300).filter((r) => readable(Number(r.offset)));
          const [upTo, start] = a <= b ? [BigInt(a), BigInt(b)] : [BigInt(b), BigInt(a)];
          const low = BigInt(Math.min(lowAt, c, a, b));
          const early = { upTo, records: directRead(log, low, upTo, count) };
          const completion = completeWindow(early, start, count);
          const window =
            completion === undefined ? directRead(log, low, start, count) : [...completion.keep, ...directRead(log, low, start, completion.readCount)];
          expect(window).toEqual(directRead(log, low, start, count));
          // The completed window never holds more than `count` records.
          expect(window.length).toBeLessThanOrEqual(count);
        },
      ),
      { numRuns: 500 },
    );
  });
});
